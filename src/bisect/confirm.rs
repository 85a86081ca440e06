//! The confirmation probe of inferred evidence. The f64 shadow names the
//! operations whose own error exceeds rounding; that can be an innocent one
//! (a model's deliberate bf16 `convert`, when the real fault is semantic and
//! elsewhere). A candidate is accepted only when the region, run in
//! production precision with that candidate's results replaced by the
//! shadow's values (rounded to their types), ends on the oracle tensor at the
//! failing checkpoint within the checkpoint budget, where it did not before.
//! Every candidate is a slice of one module: one compile, one probe.

use super::error::BisectError;
use super::measure::{loc_label, value_metrics, CHECKPOINT_ULP_BUDGET};
use super::probe::{Cut, Prober};
use super::Program;
use parity_mlir::ValueId;
use parity_record::{Confirmation, ConfirmationCandidate, ValueMetrics};
use parity_tensor::Tensor;

/// Candidates confirmed in one probe at most (program order).
pub const MAX_CANDIDATES: usize = 8;

/// One operation to confirm: its own error and its results per the shadow,
/// rounded to the result types.
pub struct Candidate {
    /// Index of the operation.
    pub op: usize,
    /// Its own error (the op alone vs the shadow, ULPs at max).
    pub local_ulps: f64,
    /// Its results as the shadow computes them, rounded to their types.
    pub results: Vec<(ValueId, Tensor)>,
}

/// The region's end where it should equal the oracle.
pub struct End<'t> {
    /// The failing checkpoint's value.
    pub value: ValueId,
    /// The oracle tensor there.
    pub oracle: &'t Tensor,
    /// Its name, for the report (`oracle:<name>`).
    pub oracle_name: &'t str,
}

/// Runs the region fed by `feed` once as it is and once per candidate with
/// the candidate's results replaced, all in one probe, and holds each end
/// to the oracle.
pub fn confirm(
    program: &Program,
    prober: &mut Prober,
    feed: &[(ValueId, Tensor)],
    end: &End,
    candidates: &[Candidate],
) -> Result<Confirmation, BisectError> {
    let func = program.func;
    let untried = candidates.len().saturating_sub(MAX_CANDIDATES);
    let candidates = &candidates[..candidates.len().min(MAX_CANDIDATES)];
    let mut cuts = vec![Cut {
        name: "confirm_before".into(),
        given: feed.iter().map(|(v, t)| (*v, t)).collect(),
        want: vec![end.value],
    }];
    // A candidate defining the end itself needs no run: its replaced value is the end.
    let mut ran = Vec::new();
    for (k, c) in candidates.iter().enumerate() {
        if c.results.iter().any(|(v, _)| *v == end.value) {
            continue;
        }
        let mut given: Vec<(ValueId, &Tensor)> = c.results.iter().map(|(v, t)| (*v, t)).collect();
        given.extend(
            feed.iter()
                .filter(|(v, _)| !c.results.iter().any(|(r, _)| r == v))
                .map(|(v, t)| (*v, t)),
        );
        cuts.push(Cut {
            name: format!("confirm_{k}"),
            given,
            want: vec![end.value],
        });
        ran.push(k);
    }
    let mut outs = prober.run(
        &cuts,
        false,
        "confirmation: the region with a shadow candidate's result from the f64 shadow",
    )?;
    let against = format!("oracle:{}", end.oracle_name);
    let measure = |t: &Tensor| -> Result<ValueMetrics, BisectError> {
        value_metrics(func, end.value, t, end.oracle, &against, program.budget)
    };
    let before = measure(&outs[0].remove(0))?;
    let failed_before = before.ulps_at_max > CHECKPOINT_ULP_BUDGET;
    let mut records = Vec::new();
    for (k, c) in candidates.iter().enumerate() {
        let after = match ran.iter().position(|&r| r == k) {
            Some(i) => measure(&outs[i + 1].remove(0))?,
            None => {
                let own = c
                    .results
                    .iter()
                    .find(|(v, _)| *v == end.value)
                    .map(|(_, t)| t);
                match own {
                    Some(t) => measure(t)?,
                    None => continue,
                }
            }
        };
        let holds = failed_before && after.ulps_at_max <= CHECKPOINT_ULP_BUDGET;
        let op = &func.ops[c.op];
        records.push(ConfirmationCandidate {
            op_index: c.op,
            op_name: op.name.clone(),
            loc: loc_label(&op.loc),
            local_ulps: c.local_ulps,
            after,
            holds,
        });
    }
    Ok(Confirmation {
        budget_ulps: CHECKPOINT_ULP_BUDGET,
        confirmed: records.iter().find(|c| c.holds).map(|c| c.op_index),
        before,
        candidates: records,
        untried,
    })
}

