//! The reference noise of a case and the logits gate (docs/tokens.md, "The
//! verdict"). The noise bounds how far a *correct* production's logits lie
//! from the oracle's; it is measured on references, never on the
//! production-versus-oracle differences it judges (a faulty decode would
//! raise its own noise and pass its flips as near ties). Three sources, in
//! order of precedence: the spec's `tokens.logits` tolerance (set from a
//! known-good run), the oracle's own distance from the f64 truth, and
//! production's own sensitivity to a few-ULP perturbation of its arguments.

use super::case::OracleCase;
use super::math::StepStats;
use parity_compare::{compare, evaluate, CompareOptions, Criterion, TruthErrors};
use parity_record::{NoiseMeasurement, NoiseSource, ReferenceNoise, NOISE_GATE_FACTOR};
use parity_spec::{LogitsTolerance, TokensSpec};
use parity_tensor::{DType, Tensor};

/// The truth source is refused when the oracle lies further than this
/// fraction of the truth's largest |logit| from the truth: it is then not a
/// rounding-level approximation of the truth (an oracle with a bug, such as
/// mlx-vlm as shipped), and its distance measures the bug, not noise.
pub const TRUTH_REFUSAL_FRACTION: f64 = 1.0 / 16.0;

/// The truth source: the oracle's largest |oracle − truth| logit over the
/// case's steps (two correct implementations differ by about that much).
pub fn truth_measurement(oracle: &OracleCase) -> NoiseMeasurement {
    let Some(truth) = &oracle.truth else {
        return NoiseMeasurement {
            source: NoiseSource::Truth,
            value: None,
            detail: "the spec names no `tokens.oracle.truth_logits`".into(),
        };
    };
    let (mut worst, mut at, mut range) = (0.0f64, 0usize, 0.0f64);
    for (s, (o, t)) in oracle.logits.iter().zip(truth).enumerate() {
        let d = o
            .iter()
            .zip(t)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        if d > worst {
            (worst, at) = (d, s);
        }
        range = t.iter().fold(range, |m, x| m.max(x.abs()));
    }
    if worst > TRUTH_REFUSAL_FRACTION * range {
        return NoiseMeasurement {
            source: NoiseSource::Truth,
            value: None,
            detail: format!(
                "refused: the oracle lies {worst:.4e} from its f64 truth (step {at}), more than 1/16 of the truth's largest |logit| {range:.4e}: not a rounding-level difference, so not noise"
            ),
        };
    }
    NoiseMeasurement {
        source: NoiseSource::Truth,
        value: Some(worst),
        detail: format!(
            "max |oracle − f64 truth| over the {} steps (worst at step {at})",
            truth.len()
        ),
    }
}

/// The spec source: the `max_abs` of `tokens.logits`.
pub fn spec_measurement(spec_path: &str, t: &TokensSpec) -> NoiseMeasurement {
    let (value, detail) = match &t.logits_tolerance {
        None => (
            None,
            "the spec has no `tokens.logits` tolerance".to_string(),
        ),
        Some(tol) => match tol.max_abs() {
            Some(v) => (
                Some(v),
                format!(
                    "max_abs of `tokens.logits` ({spec_path}:{}:{})",
                    tol.location.line, tol.location.col
                ),
            ),
            None => (
                None,
                "`tokens.logits` has no `max_abs` criterion (it still gates every step)"
                    .to_string(),
            ),
        },
    };
    NoiseMeasurement {
        source: NoiseSource::Spec,
        value,
        detail,
    }
}

/// The used noise: the first source that gave a value (spec, truth,
/// perturbation), raised to the spec's `noise_floor`.
pub fn reference(sources: Vec<NoiseMeasurement>, noise_floor: f64) -> ReferenceNoise {
    let used = sources.iter().find(|m| m.value.is_some());
    let source = used.map_or(NoiseSource::None, |m| m.source);
    let value = used
        .and_then(|m| m.value)
        .map(|v| v.max(noise_floor))
        .or((noise_floor > 0.0).then_some(noise_floor));
    ReferenceNoise {
        source,
        value,
        sources,
    }
}

/// Moves every element of a floating-point tensor by exactly `ulps` units in
/// the last place of its own dtype, up or down as `rng` draws, leaving
/// non-finite values alone and never stepping onto an infinity. Other
/// dtypes are returned unchanged.
pub fn perturb(t: &Tensor, ulps: u32, rng: &mut u64) -> Tensor {
    let width = match t.dtype() {
        DType::F16 | DType::Bf16 => 2,
        DType::F32 => 4,
        DType::F64 => 8,
        _ => return t.clone(),
    };
    let (exp_bits, man_bits) = match t.dtype() {
        DType::F16 => (5, 10),
        DType::Bf16 => (8, 7),
        DType::F32 => (8, 23),
        _ => (11, 52),
    };
    let sign = 1u64 << (exp_bits + man_bits);
    let inf = ((1u64 << exp_bits) - 1) << man_bits;
    let mut bytes = t.bytes().to_vec();
    for chunk in bytes.chunks_exact_mut(width) {
        let mut raw = [0u8; 8];
        raw[..width].copy_from_slice(chunk);
        let bits = u64::from_le_bytes(raw);
        let magnitude = bits & !sign;
        if magnitude >= inf {
            continue;
        }
        // Sign-magnitude to a monotone integer, stepped, and back.
        let key = if bits & sign != 0 {
            -(magnitude as i128)
        } else {
            magnitude as i128
        };
        let up = next(rng) & 1 == 1;
        let moved = if up {
            key + i128::from(ulps)
        } else {
            key - i128::from(ulps)
        };
        let (neg, mag) = (moved < 0, moved.unsigned_abs() as u64);
        if mag >= inf {
            continue;
        }
        let out = if neg { mag | sign } else { mag };
        chunk.copy_from_slice(&out.to_le_bytes()[..width]);
    }
    Tensor::from_bytes(t.dtype(), t.shape().to_vec(), bytes).unwrap_or_else(|_| t.clone())
}

