//! One token case: the oracle's tokens and logits, prefill, the greedy and
//! teacher-forced decode loops, and the case's reference noise (the
//! comparison of what they produced: `case_compare`).

use super::error::{OracleProblem, TokensError};
use super::math::argmax;
use super::noise;
use super::session::{Outputs, Session, StepInputs};
use parity_record::{NoiseMeasurement, NoiseSource, ReferenceNoise, TokenMode};
use parity_spec::{Case, TokensSpec};

/// The oracle's side of a case.
pub struct OracleCase {
    /// Tokens [N].
    pub tokens: Vec<i64>,
    /// Logits, one row of V per step.
    pub logits: Vec<Vec<f64>>,
    /// Truth logits (f64), when the spec names them.
    pub truth: Option<Vec<Vec<f64>>>,
}

/// Rows of a [rows, V] tensor (at least `n` rows; the first `n` are kept).
fn rows(t: &parity_tensor::Tensor, name: &str, n: usize) -> Result<Vec<Vec<f64>>, TokensError> {
    let shape = t.shape();
    let (r, v) = match shape {
        [r, v] => (*r, *v),
        _ => {
            return Err(TokensError::Oracle {
                tensor: name.to_string(),
                problem: OracleProblem::NotAMatrix {
                    shape: shape.to_vec(),
                },
            })
        }
    };
    if r < n || v < 2 || !t.dtype().is_float() {
        return Err(TokensError::Oracle {
            tensor: name.to_string(),
            problem: OracleProblem::TooSmall {
                dtype: t.dtype(),
                shape: shape.to_vec(),
                steps: n,
            },
        });
    }
    let all = t.to_f64_vec();
    let out: Vec<Vec<f64>> = all.chunks(v).take(n).map(<[f64]>::to_vec).collect();
    for (s, row) in out.iter().enumerate() {
        if let Some(i) = row.iter().position(|x| !x.is_finite()) {
            return Err(TokensError::Oracle {
                tensor: name.to_string(),
                problem: OracleProblem::NonFinite {
                    step: s,
                    token: i,
                    value: row[i],
                },
            });
        }
    }
    Ok(out)
}

impl OracleCase {
    /// Reads the oracle's tokens, logits and (optional) truth for `case`.
    pub fn load(session: &Session<'_>, case: &Case) -> Result<OracleCase, TokensError> {
        let t = session.tokens;
        let n = t.max_new_tokens;
        let name = |text: &str| TokensSpec::render(text, case).map_err(TokensError::Template);
        let get = |text: &str| -> Result<(String, parity_tensor::Tensor), TokensError> {
            let n = name(text)?;
            let tensor = session.sources.oracle(&n)?;
            Ok((n, tensor))
        };
        let (tok_name, tok) = get(&t.oracle.tokens)?;
        if tok.dtype().is_float() || tok.numel() < n {
            return Err(TokensError::Oracle {
                tensor: tok_name,
                problem: OracleProblem::Tokens {
                    dtype: tok.dtype(),
                    shape: tok.shape().to_vec(),
                    steps: n,
                },
            });
        }
        let tokens: Vec<i64> = tok
            .to_f64_vec()
            .into_iter()
            .take(n)
            .map(|x| x as i64)
            .collect();
        let (logit_name, l) = get(&t.oracle.logits)?;
        let logits = rows(&l, &logit_name, n)?;
        let vocab = logits[0].len();
        if let Some((s, &bad)) = tokens
            .iter()
            .enumerate()
            .find(|(_, &x)| x < 0 || x as usize >= vocab)
        {
            return Err(TokensError::Oracle {
                tensor: tok_name,
                problem: OracleProblem::OutsideVocabulary {
                    token: bad,
                    step: s,
                    vocab,
                    logits: logit_name,
                },
            });
        }
        let truth = match &t.oracle.truth_logits {
            None => None,
            Some(text) => {
                let (truth_name, tt) = get(text)?;
                let r = rows(&tt, &truth_name, n)?;
                if r[0].len() != vocab {
                    return Err(TokensError::TruthVocabulary {
                        truth: truth_name,
                        got: r[0].len(),
                        logits: logit_name,
                        vocab,
                    });
                }
                Some(r)
            }
        };
        Ok(OracleCase {
            tokens,
            logits,
            truth,
        })
    }
}

/// The production's logits and chosen tokens of one mode, as far as it got.
#[derive(Default)]
pub struct Stream {
    /// Logits per step.
    pub logits: Vec<Vec<f64>>,
    /// Top-1 per step.
    pub tokens: Vec<i64>,
    /// The error that stopped it, if any.
    pub error: Option<TokensError>,
    /// Per step, max |Δlogit| between the production's logits and its logits
    /// with every floating-point argument perturbed (when measured).
    pub perturbed: Vec<f64>,
    /// Why the perturbation could not be measured at some step.
    pub perturb_error: Option<String>,
}

