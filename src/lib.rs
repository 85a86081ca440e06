//! parity: differential parity testing of IREE-compiled models against an oracle.
