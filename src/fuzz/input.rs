//! Batches that do not come from the strategies: a user's npz (`--input`),
//! refused with exit 2 when malformed and otherwise checked for pad-content
//! invariance, and the guard's own check (every generated breakage refused,
//! every unbroken batch accepted), which needs no IREE.

use super::case::{Fill, Inputs};
use super::compare::compare_clip;
use super::exec::Exec;
use super::validate::{validate, Malformed};
use super::{malformed, seed, strategy, FuzzError};
use parity_record::{
    ControlRecord, ErrorRecord, FuzzRecord, InvariantRecord, MinimalCase, Status, Violation,
};
use parity_tensor::Tensor;
use proptest::strategy::ValueTree;
use std::path::Path;

/// The guard over `cases` generated breakages (invariant `malformed`).
pub fn guard_check(exec: &Exec<'_>, run_seed: u64, cases: usize) -> InvariantRecord {
    let mut rec = InvariantRecord::new(
        "malformed",
        "batches breaking the contract in one way (hole, all padded, length mismatch/over bucket/negative, mask dtype, mel shape, too many clips) are refused before IREE, naming it",
        "refused",
    );
    let s = strategy::malformed(exec.fuzz, &exec.sources);
    let mut accepted_ok = true;
    let mut failures = Vec::new();
    for i in 0..cases {
        let case_seed = seed::case_seed(run_seed, "malformed", i);
        let Ok(tree) = seed::tree(&s, case_seed) else {
            continue;
        };
        let (draw, breakage, raw) = tree.current();
        let Ok(good) = draw.batch().inputs(exec.fuzz, &exec.sources) else {
            continue;
        };
        accepted_ok &= validate(exec.fuzz, &good.mel, &good.mask, good.lengths.as_ref()).is_ok();
        let Some((bad, fragment)) = malformed::apply(exec.fuzz, &good, &draw, breakage, raw) else {
            continue;
        };
        rec.cases_run += 1;
        match validate(exec.fuzz, &bad.mel, &bad.mask, bad.lengths.as_ref()) {
            Err(m) if m.to_string().contains(fragment) => {}
            other => {
                rec.cases_failed += 1;
                failures.push(format!(
                    "{breakage:?} (case seed {case_seed}): {:?}",
                    other.map(|_| "accepted")
                ));
            }
        }
    }
    if !failures.is_empty() {
        rec.status = Status::Fail;
        rec.note = Some(failures.join("; "));
    }
    rec.control = Some(ControlRecord {
        description: "the same batches unbroken are accepted".into(),
        fired: accepted_ok,
        max_diff: 0.0,
    });
    rec
}

fn load(path: &Path) -> Result<Inputs, String> {
    let npz = parity_tensor::read_npz(path).map_err(|e| e.to_string())?;
    let get = |k: &str| npz.get(k).map_err(|e| e.to_string());
    let (mel, mask) = (get("mel")?, get("mask").or_else(|_| get("mel_mask"))?);
    let lengths = if npz.contains("lengths") {
        Some(get("lengths")?)
    } else {
        None
    };
    Ok(Inputs { mel, mask, lengths })
}

/// A user's batch that passed the guard: its inputs, shape and valid frames.
pub struct Checked {
    inputs: Inputs,
    shape: parity_spec::FuzzShape,
    valid: Vec<usize>,
}

/// `--input FILE` read and put through the guard (no IREE involved): a
/// malformed batch is an input error naming the file and what is wrong.
pub fn load_checked(spec: &parity_spec::FuzzSpec, path: &Path) -> Result<Checked, ErrorRecord> {
    let case = format!("case `{}`", path.display());
    let inputs = load(path).map_err(|m| ErrorRecord::input(format!("{case}: {m}")))?;
    let (shape, valid) = validate(spec, &inputs.mel, &inputs.mask, inputs.lengths.as_ref())
        .and_then(|checked| finite_valid_frames(spec, &inputs).map(|()| checked))
        .map_err(|m| FuzzError::Malformed(m).to_record(&case))?;
    Ok(Checked {
        inputs,
        shape,
        valid,
    })
}

