//! ULP distances: how many representable values of a chosen float type lie
//! between two numbers, after rounding both to that type.

use parity_tensor::DType;
use serde::{Deserialize, Serialize};

/// The float type ULP distances are measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UlpDType {
    /// bfloat16 (8 significand bits).
    Bf16,
    /// IEEE binary16 (11 significand bits).
    F16,
    /// IEEE binary32 (24 significand bits).
    F32,
}

impl UlpDType {
    /// The ULP dtype for `dtype`, or None when `dtype` is not bf16, f16 or f32.
    pub fn from_dtype(dtype: DType) -> Option<UlpDType> {
        match dtype {
            DType::Bf16 => Some(UlpDType::Bf16),
            DType::F16 => Some(UlpDType::F16),
            DType::F32 => Some(UlpDType::F32),
            _ => None,
        }
    }

    /// The default for comparing `actual` against `expected`: the actual
    /// dtype if it is a float of at most 32 bits, f32 if any side is a float,
    /// and None (no ULP metrics) when both sides are integers or bools.
    pub fn default_for(actual: DType, expected: DType) -> Option<UlpDType> {
        if let Some(u) = UlpDType::from_dtype(actual) {
            return Some(u);
        }
        (actual.is_float() || expected.is_float()).then_some(UlpDType::F32)
    }

    /// The corresponding tensor dtype.
    pub fn dtype(self) -> DType {
        match self {
            UlpDType::Bf16 => DType::Bf16,
            UlpDType::F16 => DType::F16,
            UlpDType::F32 => DType::F32,
        }
    }

    /// Position of `x` (rounded to this dtype) on the monotonic integer line,
    /// or None for NaN. +0 and -0 both map to 0.
    #[inline]
    pub fn key(self, x: f64) -> Option<i64> {
        if x.is_nan() {
            return None;
        }
        Some(match self {
            UlpDType::F32 => key_f32(x as f32),
            UlpDType::Bf16 => key_16(round_bf16(x)),
            UlpDType::F16 => key_16(round_f16(x)),
        })
    }
}

/// ULP distance between `a` and `b` in `dtype`, after rounding both to it
/// (round to nearest, ties to even). None if either is NaN. Equal infinities
/// are 0 apart; +0 and -0 are 0 apart.
pub fn ulp_distance(a: f64, b: f64, dtype: UlpDType) -> Option<u64> {
    let ka = dtype.key(a)?;
    let kb = dtype.key(b)?;
    Some(ka.abs_diff(kb))
}

/// Sign-magnitude bits to a signed integer whose order matches the floats'.
#[inline]
pub(crate) fn key_f32(x: f32) -> i64 {
    key_f32_bits(x.to_bits())
}

/// [`key_f32`] of the f32 with bits `b`.
#[inline(always)]
pub(crate) fn key_f32_bits(b: u32) -> i64 {
    let mag = (b & 0x7fff_ffff) as i64;
    if b >> 31 == 1 {
        -mag
    } else {
        mag
    }
}

/// As [`key_f32`] for 16-bit float bit patterns (bf16 and f16 share the layout of sign and magnitude).
#[inline]
pub(crate) fn key_16(bits: u16) -> i64 {
    let mag = (bits & 0x7fff) as i64;
    if bits >> 15 == 1 {
        -mag
    } else {
        mag
    }
}

