//! The memory-read baseline that comparison throughput is measured against
//! (`parity bench`, `cargo bench -p parity-compare`): the cheapest pass
//! that still loads every byte as f32, compiled with the kernel's settings.

use rayon::prelude::*;

/// Sum of `bytes` read as little-endian f32 (eight accumulators, so the
/// loop is bound by loads, not by one add chain), ignoring a ragged tail.
pub fn sum_f32_bytes(bytes: &[u8]) -> f64 {
    let mut acc = [0f32; 8];
    for c in bytes.chunks_exact(32) {
        for (k, x) in c.chunks_exact(4).enumerate() {
            acc[k] += f32::from_le_bytes([x[0], x[1], x[2], x[3]]);
        }
    }
    acc.iter().map(|&x| x as f64).sum()
}

/// [`sum_f32_bytes`] over 1 MiB pieces on rayon's threads.
pub fn par_sum_f32_bytes(bytes: &[u8]) -> f64 {
    bytes.par_chunks(1 << 20).map(sum_f32_bytes).sum()
}

/// A deterministic f32 pair of `n` elements: an xorshift "oracle" in
/// [-1, 1) and an "actual" 0 to 3 ULPs above it (the benchmarks' input).
pub fn near_pair(n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut actual = Vec::with_capacity(n);
    let mut expected = Vec::with_capacity(n);
    for _ in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let x = (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
        expected.push(x);
        actual.push(f32::from_bits(x.to_bits().wrapping_add((s & 3) as u32)));
    }
    (actual, expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_every_whole_group_of_eight() {
        let v: Vec<u8> = (1..=17).flat_map(|i| (i as f32).to_le_bytes()).collect();
        // 16 of the 17 values are in whole groups of eight: 1 + ... + 16.
        assert_eq!(sum_f32_bytes(&v), 136.0);
        assert_eq!(par_sum_f32_bytes(&v), 136.0);
    }

    #[test]
    fn the_near_pair_is_zero_to_three_ulps_apart() {
        let (a, e) = near_pair(1000);
        let d: Vec<u32> = a
            .iter()
            .zip(&e)
            .map(|(x, y)| x.to_bits() - y.to_bits())
            .collect();
        assert!(d.iter().all(|&u| u <= 3) && d.contains(&0) && d.contains(&3));
        assert!(e.iter().all(|x| (-1.0..1.0).contains(x)));
    }
}
