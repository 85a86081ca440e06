//! libFuzzer entry for `parity_fuzz::safetensors` (the body lives in crates/parity-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parity_fuzz::safetensors(data));