/// Runs decode steps 1..N after `prefill`, feeding the production's own
/// token (greedy) or the oracle's (teacher-forced). With `perturb`, each step
/// (prefill included) is also called with its arguments perturbed by that
/// many ULPs, and the spread of the logits recorded (the perturbation noise).
pub fn decode_loop(
    session: &Session<'_>,
    case: &Case,
    p: usize,
    oracle: &OracleCase,
    prefill: &(Vec<f64>, Outputs),
    mode: TokenMode,
    perturb: Option<u32>,
) -> Stream {
    let vocab = oracle.logits[0].len();
    let mut stream = Stream::default();
    let mut state = prefill.1.clone();
    let mut logits = prefill.0.clone();
    let mut pending: Option<Vec<f64>> = None;
    for step in 0..session.tokens.max_new_tokens {
        let token = match (step, mode) {
            (0, _) => 0,
            (_, TokenMode::Greedy) => stream.tokens[step - 1],
            (_, TokenMode::TeacherForced) => oracle.tokens[step - 1],
        };
        let what = format!("case `{}`, {} step {step}", case.name, mode.name());
        let call = |perturbed: Option<(u32, u64)>| {
            let inputs = StepInputs {
                token,
                position: TokensSpec::position(p, step),
                state: &state,
            };
            let (which, spec_call, step_inputs) = if step == 0 {
                ("prefill", &session.tokens.prefill, None)
            } else {
                ("decode", &session.tokens.decode, Some(&inputs))
            };
            session
                .call_perturbed(which, spec_call, case, step_inputs, perturbed)
                .and_then(|out| Ok((session.logits(&out, &what, vocab)?, out)))
                .map_err(|e| e.context(&what))
        };
        if let (Some(ulps), None) = (perturb, &stream.perturb_error) {
            // The same step with its arguments perturbed (same state, token,
            // position); for steps >= 1 compared after the step's own call below.
            match call(Some((ulps, noise::seed(&case.name, step)))) {
                Ok((l, _)) if step == 0 => stream.perturbed.push(spread(&prefill.0, &l)),
                Ok((l, _)) => pending = Some(l),
                Err(e) => stream.perturb_error = Some(e.to_string()),
            }
        }
        if step > 0 {
            let out = call(None);
            match out {
                Ok((l, out)) => {
                    logits = l;
                    state = out;
                }
                Err(e) => {
                    stream.error = Some(e);
                    return stream;
                }
            }
        }
        if let Some(l) = pending.take() {
            stream.perturbed.push(spread(&logits, &l));
        }
        // Logits were checked finite, so argmax is defined.
        stream.tokens.push(argmax(&logits).unwrap_or(0) as i64);
        stream.logits.push(logits.clone());
    }
    stream
}

/// max |a − b| over the logits.
fn spread(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// The perturbation source, from the stream that measured it.
fn perturbation_measurement(ulps: u32, stream: Option<&Stream>) -> NoiseMeasurement {
    let (value, detail) = match stream {
        None => (
            None,
            "not measured (no decode of this case ran through parity's own calls)".to_string(),
        ),
        Some(s) if s.perturbed.is_empty() => (
            None,
            format!(
                "not measured: {}",
                s.perturb_error.as_deref().unwrap_or("no step ran")
            ),
        ),
        Some(s) => {
            let (at, worst) = s
                .perturbed
                .iter()
                .copied()
                .enumerate()
                .fold((0, 0.0f64), |m, (i, x)| if x > m.1 { (i, x) } else { m });
            (
                Some(worst),
                format!(
                    "max |Δlogit| of production against itself with every floating-point argument moved by {ulps} ULPs, over {} steps (worst at step {at}){}",
                    s.perturbed.len(),
                    s.perturb_error
                        .as_ref()
                        .map(|e| format!("; stopped early: {e}"))
                        .unwrap_or_default()
                ),
            )
        }
    };
    NoiseMeasurement {
        source: NoiseSource::Perturbation,
        value,
        detail,
    }
}

/// The case's reference noise: spec, truth, perturbation (measured on `perturbed`).
pub fn reference_noise(
    session: &Session<'_>,
    oracle: &OracleCase,
    perturbed: Option<&Stream>,
) -> ReferenceNoise {
    let t = session.tokens;
    noise::reference(
        vec![
            noise::spec_measurement(&session.spec.path.display().to_string(), t),
            noise::truth_measurement(oracle),
            perturbation_measurement(t.verdict.perturbation_ulps, perturbed),
        ],
        t.verdict.noise_floor,
    )
}