/// The report's note on a confirmation: what held, or what the shadow
/// flagged and why it is not claimed.
pub fn note(c: &Confirmation, budget: &str) -> String {
    let list = |f: &dyn Fn(&ConfirmationCandidate) -> bool| {
        c.candidates
            .iter()
            .filter(|x| f(x))
            .map(|x| {
                format!(
                    "#{} {} (own error {:.1} ULPs; end {:.1} ULPs)",
                    x.op_index, x.op_name, x.local_ulps, x.after.ulps_at_max
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match c.confirmed {
        Some(o) => {
            let x = c.candidates.iter().find(|x| x.op_index == o);
            let mut s = format!(
                "confirmed: with #{o}'s result taken from the f64 shadow (rounded to its type), \
                 the region's end matches the oracle within {} ULPs of {budget} ({:.1} ULPs; \
                 {:.1} as it is)",
                c.budget_ulps,
                x.map_or(f64::NAN, |x| x.after.ulps_at_max),
                c.before.ulps_at_max
            );
            let rejected = list(&|x| !x.holds && x.op_index < o);
            if !rejected.is_empty() {
                s.push_str(&format!(
                    "; earlier shadow candidates that do not explain it: {rejected}"
                ));
            }
            s
        }
        None if c.before.ulps_at_max <= c.budget_ulps => format!(
            "the f64 shadow flags {} but the region, fed by the oracle's tensors at its \
             passing checkpoints, already matches the oracle at its end ({:.1} ULPs of {budget}): \
             nothing to confirm, no operation claimed",
            list(&|_| true),
            c.before.ulps_at_max
        ),
        None => format!(
            "the f64 shadow flags {}{}, more error than rounding explains, but with its result \
             taken from the shadow the region's end still misses the oracle ({:.1} ULPs of \
             {budget} as it is, budget {}): the confirmation fails, so no operation is named \
             from the shadow (a deliberate precision drop, or a fault the shadow replays)",
            list(&|_| true),
            if c.untried > 0 {
                format!(" (and {} more over the budget, not tried)", c.untried)
            } else {
                String::new()
            },
            c.before.ulps_at_max,
            c.budget_ulps
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(ulps: f64) -> ValueMetrics {
        ValueMetrics {
            value: "%9".into(),
            against: "oracle:out".into(),
            max_abs: ulps * 1e-7,
            rms: 0.0,
            max_ref: 1.0,
            ulps_at_max: ulps,
            nonfinite: 0,
        }
    }

    fn candidate(op: usize, after: f64, holds: bool) -> ConfirmationCandidate {
        ConfirmationCandidate {
            op_index: op,
            op_name: "stablehlo.convert".into(),
            loc: "m.mlir:3:5".into(),
            local_ulps: 65536.0,
            after: metrics(after),
            holds,
        }
    }

    #[test]
    fn notes_say_what_held_and_what_did_not() {
        let c = Confirmation {
            budget_ulps: 64.0,
            before: metrics(3e6),
            candidates: vec![candidate(3, 3e6, false), candidate(7, 2.0, true)],
            confirmed: Some(7),
            untried: 0,
        };
        let n = note(&c, "f32");
        assert!(n.starts_with("confirmed: with #7's result"), "{n}");
        assert!(n.contains("do not explain it: #3 stablehlo.convert"), "{n}");
        let c = Confirmation {
            confirmed: None,
            candidates: vec![candidate(3, 3e6, false)],
            untried: 2,
            ..c
        };
        let n = note(&c, "f32");
        assert!(n.contains("the confirmation fails"), "{n}");
        assert!(n.contains("(and 2 more over the budget, not tried)"), "{n}");
        assert!(n.contains("#3 stablehlo.convert"), "{n}");
    }
}
