//! The vector path the comparison kernel takes (a leaf: the kernel and
//! the metrics both name it).

/// The comparison kernel's paths for f32 pairs, narrowest first. Every
/// path makes the same additions in the same order: results are identical,
/// bit for bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Simd {
    /// The scalar blocked kernel.
    Scalar,
    /// AVX2, FMA, POPCNT and F16C (`kernel_avx2.rs`; f32, bf16 and f16
    /// pairs).
    Avx2,
    /// Those and AVX-512 F, BW, DQ and VL (`kernel_avx512.rs`; f32, bf16
    /// and f16 pairs).
    #[default]
    Avx512,
}

impl Simd {
    /// The widest path this CPU has.
    pub fn available() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if !(has!("avx2") && has!("fma") && has!("popcnt") && has!("f16c")) {
                return Simd::Scalar;
            }
            if has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
                return Simd::Avx512;
            }
            Simd::Avx2
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Simd::Scalar
        }
    }

    /// Its name in tables: `scalar`, `AVX2` or `AVX-512`.
    pub fn label(self) -> &'static str {
        match self {
            Simd::Scalar => "scalar",
            Simd::Avx2 => "AVX2",
            Simd::Avx512 => "AVX-512",
        }
    }
}
