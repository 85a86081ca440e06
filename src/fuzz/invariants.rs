//! The invariants a padded batch must keep, each as a check of one drawn
//! case (two or more entry point calls compared over the valid region) and
//! a negative control (the same comparison on inputs that must differ, so
//! the check is shown able to fail).

use super::case::{Batch, Clip, Fill, Write};
use super::checks::Check;
use super::compare::{compare_clip, Diff};
use super::error::FuzzError;
use super::exec::Exec;
use super::strategy::Draw;
use parity_record::MinimalCase;
use parity_spec::{FuzzShape, FuzzTolerance};

/// The result of one check.
pub struct Outcome {
    /// The comparison (a violation when `moved` is set).
    pub diff: Diff,
    /// The case as checked.
    pub case: MinimalCase,
}

/// One invariant: its name, what it compares, the shapes it draws from.
pub struct Invariant {
    /// Key in `fuzz.tolerance` and the record.
    pub name: &'static str,
    /// What is compared with what.
    pub description: &'static str,
    /// Shapes cases are drawn from (empty: skipped).
    pub shapes: Vec<FuzzShape>,
    /// Largest valid prefix drawn.
    pub max_valid: usize,
    /// Whether every drawn clip has a padded frame.
    pub need_pad: bool,
    /// Why it is skipped, when `shapes` is empty.
    pub skip: Option<String>,
}

/// The invariants the compiled shapes allow, in run order.
pub fn plan(exec: &Exec<'_>) -> Vec<Invariant> {
    let f = exec.fuzz;
    let singles: Vec<FuzzShape> = f.shapes.iter().copied().filter(|s| s.clips == 1).collect();
    let multi: Vec<FuzzShape> = f.shapes.iter().copied().filter(|s| s.clips >= 2).collect();
    let company: Vec<FuzzShape> = multi
        .iter()
        .copied()
        .filter(|m| f.shape(1, m.bucket).is_some())
        .collect();
    let smallest = singles.iter().map(|s| s.bucket).min().unwrap_or(0);
    let skip_if = |empty: bool, why: &str| empty.then(|| why.to_string());
    vec![
        Invariant {
            name: "pad_content",
            description: "zero padding vs garbage / ±Inf / NaN written into padded frames: the valid outputs must not move",
            shapes: f.shapes.clone(),
            max_valid: usize::MAX,
            need_pad: true,
            skip: None,
        },
        Invariant {
            name: "bucket",
            description: "one clip in every single-clip bucket vs the largest: the valid outputs must agree",
            shapes: if singles.len() >= 2 { singles.iter().copied().filter(|s| s.bucket == smallest).collect() } else { Vec::new() },
            max_valid: smallest,
            need_pad: false,
            skip: skip_if(singles.len() < 2, "needs two single-clip buckets"),
        },
        Invariant {
            name: "batch_order",
            description: "clips reversed in the batch: each clip's valid outputs must move with it",
            shapes: multi.clone(),
            max_valid: usize::MAX,
            need_pad: false,
            skip: skip_if(multi.is_empty(), "needs an entry point with two or more clips"),
        },
        Invariant {
            name: "batch_company",
            description: "a clip alone (c1) vs the same clip first among fillers: its valid outputs must agree",
            shapes: company.clone(),
            max_valid: usize::MAX,
            need_pad: false,
            skip: skip_if(company.is_empty(), "needs a c1 and a multi-clip entry point of one bucket"),
        },
        Invariant {
            name: "history",
            description: "a case, then three unrelated cases (NaN padding), then the case again in the same session: bit for bit",
            shapes: f.shapes.clone(),
            max_valid: usize::MAX,
            need_pad: false,
            skip: None,
        },
    ]
}

/// The record's description of `batch`, with what was changed in it.
pub(super) fn minimal(exec: &Exec<'_>, batch: &Batch, change: String) -> MinimalCase {
    MinimalCase {
        function: exec.fuzz.function_for(batch.shape),
        clips: batch.shape.clips,
        bucket: batch.shape.bucket,
        valid: batch.valid(),
        valid_frames: batch.valid_frames(),
        sources: batch.sources(&exec.sources),
        change,
    }
}