/// Rounds f64 to f32 with round-to-odd: truncate, and set the last bit when
/// inexact. Rounding that result to a format with at least two fewer
/// significand bits is then the same as rounding `x` directly, which plain
/// f64 -> f32 -> bf16 (double rounding to nearest) is not.
#[inline]
fn round_to_odd_f32(x: f64) -> f32 {
    let r = x as f32;
    if r as f64 == x || r.is_infinite() {
        // Exact, or beyond f32's range and hence beyond bf16's and f16's too.
        return r;
    }
    let mut bits = r.to_bits();
    if (r as f64).abs() > x.abs() {
        // r was rounded away from zero; step its magnitude back by one.
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// Rounds to bf16 (nearest, ties to even) and returns its bits. NaN input gives a NaN.
#[inline]
pub fn round_bf16(x: f64) -> u16 {
    bf16_from_f32_bits(round_to_odd_f32(x).to_bits())
}

/// Rounds to f16 (nearest, ties to even) and returns its bits. NaN input gives a NaN.
#[inline]
pub fn round_f16(x: f64) -> u16 {
    half::f16::from_f32(round_to_odd_f32(x)).to_bits()
}

#[inline]
fn bf16_from_f32_bits(bits: u32) -> u16 {
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        return ((bits >> 16) | 0x0040) as u16; // keep NaN a NaN
    }
    let lsb = (bits >> 16) & 1;
    (bits.wrapping_add(0x7fff + lsb) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_pairs_f32() {
        let one = 1.0f32;
        let next = f32::from_bits(one.to_bits() + 1);
        assert_eq!(ulp_distance(1.0, next as f64, UlpDType::F32), Some(1));
        assert_eq!(ulp_distance(-0.0, 0.0, UlpDType::F32), Some(0));
        let tiny = f32::from_bits(1) as f64; // smallest positive subnormal
        assert_eq!(ulp_distance(tiny, -tiny, UlpDType::F32), Some(2));
        assert_eq!(ulp_distance(tiny, 0.0, UlpDType::F32), Some(1));
        assert_eq!(
            ulp_distance(f64::INFINITY, f64::INFINITY, UlpDType::F32),
            Some(0)
        );
        let max = f32::MAX as f64;
        assert_eq!(ulp_distance(max, f64::INFINITY, UlpDType::F32), Some(1));
        assert_eq!(ulp_distance(f64::NAN, 1.0, UlpDType::F32), None);
        assert_eq!(ulp_distance(1.0, 2.0, UlpDType::F32), Some(1 << 23));
    }

    #[test]
    fn known_pairs_bf16_and_f16() {
        // bf16 has 7 stored mantissa bits: the ULP at 1.0 is 2^-7.
        assert_eq!(
            ulp_distance(1.0, 1.0 + 2f64.powi(-7), UlpDType::Bf16),
            Some(1)
        );
        assert_eq!(
            ulp_distance(1.0, 1.0 + 2f64.powi(-10), UlpDType::F16),
            Some(1)
        );
        // The field-notes case: 0.125 is one bf16 ULP for values in [16, 32).
        assert_eq!(ulp_distance(16.0, 16.125, UlpDType::Bf16), Some(1));
        let tiny16 = 2f64.powi(-24); // smallest f16 subnormal
        assert_eq!(ulp_distance(tiny16, -tiny16, UlpDType::F16), Some(2));
        let tinybf = f32::from_bits(1 << 16) as f64; // smallest bf16 subnormal
        assert_eq!(ulp_distance(-tinybf, tinybf, UlpDType::Bf16), Some(2));
    }

    #[test]
    fn bf16_rounding_of_f32_inputs() {
        // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties go to the even (1.0).
        assert_eq!(round_bf16(1.0 + 2f64.powi(-8)), 0x3f80);
        // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up.
        assert_eq!(round_bf16(1.0 + 3.0 * 2f64.powi(-8)), 0x3f82);
        // Just above the halfway point rounds up.
        let above = f32::from_bits((1.0f32 + 2f32.powi(-8)).to_bits() + 1) as f64;
        assert_eq!(round_bf16(above), 0x3f81);
        // f32::MAX overflows bf16 to +inf.
        assert_eq!(round_bf16(f32::MAX as f64), 0x7f80);
        assert_eq!(round_bf16(-2.0), 0xc000);
        // So f32 values 1.0 and 1 + 2^-8 are 0 bf16 ULPs apart, but 1 + 2^-8 + tiny is 1.
        assert_eq!(
            ulp_distance(1.0, 1.0 + 2f64.powi(-8), UlpDType::Bf16),
            Some(0)
        );
        assert_eq!(ulp_distance(1.0, above, UlpDType::Bf16), Some(1));
    }

    #[test]
    fn f64_inputs_round_once_not_twice() {
        // 1 + 2^-8 + 2^-40 is above the bf16 midpoint but rounds to the midpoint
        // in f32; double rounding would then tie to even (1.0). Direct: 1 + 2^-7.
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(round_bf16(x), 0x3f81);
        // Same trap for f16 (midpoint 1 + 2^-11).
        let y = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(round_f16(y), 0x3c01);
        assert_eq!(round_f16(1.0 + 2f64.powi(-11)), 0x3c00);
    }

    fn ulp_dtype() -> impl Strategy<Value = UlpDType> {
        prop_oneof![
            Just(UlpDType::Bf16),
            Just(UlpDType::F16),
            Just(UlpDType::F32)
        ]
    }

    proptest! {
        #[test]
        fn symmetric(a in any::<f64>(), b in any::<f64>(), d in ulp_dtype()) {
            prop_assert_eq!(ulp_distance(a, b, d), ulp_distance(b, a, d));
        }

        #[test]
        fn zero_iff_bitwise_equal_f32(a in any::<u32>(), b in any::<u32>()) {
            let (x, y) = (f32::from_bits(a), f32::from_bits(b));
            prop_assume!(x.is_finite() && y.is_finite());
            let zero = ulp_distance(x as f64, y as f64, UlpDType::F32) == Some(0);
            let same = a == b || (x == 0.0 && y == 0.0);
            prop_assert_eq!(zero, same);
        }

        #[test]
        fn zero_iff_bitwise_equal_16(a in any::<u16>(), b in any::<u16>()) {
            for (d, x, y) in [
                (UlpDType::Bf16, half::bf16::from_bits(a).to_f64(), half::bf16::from_bits(b).to_f64()),
                (UlpDType::F16, half::f16::from_bits(a).to_f64(), half::f16::from_bits(b).to_f64()),
            ] {
                prop_assume!(x.is_finite() && y.is_finite());
                let zero = ulp_distance(x, y, d) == Some(0);
                prop_assert_eq!(zero, a == b || (x == 0.0 && y == 0.0));
            }
        }

        #[test]
        fn bf16_rounding_matches_half_for_f32(a in any::<u32>()) {
            let x = f32::from_bits(a);
            prop_assume!(!x.is_nan());
            prop_assert_eq!(round_bf16(x as f64), half::bf16::from_f32(x).to_bits());
        }

        #[test]
        fn rounding_is_nearest(x in 1e-30f64..1e30, neg in any::<bool>()) {
            // No neighbour of the chosen bf16 / f16 value is closer to x.
            let x = if neg { -x } else { x };
            let b = round_bf16(x);
            let at = |bits: u16| half::bf16::from_bits(bits).to_f64();
            prop_assert!((at(b) - x).abs() <= (at(b + 1) - x).abs());
            prop_assert!((at(b) - x).abs() <= (at(b - 1) - x).abs());
            if x.abs() < 60000.0 {
                let h = round_f16(x);
                let at = |bits: u16| half::f16::from_bits(bits).to_f64();
                prop_assert!((at(h) - x).abs() <= (at(h + 1) - x).abs());
                if h & 0x7fff != 0 {
                    prop_assert!((at(h) - x).abs() <= (at(h - 1) - x).abs());
                }
            }
        }
    }
}
