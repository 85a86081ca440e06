//! libFuzzer entry for `parity_fuzz::spec` (the body lives in crates/parity-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parity_fuzz::spec(data));
