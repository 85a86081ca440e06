//! Opens a `.safetensors` file whose JSON header is about 99 MB, to measure
//! header parsing's peak memory (run it under `/usr/bin/time -v`):
//!
//! `cargo run --release -p parity-tensor --example big_header [MB]`
//!
//! The header lists empty tensors (`shape [0]`) with long names, so the data
//! region is empty and all the cost is the header.

use std::io::Write;

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(99);
    let target = mb * 1_000_000;
    let mut header = String::with_capacity(target + 1024);
    header.push('{');
    let mut n = 0usize;
    while header.len() < target - 200 {
        if n > 0 {
            header.push(',');
        }
        header.push_str(&format!(
            r#""layer.{n:09}.attention.weight":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}"#
        ));
        n += 1;
    }
    header.push('}');
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.safetensors");
    let mut file = std::fs::File::create(&path).expect("create");
    file.write_all(&(header.len() as u64).to_le_bytes())
        .expect("write");
    file.write_all(header.as_bytes()).expect("write");
    drop(file);
    let len = header.len();
    drop(header);
    let started = std::time::Instant::now();
    let st = parity_tensor::read_safetensors(&path).expect("read");
    println!(
        "header {len} bytes, {n} tensors, {} names, parsed in {:.2} s",
        st.names().len(),
        started.elapsed().as_secs_f64()
    );
}
