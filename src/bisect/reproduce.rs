//! Bisect's last step: what was localised, written as a reproducer
//! directory ([`super::repro`]), run once by bisect itself, and recorded.

use super::error::BisectError;
use super::localise::Localised;
use super::measure::{self, max_finite_abs, ulp_at, LOCAL_ULP_BUDGET};
use super::probe::Prober;
use super::{repro, Program};
use crate::target::Target;
use parity_mlir::ValueId;
use parity_record::{BisectRecord, Evidence, ReproducerCheck};
use parity_tensor::{DType, Tensor};
use std::path::Path;

/// Writes the reproducer of `found` to `dir` and runs it; a failure to do
/// either is an error in the report, not of the bisect.
pub(super) fn reproduce(
    found: &Localised,
    program: &Program,
    prober: &Prober,
    target: &Target,
    dir: &Path,
    report: &mut BisectRecord,
) {
    let (ops, inputs, expected, evidence) = match found {
        Localised::Op {
            op_index,
            evidence,
            inputs,
            expected,
        } => (vec![*op_index], inputs, expected, *evidence),
        Localised::Region {
            ops,
            inputs,
            expected,
            ..
        } => (ops.clone(), inputs, expected, Evidence::Region),
    };
    let thresholds = repro_thresholds(program, expected, evidence);
    let written = match repro::write(
        dir,
        prober.module,
        program.func,
        &ops,
        inputs,
        expected,
        &thresholds,
        target,
        &prober.options,
        &prober.source_name,
        evidence,
    ) {
        Ok(written) => written,
        Err(e) => {
            report.errors.push(reproducer_error("writing", dir, e));
            return;
        }
    };
    report.reproducer = Some(dir.display().to_string());
    match repro::verify(prober, &written) {
        Ok(check) => {
            if !check.reproduces {
                report.notes.push(not_reproduced_note(dir, &check));
            }
            report.reproducer_check = Some(check);
        }
        Err(e) => report.errors.push(reproducer_error("running", dir, e)),
    }
}

/// The report's error for a reproducer that could not be written or run.
fn reproducer_error(
    action: &'static str,
    dir: &Path,
    e: BisectError,
) -> parity_record::ErrorRecord {
    BisectError::Reproducer {
        action,
        dir: dir.to_path_buf(),
        source: Box::new(e),
    }
    .to_record()
}

/// The note for a reproducer that passes on its own.
fn not_reproduced_note(dir: &Path, check: &ReproducerCheck) -> String {
    format!(
        "the reproducer in {} does not fail on its own: {}; the evidence \
         above stands, but the slice alone does not show it",
        dir.display(),
        check
            .outputs
            .iter()
            .map(|o| format!("max_abs {:.3e} <= {:.3e}", o.max_abs, o.threshold))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The absolute threshold of each expected value in the reproducer: what
/// bisect judged it by. A stage output with a `max_abs` criterion keeps the
/// spec's bound; otherwise the ULP budget (checkpoint budget for oracle
/// evidence, local budget for the shadow's) of the budget dtype at the
/// expected value's largest magnitude (floored at the dtype's smallest
/// normal, so an all-zero value still gets a usable threshold).
fn repro_thresholds(
    program: &Program,
    expected: &[(ValueId, Tensor)],
    evidence: Evidence,
) -> Vec<f64> {
    let by_oracle = matches!(evidence, Evidence::Oracle | Evidence::Region);
    expected
        .iter()
        .map(|(v, t)| {
            let spec_max_abs = program
                .outputs
                .iter()
                .position(|o| o == v)
                .filter(|_| by_oracle)
                .and_then(|i| program.stage.outputs.get(i))
                .and_then(|o| o.tolerance.as_ref())
                .and_then(|c| {
                    c.iter().find_map(|c| match c {
                        parity_compare::Criterion::MaxAbs(x) => Some(*x),
                        _ => None,
                    })
                });
            spec_max_abs.unwrap_or_else(|| {
                let ulps = if by_oracle {
                    measure::CHECKPOINT_ULP_BUDGET
                } else {
                    LOCAL_ULP_BUDGET
                };
                let floor = match program.budget {
                    DType::F16 => 6.103_515_625e-5,
                    _ => f32::MIN_POSITIVE as f64,
                };
                ulps * ulp_at(max_finite_abs(t).max(floor), program.budget)
            })
        })
        .collect()
}