/// Every clip of `batch` compared between outputs `r` and `c`, clip k with clip k.
pub(super) fn all_clips(
    exec: &Exec<'_>,
    tol: FuzzTolerance,
    batch: &Batch,
    r: &[parity_tensor::Tensor],
    c: &[parity_tensor::Tensor],
) -> Diff {
    (0..batch.shape.clips).fold(Diff::default(), |d, k| {
        d.and(compare_clip(
            exec.fuzz,
            tol,
            r,
            k,
            batch.clips[k].valid,
            c,
            k,
        ))
    })
}

/// Runs invariant `name` on `draw`.
pub fn check(
    exec: &Exec<'_>,
    name: &str,
    tol: FuzzTolerance,
    draw: &Draw,
) -> Result<Outcome, FuzzError> {
    let check = Check {
        exec,
        tol,
        draw,
        base: draw.batch(),
    };
    match name {
        "pad_content" => check.pad_content(),
        "bucket" => check.bucket(),
        "batch_order" => check.batch_order(),
        "batch_company" => check.batch_company(),
        "history" => check.history(),
        "lengths" => check.lengths(),
        other => Err(FuzzError::UnknownInvariant(other.to_string())),
    }
}

/// An unrelated case of the draw's shape: other offsets, NaN padding.
pub(super) fn unrelated(draw: &Draw, k: usize) -> Batch {
    let clips: Vec<Clip> = draw
        .clips
        .iter()
        .map(|c| Clip::prefix(c.valid.saturating_sub(k + 1).max(1), c.source, 0))
        .collect();
    let writes = clips
        .iter()
        .enumerate()
        .filter(|(_, c)| c.valid < draw.shape.bucket)
        .map(|(i, c)| Write {
            clip: i,
            start: c.valid,
            end: draw.shape.bucket,
            fill: Fill::Value(f32::NAN),
        })
        .collect();
    Batch {
        shape: draw.shape,
        clips,
        writes,
    }
}

/// The negative control of invariant `name` on `draw`: a comparison the
/// invariant's check would make, on inputs that must give different valid
/// outputs. Returns (what was changed, the difference).
pub fn control(exec: &Exec<'_>, name: &str, draw: &Draw) -> Result<(String, Diff), FuzzError> {
    let f = exec.fuzz;
    let tol = FuzzTolerance::Exact;
    let base = draw.batch();
    let t = draw.target;
    let valid = base.clips[t].valid;
    match name {
        "pad_content" | "history" => {
            // A wrong mask: the frames written are the clip's last valid ones.
            let n = draw.count.min(valid).max(1);
            let frames = base.clips[t].frames();
            let last = &frames[frames.len() - n..];
            let mut wrong = base.clone();
            wrong.writes = Write::covering(t, last, Fill::Garbage(1));
            let (r, c) = (exec.run(&base)?, exec.run(&wrong)?);
            let what = format!("garbage written into clip {t}'s last {n} valid frame(s) ({}), as a mask calling them padded would allow", super::case::runs(last));
            Ok((what, all_clips(exec, tol, &base, &r, &c)))
        }
        "bucket" | "batch_company" => {
            // A different clip on the other side of the comparison.
            let mut other = base.clone();
            other.clips[0].offset = if base.clips[0].offset > 0 { 0 } else { 1 };
            other.clips[0].valid = base.clips[0].valid;
            let (r, c) = (exec.run(&base)?, exec.run(&other)?);
            let what = format!(
                "clip 0 compared with the same clip shifted to source offset {}",
                other.clips[0].offset
            );
            Ok((
                what,
                compare_clip(f, tol, &r, 0, base.clips[0].valid, &c, 0),
            ))
        }
        "batch_order" => {
            // The outputs of the reversed batch compared unpermuted.
            let mut rev = base.clone();
            rev.clips.reverse();
            if rev.clips[0] == base.clips[0] {
                rev.clips[0].offset = if base.clips[0].offset > 0 { 0 } else { 1 };
            }
            let (r, c) = (exec.run(&base)?, exec.run(&rev)?);
            let what =
                "the reversed batch's outputs compared without undoing the permutation".to_string();
            Ok((
                what,
                compare_clip(f, tol, &r, 0, base.clips[0].valid, &c, 0),
            ))
        }
        other => Err(FuzzError::UnknownInvariant(other.to_string())),
    }
}
