//! One token case: the oracle's tokens and logits, prefill, the greedy and
//! teacher-forced decode loops, and the comparison of what they produced.

use super::error::{OracleProblem, TokensError};
use super::judge::{judge_step, Evidence};
use super::math::{argmax, step_stats, top_gap};
use super::session::{Outputs, Session, StepInputs};
use parity_record::{Status, StepMetrics, TokenCaseRecord, TokenMode};
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
}

/// Runs decode steps 1..N after `prefill`, feeding the production's own
/// token (greedy) or the oracle's (teacher-forced).
pub fn decode_loop(
    session: &Session<'_>,
    case: &Case,
    p: usize,
    oracle: &OracleCase,
    prefill: &(Vec<f64>, Outputs),
    mode: TokenMode,
) -> Stream {
    let vocab = oracle.logits[0].len();
    let mut stream = Stream::default();
    let mut state = prefill.1.clone();
    let mut logits = prefill.0.clone();
    for step in 0..session.tokens.max_new_tokens {
        if step > 0 {
            let token = match mode {
                TokenMode::Greedy => stream.tokens[step - 1],
                TokenMode::TeacherForced => oracle.tokens[step - 1],
            };
            let inputs = StepInputs {
                token,
                position: TokensSpec::position(p, step),
                state: &state,
            };
            let what = format!("case `{}`, {} step {step}", case.name, mode.name());
            let out = session
                .call("decode", &session.tokens.decode, case, Some(&inputs))
                .and_then(|out| Ok((session.logits(&out, &what, vocab)?, out)))
                .map_err(|e| e.context(&what));
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
        // Logits were checked finite, so argmax is defined.
        stream.tokens.push(argmax(&logits).unwrap_or(0) as i64);
        stream.logits.push(logits.clone());
    }
    stream
}

/// Everything measured for one case, turned into its record.
pub fn compare_case(
    session: &Session<'_>,
    case: &Case,
    p: usize,
    oracle: &OracleCase,
    greedy: Option<Stream>,
    forced: Option<Stream>,
) -> TokenCaseRecord {
    let mut rec = TokenCaseRecord {
        case: case.name.clone(),
        status: Status::Pass,
        prompt_length: p,
        oracle_tokens: oracle.tokens.clone(),
        greedy_tokens: Vec::new(),
        teacher_forced_tokens: Vec::new(),
        steps: Vec::new(),
        summary: None,
        first_divergent_token: None,
        later_mismatches: Vec::new(),
        errors: Vec::new(),
    };
    fn ev<'a>(
        session: &'a Session<'a>,
        case: &'a str,
        p: usize,
        oracle: &'a OracleCase,
        stream: &'a Stream,
        mode: TokenMode,
    ) -> Evidence<'a> {
        Evidence {
            session,
            case,
            p,
            oracle,
            production: &stream.logits,
            mode,
        }
    }
    if let Some(f) = &forced {
        rec.teacher_forced_tokens = f.tokens.clone();
        for (s, l) in f.logits.iter().enumerate() {
            let st = step_stats(&oracle.logits[s], l, oracle.tokens[s] as usize);
            rec.steps.push(StepMetrics {
                step: s,
                oracle_token: oracle.tokens[s],
                production_token: f.tokens[s],
                top1_agree: f.tokens[s] == oracle.tokens[s],
                kl: st.kl,
                delta_p: st.delta_p,
                max_abs_delta_logit: st.max_abs_delta_logit,
                oracle_gap: top_gap(&oracle.logits[s]),
                production_gap: top_gap(l),
            });
        }
        rec.summary = super::judge::summary(&rec.steps);
        let mismatches: Vec<usize> = rec
            .steps
            .iter()
            .filter(|m| !m.top1_agree)
            .map(|m| m.step)
            .collect();
        let judged: Vec<_> = mismatches
            .iter()
            .map(|&s| {
                judge_step(
                    &ev(session, &case.name, p, oracle, f, TokenMode::TeacherForced),
                    s,
                )
            })
            .collect();
        let mut judged = judged.into_iter();
        rec.first_divergent_token = judged.next();
        rec.later_mismatches = judged.collect();
        if let Some(e) = &f.error {
            rec.errors.push(e.to_record());
        }
    }
    if let Some(g) = &greedy {
        rec.greedy_tokens = g.tokens.clone();
        let first = g
            .tokens
            .iter()
            .zip(&oracle.tokens)
            .position(|(a, b)| a != b);
        if let Some(s) = first {
            let from_greedy =
                judge_step(&ev(session, &case.name, p, oracle, g, TokenMode::Greedy), s);
            match &rec.first_divergent_token {
                None => rec.first_divergent_token = Some(from_greedy),
                Some(tf) if tf.step != s => rec.errors.push(parity_record::ErrorRecord::execution(format!(
                    "case `{}`: greedy decoding first differs from the oracle at step {s} but teacher-forced at step {}; up to the first difference both feed the same tokens, so the production is not deterministic",
                    case.name, tf.step
                ))),
                Some(_) => {}
            }
        } else if let Some(tf) = rec.first_divergent_token.take() {
            rec.errors.push(parity_record::ErrorRecord::execution(format!(
                "case `{}`: teacher-forced top-1 differs from the oracle at step {} but greedy decoding matches it; both feed the same tokens up to there, so the production is not deterministic",
                case.name, tf.step
            )));
            rec.first_divergent_token = Some(tf);
        }
        if let Some(e) = &g.error {
            rec.errors.push(e.to_record());
        }
    }
    rec.status = if !rec.errors.is_empty() {
        Status::Error
    } else if rec
        .first_divergent_token
        .iter()
        .chain(&rec.later_mismatches)
        .any(|t| t.counted)
    {
        Status::Fail
    } else {
        Status::Pass
    };
    rec
}
