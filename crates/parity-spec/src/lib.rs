//! parity-spec.
