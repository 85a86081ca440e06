//! In-process IREE compiler and runtime for parity, with a compiled-artifact cache.
