//! Comparison throughput against the machine's memory-read rate.
//!
//! `cargo bench -p parity-compare` prints a table: for a large f32 pair
//! (default 64M elements, 256 MiB each; override with PARITY_BENCH_ELEMS),
//! GB/s of input consumed by `compare`, serial and rayon, with and without a
//! [B, T] padding mask, next to a plain sum over the same bytes measured in
//! the same run; then the same pair on the scalar path, and as bf16 and f16
//! pairs (ULPs in their own type) on every path the CPU has, in millions of
//! elements a second. A
//! table, not an assertion: numbers depend on the machine.

use parity_compare::baseline::{par_sum_f32_bytes, sum_f32_bytes};
use parity_compare::{compare, CompareOptions, Mask, Simd};
use parity_tensor::{DType, Tensor};
use std::hint::black_box;
use std::time::Instant;

const H: usize = 64;
const T: usize = 16384;
const REPS: usize = 3;

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

fn main() {
    let elems: usize = std::env::var("PARITY_BENCH_ELEMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64 << 20);
    let b = (elems / (T * H)).max(1);
    let n = b * T * H;
    let shape = vec![b, T, H];
    // Deterministic data: an xorshift oracle and an actual a few ULPs off.
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut eb = Vec::with_capacity(n * 4);
    let mut ab = Vec::with_capacity(n * 4);
    // The same oracle as bf16 (truncated) and f16 (rounded), each with an
    // actual 0 to 3 of its own ULPs above.
    let (mut e16, mut a16) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for _ in 0..n {
        let r = next();
        let e = (r >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
        let a = f32::from_bits(e.to_bits().wrapping_add((r & 3) as u32));
        eb.extend_from_slice(&e.to_le_bytes());
        ab.extend_from_slice(&a.to_le_bytes());
        let k = ((r >> 2) & 3) as u16;
        for (i, bits) in [(e.to_bits() >> 16) as u16, half::f16::from_f32(e).to_bits()]
            .into_iter()
            .enumerate()
        {
            e16[i].extend_from_slice(&bits.to_le_bytes());
            a16[i].extend_from_slice(&bits.wrapping_add(k).to_le_bytes());
        }
    }
    let (Ok(et), Ok(at)) = (
        Tensor::from_bytes(DType::F32, shape.clone(), eb),
        Tensor::from_bytes(DType::F32, shape.clone(), ab),
    ) else {
        eprintln!("could not build {shape:?} tensors");
        return;
    };
    let padded: Vec<f64> = (0..b * T)
        .map(|i| (i % T >= T * 4 / 5) as u8 as f64)
        .collect();
    let mask = Tensor::from_f64_as(DType::Bool, vec![b, T], &padded)
        .map_err(|e| e.to_string())
        .and_then(|m| Mask::new(&m, vec![0, 1], true, &shape).map_err(|e| e.to_string()));
    let mask = match mask {
        Ok(m) => m,
        Err(e) => {
            eprintln!("mask: {e}");
            return;
        }
    };
    let bytes = (at.bytes().len() + et.bytes().len()) as f64;
    let gbs = |secs: f64| bytes / secs / 1e9;

    let mem_serial = best_of(|| {
        black_box(sum_f32_bytes(black_box(at.bytes())) + sum_f32_bytes(black_box(et.bytes())));
    });
    let mem_par = best_of(|| {
        black_box(
            par_sum_f32_bytes(black_box(at.bytes())) + par_sum_f32_bytes(black_box(et.bytes())),
        );
    });
    println!(
        "parity-compare throughput: f32 pair {shape:?} ({} MiB each), best of {REPS}, {} rayon threads",
        (n * 4) >> 20,
        rayon::current_num_threads()
    );
    println!(
        "{:<28} {:>9} {:>9} {:>12}",
        "case", "ms", "GB/s", "vs mem read"
    );
    println!(
        "{:<28} {:>9.1} {:>9.2} {:>12}",
        "memory read (sum), serial",
        mem_serial * 1e3,
        gbs(mem_serial),
        "1.00"
    );
    println!(
        "{:<28} {:>9.1} {:>9.2} {:>12}",
        "memory read (sum), rayon",
        mem_par * 1e3,
        gbs(mem_par),
        "1.00"
    );
    for (parallel, mem) in [(false, mem_serial), (true, mem_par)] {
        for masked in [false, true] {
            let opts = CompareOptions {
                parallel,
                ..CompareOptions::default()
            };
            let m = masked.then_some(&mask);
            let mut out = None;
            let secs =
                best_of(|| out = black_box(compare(black_box(&at), black_box(&et), m, &opts).ok()));
            let name = format!(
                "compare, {}{}",
                if parallel { "rayon" } else { "serial" },
                if masked { ", [B,T] mask" } else { "" }
            );
            let ratio = mem / secs;
            println!(
                "{name:<28} {:>9.1} {:>9.2} {:>12.2}",
                secs * 1e3,
                gbs(secs),
                ratio
            );
            if let Some(m) = out {
                black_box(m.max_ulp);
            }
        }
    }
    println!(
        "{:<28} {:>9} {:>9} {:>12}",
        "other paths and dtypes", "ms", "GB/s", "M elem/s"
    );
    // Tolerances as PyTorch's defaults for each dtype (the pairs are 0 to 3
    // ULPs apart, so close), so allclose violations are as rare as in the
    // f32 rows.
    let f32_tol = (1e-5, 1.3e-6);
    let mut pairs = vec![("f32, scalar path", at, et, vec![Simd::Scalar], f32_tol)];
    // Every vector path the CPU has, and the scalar kernel, for 16-bit pairs.
    let paths: Vec<Simd> = [Simd::Avx512, Simd::Avx2, Simd::Scalar]
        .into_iter()
        .filter(|&p| p <= Simd::available())
        .collect();
    for (name, dtype, i, tol) in [
        ("bf16", DType::Bf16, 0, (1e-5, 1.6e-2)),
        ("f16", DType::F16, 1, (1e-5, 1e-3)),
    ] {
        let (Ok(a), Ok(e)) = (
            Tensor::from_bytes(dtype, shape.clone(), std::mem::take(&mut a16[i])),
            Tensor::from_bytes(dtype, shape.clone(), std::mem::take(&mut e16[i])),
        ) else {
            eprintln!("could not build {dtype:?} tensors");
            return;
        };
        pairs.push((name, a, e, paths.clone(), tol));
    }
    for (name, a, e, simds, (atol, rtol)) in &pairs {
        for (simd, parallel) in simds.iter().flat_map(|&s| [(s, false), (s, true)]) {
            let opts = CompareOptions {
                parallel,
                simd,
                atol: *atol,
                rtol: *rtol,
                ..CompareOptions::default()
            };
            let mut out = None;
            let secs =
                best_of(|| out = black_box(compare(black_box(a), black_box(e), None, &opts).ok()));
            let bytes = (a.bytes().len() + e.bytes().len()) as f64;
            let path = if simds.len() > 1 { simd.label() } else { "" };
            let label = format!(
                "{name}{}{path}, {}",
                if path.is_empty() { "" } else { " " },
                if parallel { "rayon" } else { "serial" }
            );
            println!(
                "{label:<28} {:>9.1} {:>9.2} {:>12.0}",
                secs * 1e3,
                bytes / secs / 1e9,
                n as f64 / secs / 1e6
            );
            if let Some(m) = out {
                black_box(m.max_ulp);
            }
        }
    }
}
