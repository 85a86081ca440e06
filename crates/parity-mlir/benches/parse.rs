//! Parse throughput: `cargo bench -p parity-mlir --bench parse [-- FILE.mlir]`.
//!
//! Without a file it parses the committed test excerpt. Prints the best and median of
//! a few runs; it asserts nothing.

use std::time::Instant;

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_else(|| {
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/data/gemma3n_excerpt.mlir"
            )
            .to_string()
        });
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(2);
        }
    };
    let mut times = Vec::new();
    let mut summary = String::new();
    for _ in 0..15 {
        let start = Instant::now();
        let module = match parity_mlir::parse(&text) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(1);
            }
        };
        times.push(start.elapsed().as_secs_f64() * 1e3);
        let ops: usize = module.functions.iter().map(|f| f.ops.len()).sum();
        summary = format!("{} functions, {ops} top-level ops", module.functions.len());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "parse {path}: {} bytes, {summary}: best {:.2} ms, median {:.2} ms",
        text.len(),
        times[0],
        times[times.len() / 2]
    );
}
