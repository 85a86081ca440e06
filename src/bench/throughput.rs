//! Comparison throughput beside the memory-read rate, on an in-memory f32
//! pair (an xorshift oracle and an actual a few ULPs off), as in
//! `cargo bench -p parity-compare` but from the installed binary.

use super::Timings;
use parity_compare::baseline::par_sum_f32_bytes;
use parity_compare::{compare, CompareOptions, Simd};
use parity_tensor::{ByteLengthMismatch, Tensor};
use std::hint::black_box;
use std::time::Duration;

/// One measured case.
#[derive(Clone, Debug)]
pub struct ThroughputRow {
    /// What was timed.
    pub case: String,
    /// Bytes of input read per run (both tensors).
    pub bytes: u64,
    /// The runs.
    pub timings: Timings,
}

impl ThroughputRow {
    /// GB/s (10^9 bytes) at a given time.
    pub fn gbs(&self, time: Duration) -> f64 {
        self.bytes as f64 / time.as_secs_f64().max(1e-12) / 1e9
    }
}

/// The pair of `elems` f32 elements a side
/// ([`parity_compare::baseline::near_pair`]), as tensors.
pub fn make_pair(elems: usize) -> Result<(Tensor, Tensor), ByteLengthMismatch> {
    let (a, e) = parity_compare::baseline::near_pair(elems);
    Ok((
        Tensor::from_f32(vec![elems], &a)?,
        Tensor::from_f32(vec![elems], &e)?,
    ))
}

/// Times the memory read (all threads) and `compare` (parallel and serial,
/// on the widest vector path the CPU has; and parallel on the AVX2 path
/// too when that one is AVX-512) on `actual` against `expected`, `reps`
/// times each, interleaved so that a change in the machine's load hits
/// every case alike.
pub fn measure(actual: &Tensor, expected: &Tensor, reps: usize) -> Vec<ThroughputRow> {
    let bytes = (actual.bytes().len() + expected.bytes().len()) as u64;
    let read = || {
        let (a, e) = (black_box(actual.bytes()), black_box(expected.bytes()));
        black_box(par_sum_f32_bytes(a) + par_sum_f32_bytes(e));
    };
    let cmp = |parallel: bool, simd: Simd| {
        move || {
            let opts = CompareOptions {
                parallel,
                simd,
                ..CompareOptions::default()
            };
            black_box(compare(black_box(actual), black_box(expected), None, &opts).ok());
        }
    };
    let best = Simd::available();
    let mut cases = vec![(true, best), (false, best)];
    if best == Simd::Avx512 {
        cases.push((true, Simd::Avx2));
    }
    let row = |case: String| ThroughputRow {
        case,
        bytes,
        timings: Timings::default(),
    };
    let mut rows = vec![row("memory read (sum, all threads)".to_string())];
    for &(parallel, simd) in &cases {
        let how = if parallel { "parallel" } else { "serial" };
        rows.push(row(format!("compare ({how}, {})", simd.label())));
    }
    // Touch everything once so that no case pays first-touch page faults.
    read();
    for _ in 0..reps.max(1) {
        rows[0].timings.time(read);
        for (r, &(parallel, simd)) in rows[1..].iter_mut().zip(&cases) {
            r.timings.time(cmp(parallel, simd));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pair_is_a_few_ulps_apart_and_measured_per_case() {
        let (a, e) = make_pair(1000).unwrap();
        let m = compare(&a, &e, None, &CompareOptions::default()).unwrap();
        assert_eq!(m.count, 1000);
        assert!(m.max_ulp.unwrap() <= 3 && m.max_ulp.unwrap() >= 1);
        let rows = measure(&a, &e, 2);
        let best = Simd::available();
        assert_eq!(rows.len(), 3 + (best == Simd::Avx512) as usize);
        assert_eq!(
            rows[1].case,
            format!("compare (parallel, {})", best.label())
        );
        for r in &rows {
            assert_eq!(r.bytes, 8000);
            assert_eq!(r.timings.runs.len(), 2);
        }
    }
}
