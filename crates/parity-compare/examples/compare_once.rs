//! One serial `compare` of the benchmark pair, for instruction counts:
//! `valgrind --tool=callgrind --toggle-collect='parity_compare::metrics::compare*'
//! target/debug/examples/compare_once [ELEMS] [far]` counts the instructions
//! of that one call (repeatable on a busy machine, unlike a wall time);
//! divide by ELEMS for instructions per element. `far` spreads the actual
//! 0 to 255 ULPs from the oracle instead of 0 to 3, so most distances miss
//! the histogram's vector path. A third argument REPS times that many more
//! serial runs and prints the fastest (a quick A/B of the kernel; `parity
//! bench` is the full table); a fourth, `par`, makes those runs and the
//! read they are set beside parallel. docs/performance.md has the figures.

use parity_compare::baseline::{near_pair, par_sum_f32_bytes, sum_f32_bytes};
use parity_compare::{compare, CompareOptions};
use parity_tensor::Tensor;
use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let elems = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1usize << 20);
    let far = args.next().is_some_and(|s| s == "far");
    let reps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let parallel = args.next().is_some_and(|s| s == "par");
    let (mut a, e) = near_pair(elems);
    if far {
        for (i, (x, y)) in a.iter_mut().zip(&e).enumerate() {
            let k = (i as u32).wrapping_mul(2_654_435_761) >> 24;
            *x = f32::from_bits(y.to_bits().wrapping_add(k));
        }
    }
    let (Ok(at), Ok(et)) = (
        Tensor::from_f32(vec![elems], &a),
        Tensor::from_f32(vec![elems], &e),
    ) else {
        eprintln!("cannot build the {elems}-element pair");
        std::process::exit(2);
    };
    let opts = CompareOptions {
        parallel,
        ..CompareOptions::default()
    };
    if reps > 0 {
        // Interleaved with a serial read of both buffers, so both see the same load.
        let time = |f: &mut dyn FnMut()| {
            let t = std::time::Instant::now();
            f();
            t.elapsed().as_secs_f64()
        };
        let (mut read, mut best) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..reps {
            read = read.min(time(&mut || {
                let sum = if parallel {
                    par_sum_f32_bytes
                } else {
                    sum_f32_bytes
                };
                black_box(sum(black_box(at.bytes())) + sum(et.bytes()));
            }));
            best = best.min(time(&mut || {
                black_box(compare(black_box(&at), black_box(&et), None, &opts).ok());
            }));
        }
        println!(
            "fastest of {reps}: {:.2} ms, {:.2} ns an element, {:.2} GB/s; {} read {:.2} GB/s; ratio {:.2}",
            best * 1e3,
            best * 1e9 / elems as f64,
            (8 * elems) as f64 / best / 1e9,
            if parallel { "parallel" } else { "serial" },
            (8 * elems) as f64 / read / 1e9,
            read / best
        );
    }
    match compare(black_box(&at), black_box(&et), None, &opts) {
        Ok(m) => println!(
            "{elems} elements: max_ulp {:?}, allclose violations {}, rms {:e}",
            m.max_ulp, m.allclose_violations, m.rms
        ),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