/// Refuses a batch with NaN or an infinity in a valid frame of `mel` (after
/// the guard accepted its layout). Such a value makes the valid outputs NaN or
/// infinite whatever leaks from the padding, so pad_content would compare NaN
/// with NaN and see no leak (issue 28: a padded hole passed "no difference").
fn finite_valid_frames(spec: &parity_spec::FuzzSpec, inputs: &Inputs) -> Result<(), Malformed> {
    let &[clips, bucket, features] = inputs.mel.shape() else {
        return Ok(());
    };
    let padded_value = if spec.mask.padded { 1.0 } else { 0.0 };
    for clip in 0..clips {
        for frame in (0..bucket).filter(|&k| inputs.mask.get_f64(clip * bucket + k) != padded_value)
        {
            for feature in 0..features {
                let v = inputs
                    .mel
                    .get_f64((clip * bucket + frame) * features + feature);
                if !v.is_finite() {
                    return Err(Malformed::Clip {
                        clip,
                        message: format!(
                            "key `mel` index [{clip}, {frame}, {feature}] is {v} in a valid \
                             frame: a non-finite valid value makes the outputs non-finite \
                             whatever leaks from the padding, so no invariant could see a \
                             leak (valid frames must be finite)"
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

/// `--input FILE` after the guard: pad-content invariance of that batch
/// (NaN, then +inf, then garbage in every padded frame of every clip).
pub fn check_file(exec: &Exec<'_>, path: &Path, checked: Checked, record: &mut FuzzRecord) {
    let case = format!("case `{}`", path.display());
    let Checked {
        inputs,
        shape,
        valid,
    } = checked;
    let tol = exec.fuzz.tolerance_of("pad_content");
    let reference = match exec.call(&inputs) {
        Ok(r) => r,
        Err(e) => return record.errors.push(e.to_record(&case)),
    };
    let mut rec = InvariantRecord::new(
        "pad_content",
        format!("{case}: NaN, +inf and garbage written into every padded frame"),
        super::run_one::tolerance_text(tol),
    );
    rec.max_diff = Some(0.0);
    let (b, t) = (shape.clips, shape.bucket);
    // The mask decides which frames are padded (a prefix or, if the contract allows, with holes).
    let padded_value = if exec.fuzz.mask.padded { 1.0 } else { 0.0 };
    let padded: Vec<Vec<usize>> = (0..b)
        .map(|c| {
            (0..t)
                .filter(|&k| inputs.mask.get_f64(c * t + k) == padded_value)
                .collect()
        })
        .collect();
    let valid_frames: Vec<String> = (0..b)
        .map(|c| {
            let v: Vec<usize> = (0..t).filter(|k| !padded[c].contains(k)).collect();
            super::case::runs(&v)
        })
        .collect();
    for fill in [
        Fill::Value(f32::NAN),
        Fill::Value(f32::INFINITY),
        Fill::Garbage(7),
    ] {
        let mut mel = inputs.mel.to_f64_vec();
        let f = exec.fuzz.mel.features;
        for (c, frames) in padded.iter().enumerate() {
            for (i, k) in frames.iter().enumerate() {
                for j in 0..f {
                    mel[(c * t + k) * f + j] = fill.at(i * f + j) as f64;
                }
            }
        }
        let written = Inputs {
            mel: match Tensor::from_f64_as(inputs.mel.dtype(), vec![b, t, f], &mel) {
                Ok(m) => m,
                Err(e) => {
                    return record
                        .errors
                        .push(ErrorRecord::input(format!("{case}: {e}")))
                }
            },
            mask: inputs.mask.clone(),
            lengths: inputs.lengths.clone(),
        };
        let out = match exec.call(&written) {
            Ok(o) => o,
            Err(e) => return record.errors.push(e.to_record(&case)),
        };
        rec.cases_run += 1;
        let diff = (0..b).fold(super::compare::Diff::default(), |d, c| {
            d.and(compare_clip(
                exec.fuzz, tol, &reference, c, valid[c], &out, c,
            ))
        });
        rec.max_diff = rec.max_diff.map(|m| m.max(diff.max_diff));
        if let Some(moved) = diff.moved {
            rec.status = Status::Fail;
            rec.cases_failed += 1;
            let change = format!("every padded frame = {}", fill.describe());
            record.violations.push(Violation {
                invariant: "pad_content".into(),
                seed: 0,
                shrink_steps: 0,
                target: None,
                summary: format!(
                    "pad_content: {case}: {change} moves `{}`{:?}: {} -> {}",
                    moved.output, moved.index, moved.expected, moved.actual
                ),
                case: MinimalCase {
                    function: exec.fuzz.function_for(shape),
                    clips: b,
                    bucket: t,
                    valid: valid.clone(),
                    valid_frames: valid_frames.clone(),
                    sources: vec![path.display().to_string()],
                    change,
                },
                moved,
            });
        }
    }
    record.invariants.push(rec);
}
