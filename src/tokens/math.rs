//! The arithmetic of token parity, on plain slices: greedy choice, top-k,
//! softmax statistics (llama.cpp's `--kl-divergence` quantities), ULP gaps,
//! and the near-tie verdict against a reference noise. Everything is
//! computed in f64.

use parity_compare::{ulp_distance, UlpDType};
use parity_record::{TokenVerdict, VerdictRule};

/// The greedy choice: index of the largest logit, the lowest index among
/// exact ties (numpy's and MLX's `argmax`). None when `logits` is empty or
/// holds a NaN (a NaN logit has no order; callers report it).
pub fn argmax(logits: &[f64]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &x) in logits.iter().enumerate() {
        if x.is_nan() {
            return None;
        }
        match best {
            Some(b) if logits[b] >= x => {}
            _ => best = Some(i),
        }
    }
    best
}

/// The `k` largest logits as (index, logit), best first; exact ties in index
/// order (so `top_k(l, 1)[0].0 == argmax(l)`). NaN logits are left out.
pub fn top_k(logits: &[f64], k: usize) -> Vec<(usize, f64)> {
    let mut all: Vec<(usize, f64)> = logits
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, x)| !x.is_nan())
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

/// Top-1 minus top-2 logit (0 for fewer than two finite logits).
pub fn top_gap(logits: &[f64]) -> f64 {
    match top_k(logits, 2).as_slice() {
        [a, b] => a.1 - b.1,
        _ => 0.0,
    }
}

/// The top-1 minus top-2 gap in ULPs of `dtype`: how many values of `dtype`
/// lie between the two largest logits after rounding both to it (0 when they
/// round to the same value, or there are fewer than two).
pub fn top_gap_ulp(logits: &[f64], dtype: UlpDType) -> u64 {
    match top_k(logits, 2).as_slice() {
        [a, b] => ulp_distance(a.1, b.1, dtype).unwrap_or(0),
        _ => 0,
    }
}

/// log-softmax in f64 (max-shifted, so large logits do not overflow).
pub fn log_softmax(logits: &[f64]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = logits.iter().map(|&x| (x - max).exp()).sum();
    let log_z = max + sum.ln();
    logits.iter().map(|&x| x - log_z).collect()
}

/// One step's teacher-forced comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepStats {
    /// KL(oracle || production), nats: Σ p_o (log p_o − log p_p).
    pub kl: f64,
    /// p_production(token) − p_oracle(token) for the oracle's token.
    pub delta_p: f64,
    /// max |production − oracle| over the logits.
    pub max_abs_delta_logit: f64,
}

/// KL divergence, Δp of `token` and max |Δlogit| between two logit vectors of
/// equal length (the oracle is the base distribution, as llama.cpp's base model).
pub fn step_stats(oracle: &[f64], production: &[f64], token: usize) -> StepStats {
    let lo = log_softmax(oracle);
    let lp = log_softmax(production);
    let kl = lo
        .iter()
        .zip(&lp)
        .map(|(&a, &b)| {
            if a == f64::NEG_INFINITY {
                0.0
            } else {
                a.exp() * (a - b)
            }
        })
        .sum::<f64>()
        .max(0.0);
    let delta_p = match (lp.get(token), lo.get(token)) {
        (Some(p), Some(o)) => p.exp() - o.exp(),
        _ => f64::NAN,
    };
    let max_abs_delta_logit = oracle
        .iter()
        .zip(production)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    StepStats {
        kl,
        delta_p,
        max_abs_delta_logit,
    }
}

/// The evidence a verdict rests on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    /// p[production token] − p[oracle token] (>= 0 when the production chose by argmax).
    pub production_margin: f64,
    /// o[oracle token] − o[production token] (>= 0 when the oracle chose by argmax).
    pub oracle_margin: f64,
    /// near_tie or divergent.
    pub verdict: TokenVerdict,
    /// What decided it.
    pub rule: VerdictRule,
}

/// Judges a mismatch: the production chose `prod_tok`, the oracle `oracle_tok`;
/// `noise` is the reference noise (a bound on how far a correct production's
/// logits lie from the oracle's, measured on references, never on this run),
/// `truth` the f64 truth's logits at this step when the spec has them.
/// See [`verdict_rule`].
pub fn judge(
    production: &[f64],
    oracle: &[f64],
    prod_tok: usize,
    oracle_tok: usize,
    noise: Option<f64>,
    truth: Option<&[f64]>,
) -> Judgement {
    let at = |l: &[f64], i: usize| l.get(i).copied().unwrap_or(f64::NAN);
    let production_margin = at(production, prod_tok) - at(production, oracle_tok);
    let oracle_margin = at(oracle, oracle_tok) - at(oracle, prod_tok);
    let deficits = truth.map(|t| truth_deficits(t, prod_tok, oracle_tok));
    let (verdict, rule) = verdict_rule(production_margin, oracle_margin, deficits, noise);
    Judgement {
        production_margin,
        oracle_margin,
        verdict,
        rule,
    }
}

/// How far the truth's logits of the production's and the oracle's tokens lie
/// below the truth's top-1 logit (NaN for a token outside the vocabulary).
pub fn truth_deficits(truth: &[f64], prod_tok: usize, oracle_tok: usize) -> (f64, f64) {
    let top = truth.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let at = |i: usize| truth.get(i).map_or(f64::NAN, |x| top - x);
    (at(prod_tok), at(oracle_tok))
}

/// The verdict rule on the numbers it rests on (docs/tokens.md, "The verdict").
/// `noise` None counts as 0.
///
/// With the truth (`deficits`, each token's distance below the truth's
/// top-1), the truth decides: `near_tie` when both tokens lie within the
/// noise of its top-1 (the truth itself cannot separate them at this
/// precision), `divergent` otherwise (it prefers one token by more than a
/// correct production's logits can move: by the oracle's, production erred;
/// by production's, the oracle did; by neither, both did).
///
/// Without it: the flip needs the two tokens' logits to move by
/// `production_margin + oracle_margin` relative to each other; a correct
/// production's logits lie within `noise` of the oracle's, so two of them
/// move up to `2 · noise` relative to each other. `near_tie` when the needed
/// move is within that, or the oracle's two logits are exactly equal (its
/// choice is only its lowest-index tie-break); `divergent` otherwise.
pub fn verdict_rule(
    production_margin: f64,
    oracle_margin: f64,
    deficits: Option<(f64, f64)>,
    noise: Option<f64>,
) -> (TokenVerdict, VerdictRule) {
    let noise = noise.unwrap_or(0.0);
    let near = |yes: bool| {
        if yes {
            TokenVerdict::NearTie
        } else {
            TokenVerdict::Divergent
        }
    };
    if let Some((prod, orc)) = deficits {
        return (near(prod <= noise && orc <= noise), VerdictRule::Truth);
    }
    if oracle_margin == 0.0 {
        return (TokenVerdict::NearTie, VerdictRule::ExactTie);
    }
    (
        near(production_margin + oracle_margin <= 2.0 * noise),
        VerdictRule::Margins,
    )
}