/// xorshift64 (never zero from a nonzero seed).
fn next(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    x
}

/// A seed for one perturbed call, from the case name and the step.
pub fn seed(case: &str, step: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in case.bytes().chain((step as u64).to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h | 1
}

/// What each step's logits are held to, in words.
pub fn gate_words(tol: Option<&LogitsTolerance>, noise: &ReferenceNoise) -> Vec<String> {
    match tol {
        Some(t) => {
            let mut w: Vec<String> = t.criteria.iter().map(criterion_words).collect();
            w.extend(t.max_kl.map(|x| format!("max_kl {x:.4e}")));
            w.extend(
                t.max_abs_delta_p
                    .map(|x| format!("max_abs_delta_p {x:.4e}")),
            );
            w
        }
        None => vec![match noise.value {
            Some(v) => format!(
                "max |Δlogit| <= {NOISE_GATE_FACTOR} x the reference noise {v:.4e} ({}) = {:.4e}",
                noise.source.name(),
                NOISE_GATE_FACTOR * v
            ),
            None => "max |Δlogit| <= 0 (no reference noise)".to_string(),
        }],
    }
}

fn criterion_words(c: &Criterion) -> String {
    serde_json::to_string(c).unwrap_or_else(|_| format!("{c:?}"))
}

/// One step's logits against the gate: the failed criteria, in words (empty
/// when it passes).
pub fn gate_step(
    tol: Option<&LogitsTolerance>,
    noise: &ReferenceNoise,
    oracle: &[f64],
    production: &[f64],
    truth: Option<&[f64]>,
    stats: &StepStats,
) -> Vec<String> {
    let Some(t) = tol else {
        let bound = NOISE_GATE_FACTOR * noise.value.unwrap_or(0.0);
        return if stats.max_abs_delta_logit <= bound {
            Vec::new()
        } else {
            vec![format!(
                "max |Δlogit| {:.4e} > {NOISE_GATE_FACTOR} x reference noise = {bound:.4e}",
                stats.max_abs_delta_logit
            )]
        };
    };
    let mut failed = Vec::new();
    if !t.criteria.is_empty() {
        failed.extend(criteria_failures(&t.criteria, oracle, production, truth));
    }
    if let Some(max) = t.max_kl {
        if stats.kl.is_nan() || stats.kl > max {
            failed.push(format!("KL {:.4e} > max_kl {max:.4e}", stats.kl));
        }
    }
    if let Some(max) = t.max_abs_delta_p {
        if stats.delta_p.is_nan() || stats.delta_p.abs() > max {
            failed.push(format!(
                "|Δp| {:.4e} > max_abs_delta_p {max:.4e}",
                stats.delta_p.abs()
            ));
        }
    }
    failed
}

/// The stage criteria on one logits row, through the compare engine (rows
/// held as f32, exact for f32, bf16 and f16 logits; f64 when wider).
fn criteria_failures(
    criteria: &[Criterion],
    oracle: &[f64],
    production: &[f64],
    truth: Option<&[f64]>,
) -> Vec<String> {
    let exact_f32 = |r: &[f64]| r.iter().all(|&x| f64::from(x as f32) == x);
    let dtype = if exact_f32(oracle) && exact_f32(production) {
        DType::F32
    } else {
        DType::F64
    };
    let row = |r: &[f64], d| Tensor::from_f64_as(d, vec![r.len()], r);
    let (Ok(p), Ok(o)) = (row(production, dtype), row(oracle, dtype)) else {
        return vec!["the logits rows could not be built".into()];
    };
    let options = CompareOptions::default();
    let metrics = match compare(&p, &o, None, &options) {
        Ok(m) => m,
        Err(e) => return vec![format!("compare: {e}")],
    };
    let truth_errors = truth.and_then(|t| {
        let t = Tensor::from_f64_as(DType::F64, vec![t.len()], t).ok()?;
        let rms = |x: &Tensor| {
            let x64 = Tensor::from_f64_as(DType::F64, x.shape().to_vec(), &x.to_f64_vec()).ok()?;
            compare(&x64, &t, None, &options).ok().map(|m| m.rms)
        };
        Some(TruthErrors {
            actual_vs_truth: rms(&p)?,
            expected_vs_truth: rms(&o)?,
            ..TruthErrors::default()
        })
    });
    evaluate(criteria, &metrics, truth_errors.as_ref())
        .results
        .into_iter()
        .filter(|r| !r.passed)
        .map(|r| {
            format!(
                "{} {:.4e} > {:.4e}{}",
                criterion_words(&r.criterion),
                r.observed,
                r.threshold,
                r.note.map(|n| format!(" ({n})")).unwrap_or_default()
            )
        })
        .collect()
}
