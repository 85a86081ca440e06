//! What verifying the CRC-32 of stored npz members costs.
//!
//! `cargo bench -p parity-tensor --bench npz_crc` writes a stored `.npz` with
//! one f32 member (default 16M elements = 64 MiB, a typical activation dump;
//! override with PARITY_BENCH_ELEMS) and prints, best of 5 warm runs: a plain
//! pass over the member bytes (summing them as f32, what a comparison's loads
//! cost), crc32fast over the same bytes, and `NpzArchive::get` (which now runs
//! the CRC) next to the same member read as `.npy` (no CRC). A table, not an
//! assertion: numbers depend on the machine.

use parity_tensor::{read_npy, read_npz, write_npy, write_npz, Tensor};
use std::hint::black_box;
use std::time::Instant;

const REPS: usize = 5;

/// Best wall time of `REPS` runs, in seconds.
fn best_of(mut f: impl FnMut()) -> f64 {
    (0..REPS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Sum of a buffer read as LE f32 (eight lanes so it vectorises).
fn sum_bytes(b: &[u8]) -> f32 {
    let mut acc = [0f32; 8];
    for c in b.chunks_exact(32) {
        for (k, x) in c.chunks_exact(4).enumerate() {
            acc[k] += f32::from_le_bytes([x[0], x[1], x[2], x[3]]);
        }
    }
    acc.iter().sum()
}

fn main() {
    let elems: usize = std::env::var("PARITY_BENCH_ELEMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16 << 20);
    let vals: Vec<f32> = (0..elems).map(|i| (i % 1000) as f32 * 1e-3).collect();
    let tensor = Tensor::from_f32(vec![elems], &vals).expect("tensor");
    let dir = tempfile::tempdir().expect("temp dir");
    let npz = dir.path().join("bench.npz");
    let npy = dir.path().join("bench.npy");
    write_npz(&npz, &[("x", &tensor)], false).expect("write npz");
    write_npy(&npy, &tensor).expect("write npy");
    let archive = read_npz(&npz).expect("read npz");
    let bytes = archive.get("x").expect("get").bytes().to_vec();
    let mb = bytes.len() as f64 / 1e6;

    let plain = best_of(|| {
        black_box(sum_bytes(black_box(&bytes)));
    });
    let crc = best_of(|| {
        black_box(crc32fast::hash(black_box(&bytes)));
    });
    let get_npz = best_of(|| {
        let t = archive.get("x").expect("get");
        black_box(sum_bytes(t.bytes()));
    });
    let get_npy = best_of(|| {
        let t = read_npy(&npy).expect("npy");
        black_box(sum_bytes(t.bytes()));
    });

    println!("stored npz member: {elems} f32 = {mb:.1} MB, best of {REPS} warm runs");
    println!(
        "{:<44} {:>10} {:>10} {:>14}",
        "pass", "ms", "MB/s", "% of plain"
    );
    let row = |name: &str, secs: f64| {
        println!(
            "{name:<44} {:>10.2} {:>10.0} {:>13.0}%",
            secs * 1e3,
            mb / secs,
            100.0 * secs / plain
        );
    };
    row("plain pass (sum as f32)", plain);
    row("crc32fast::hash", crc);
    row("npz get (CRC) + sum", get_npz);
    row("npy read (no CRC) + sum", get_npy);
    println!(
        "CRC overhead on a read-and-compare pass: {:+.0}% (npz get+sum vs npy read+sum)",
        100.0 * (get_npz - get_npy) / get_npy
    );
}
