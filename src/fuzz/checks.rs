//! The check of each invariant on one drawn case: the entry point calls it
//! compares, over the valid region, and how the case is recorded.

use super::case::Batch;
use super::compare::{compare_clip, Diff};
use super::error::FuzzError;
use super::exec::Exec;
use super::invariants::{all_clips, minimal, unrelated, Outcome};
use super::strategy::Draw;
use parity_spec::FuzzTolerance;

/// One drawn case under check: the executor, the invariant's tolerance, the
/// draw and its batch.
pub(super) struct Check<'a, 'e> {
    /// Runs batches on the compiled entry points.
    pub exec: &'a Exec<'e>,
    /// The invariant's tolerance.
    pub tol: FuzzTolerance,
    /// The drawn case.
    pub draw: &'a Draw,
    /// The draw as a batch.
    pub base: Batch,
}

impl Check<'_, '_> {
    /// Zero padding vs garbage / ±Inf / NaN written into the padded frames.
    pub fn pad_content(&self) -> Result<Outcome, FuzzError> {
        let (exec, base) = (self.exec, &self.base);
        let writes = self.draw.pad_writes();
        if writes.is_empty() {
            return Err(FuzzError::Unsupported {
                invariant: "pad_content",
                problem: "a drawn clip has no padded frame",
            });
        }
        let mut written = base.clone();
        written.writes = writes;
        let (r, c) = (exec.run(base)?, exec.run(&written)?);
        let change = format!("padded {}", written.describe_writes());
        Ok(Outcome {
            diff: all_clips(exec, self.tol, base, &r, &c),
            case: minimal(exec, base, change),
        })
    }

    /// The first clip alone in the largest single-clip bucket vs in every
    /// other one it fits.
    pub fn bucket(&self) -> Result<Outcome, FuzzError> {
        let (exec, f) = (self.exec, self.exec.fuzz);
        let clip = self.draw.clips[0].clone();
        let mut diff = Diff::default();
        let mut largest = f
            .shapes
            .iter()
            .copied()
            .filter(|s| s.clips == 1)
            .collect::<Vec<_>>();
        largest.sort_by_key(|s| s.bucket);
        let Some(&big) = largest.last() else {
            return Err(FuzzError::Unsupported {
                invariant: "bucket",
                problem: "no single-clip shape",
            });
        };
        let one = |shape| Batch {
            shape,
            clips: vec![clip.clone()],
            writes: Vec::new(),
        };
        let r = exec.run(&one(big))?;
        let mut compared = Vec::new();
        for &s in largest
            .iter()
            .filter(|s| s.bucket != big.bucket && s.bucket >= clip.span())
        {
            let c = exec.run(&one(s))?;
            diff = diff.and(compare_clip(f, self.tol, &r, 0, clip.valid, &c, 0));
            compared.push(format!("b{}", s.bucket));
        }
        let change = format!(
            "the same clip in bucket(s) {} instead of b{}",
            compared.join(", "),
            big.bucket
        );
        Ok(Outcome {
            diff,
            case: minimal(exec, &one(big), change),
        })
    }

    /// The batch vs the batch with its clips reversed, clip k with clip n-1-k.
    pub fn batch_order(&self) -> Result<Outcome, FuzzError> {
        let (exec, base) = (self.exec, &self.base);
        let mut rev = base.clone();
        rev.clips.reverse();
        let (r, c) = (exec.run(base)?, exec.run(&rev)?);
        let n = base.shape.clips;
        let diff = (0..n).fold(Diff::default(), |d, k| {
            d.and(compare_clip(
                exec.fuzz,
                self.tol,
                &r,
                k,
                base.clips[k].valid,
                &c,
                n - 1 - k,
            ))
        });
        Ok(Outcome {
            diff,
            case: minimal(exec, base, "the clips in reverse order".into()),
        })
    }

    /// The first clip alone in the c1 entry point of its bucket vs first in the batch.
    pub fn batch_company(&self) -> Result<Outcome, FuzzError> {
        let (exec, base, f) = (self.exec, &self.base, self.exec.fuzz);
        let Some(single) = f.shape(1, base.shape.bucket) else {
            return Err(FuzzError::Unsupported {
                invariant: "batch_company",
                problem: "no c1 shape of this bucket",
            });
        };
        let alone = Batch {
            shape: single,
            clips: vec![base.clips[0].clone()],
            writes: Vec::new(),
        };
        let (r, c) = (exec.run(&alone)?, exec.run(base)?);
        let diff = compare_clip(f, self.tol, &r, 0, base.clips[0].valid, &c, 0);
        let change = format!(
            "clip 0 alone in `{}` vs first of {} in `{}`",
            f.function_for(single),
            base.shape.clips,
            f.function_for(base.shape)
        );
        Ok(Outcome {
            diff,
            case: minimal(exec, &alone, change),
        })
    }

    /// The batch, three unrelated cases, then the batch again in the same session.
    pub fn history(&self) -> Result<Outcome, FuzzError> {
        let (exec, base) = (self.exec, &self.base);
        let r = exec.run(base)?;
        for k in 0..3 {
            exec.run(&unrelated(self.draw, k))?;
        }
        let c = exec.run(base)?;
        Ok(Outcome {
            diff: all_clips(exec, self.tol, base, &r, &c),
            case: minimal(
                exec,
                base,
                "run again after three unrelated cases (NaN in their padded frames)".into(),
            ),
        })
    }

    /// The lengths output vs ceil(valid frames / n).
    pub fn lengths(&self) -> Result<Outcome, FuzzError> {
        let (exec, base) = (self.exec, &self.base);
        let r = exec.run(base)?;
        let diff = match super::compare::lengths_rule(exec.fuzz, &r, &base.valid()) {
            None => Diff::default(),
            Some((output, clip, got, want)) => {
                let d = (got - want as f64).abs();
                Diff {
                    max_diff: d,
                    moved: Some(parity_record::MovedElement {
                        output,
                        index: vec![clip],
                        expected: want as f64,
                        actual: got,
                        max_diff: d,
                        differing: 1,
                    }),
                }
            }
        };
        Ok(Outcome {
            diff,
            case: minimal(
                exec,
                base,
                "the lengths output vs ceil(valid frames / n)".into(),
            ),
        })
    }
}
