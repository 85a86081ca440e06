//! Element decoders and ULP keys the comparison kernel is specialised over:
//! zero-sized types for the float dtypes (so each dtype pair compiles to its
//! own loop) and runtime-dispatched fallbacks for integers, bools and mixes.

use crate::ulp::{key_16, key_f32, round_bf16, round_f16, UlpDType};
use parity_tensor::{decode_f64, DType};

/// One element type: how wide it is and how to decode it from LE bytes.
pub(crate) trait Elem: Copy + Send + Sync {
    /// The float type whose bits `raw` returns, for bf16, f16 and f32: ULP
    /// keys in that type then come from the bits, with no rounding.
    const ULP: Option<UlpDType> = None;
    /// Bytes per element.
    fn size(&self) -> usize;
    /// The element's value (`c` is exactly `size()` bytes).
    fn load(&self, c: &[u8]) -> f64;
    /// The element's raw bits, zero-extended.
    fn raw(&self, c: &[u8]) -> u64;
}

macro_rules! float_elem {
    ($name:ident, $n:literal, $decode:expr, $raw:ty, $ulp:expr) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name;
        impl Elem for $name {
            const ULP: Option<UlpDType> = $ulp;
            #[inline(always)]
            fn size(&self) -> usize {
                $n
            }
            #[inline(always)]
            fn load(&self, c: &[u8]) -> f64 {
                let mut b = [0u8; $n];
                b.copy_from_slice(&c[..$n]);
                $decode(b)
            }
            #[inline(always)]
            fn raw(&self, c: &[u8]) -> u64 {
                let mut b = [0u8; $n];
                b.copy_from_slice(&c[..$n]);
                <$raw>::from_le_bytes(b) as u64
            }
        }
    };
}

float_elem!(
    F16E,
    2,
    |b| f16_to_f64(u16::from_le_bytes(b)),
    u16,
    Some(UlpDType::F16)
);
float_elem!(
    Bf16E,
    2,
    |b| f32::from_bits((u16::from_le_bytes(b) as u32) << 16) as f64,
    u16,
    Some(UlpDType::Bf16)
);
float_elem!(
    F32E,
    4,
    |b| f32::from_le_bytes(b) as f64,
    u32,
    Some(UlpDType::F32)
);
float_elem!(F64E, 8, f64::from_le_bytes, u64, None);

/// The value of the f16 with bits `h`, exactly: its exponent and
/// significand placed in an f32 (at the bottom of the f32's wider exponent)
/// and scaled by 2^112, the difference of the two biases (exact, subnormals
/// included); infinities and NaNs get the f32's all-ones exponent. A few
/// integer operations with no branch, where `half`'s conversion normalises
/// subnormals in a loop.
#[inline(always)]
fn f16_to_f64(h: u16) -> f64 {
    let mag = (h & 0x7fff) as u32;
    let sign = ((h & 0x8000) as u32) << 16;
    let finite = f32::from_bits(mag << 13) * f32::from_bits(0x7780_0000); // 2^112
    let special = f32::from_bits(0x7f80_0000 | (mag & 0x3ff) << 13);
    let x = if mag >= 0x7c00 { special } else { finite };
    f32::from_bits(x.to_bits() | sign) as f64
}

/// Any dtype, decoded through a runtime match (integers, bools, mixed pairs).
#[derive(Clone, Copy)]
pub(crate) struct DynE(pub DType);

impl Elem for DynE {
    #[inline]
    fn size(&self) -> usize {
        self.0.size()
    }
    #[inline]
    fn load(&self, c: &[u8]) -> f64 {
        decode_f64(self.0, c)
    }
    #[inline]
    fn raw(&self, c: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        let n = c.len().min(8);
        b[..n].copy_from_slice(&c[..n]);
        u64::from_le_bytes(b)
    }
}

/// Where a value sits on the ULP integer line of some float type.
pub(crate) trait UlpKey: Copy + Send + Sync {
    /// False when no ULP metrics are wanted.
    const ENABLED: bool;
    /// The float type keys are measured in, when fixed at compile time.
    const DTYPE: Option<UlpDType> = None;
    /// Key of a non-NaN value.
    fn key(&self, x: f64) -> i64;
}

#[derive(Clone, Copy)]
pub(crate) struct NoUlp;
impl UlpKey for NoUlp {
    const ENABLED: bool = false;
    #[inline(always)]
    fn key(&self, _: f64) -> i64 {
        0
    }
}

#[derive(Clone, Copy)]
pub(crate) struct UlpF32;
impl UlpKey for UlpF32 {
    const ENABLED: bool = true;
    const DTYPE: Option<UlpDType> = Some(UlpDType::F32);
    #[inline(always)]
    fn key(&self, x: f64) -> i64 {
        key_f32(x as f32)
    }
}

#[derive(Clone, Copy)]
pub(crate) struct UlpBf16;
impl UlpKey for UlpBf16 {
    const ENABLED: bool = true;
    const DTYPE: Option<UlpDType> = Some(UlpDType::Bf16);
    #[inline(always)]
    fn key(&self, x: f64) -> i64 {
        key_16(round_bf16(x))
    }
}

#[derive(Clone, Copy)]
pub(crate) struct UlpF16;
impl UlpKey for UlpF16 {
    const ENABLED: bool = true;
    const DTYPE: Option<UlpDType> = Some(UlpDType::F16);
    #[inline(always)]
    fn key(&self, x: f64) -> i64 {
        key_16(round_f16(x))
    }
}

#[derive(Clone, Copy)]
pub(crate) struct DynUlp(pub UlpDType);
impl UlpKey for DynUlp {
    const ENABLED: bool = true;
    #[inline]
    fn key(&self, x: f64) -> i64 {
        self.0.key(x).unwrap_or(0)
    }
}

/// Whether two compile-time ULP types are the same one (a `const fn`, where
/// `PartialEq` is not).
pub(crate) const fn same_ulp(x: Option<UlpDType>, y: Option<UlpDType>) -> bool {
    matches!(
        (x, y),
        (Some(UlpDType::F32), Some(UlpDType::F32))
            | (Some(UlpDType::Bf16), Some(UlpDType::Bf16))
            | (Some(UlpDType::F16), Some(UlpDType::F16))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_bit_loads_agree_with_half_on_every_pattern() {
        for h in 0..=u16::MAX {
            let b = h.to_le_bytes();
            for (ours, theirs) in [
                (F16E.load(&b), half::f16::from_bits(h).to_f64()),
                (Bf16E.load(&b), half::bf16::from_bits(h).to_f64()),
            ] {
                if theirs.is_nan() {
                    assert!(ours.is_nan(), "{h:#06x}: {ours}");
                } else {
                    assert_eq!(
                        ours.to_bits(),
                        theirs.to_bits(),
                        "{h:#06x}: {ours} {theirs}"
                    );
                }
            }
        }
    }
}
