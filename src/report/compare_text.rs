//! `parity compare` for people.

use super::sanitize;
use super::table::num;
use parity_compare::Criterion;
use parity_record::{Check, CompareRecord, Status};
use std::fmt::Write as _;

/// The compare record as terminal text (controls in file names escaped).
pub fn text(c: &CompareRecord) -> String {
    let mut s = String::new();
    let _ = write!(s, "{} vs {}", c.actual.file, c.expected.file);
    if let Some(m) = &c.metrics {
        let _ = writeln!(
            s,
            ": {} elements ({} masked out), dtype {} vs {}, shape {:?}",
            m.count,
            m.masked_out,
            c.actual.dtype.as_deref().unwrap_or("?"),
            c.expected.dtype.as_deref().unwrap_or("?"),
            c.actual.shape.as_deref().unwrap_or(&[])
        );
        let _ = writeln!(
            s,
            "max_abs {}  mean_abs {}  rms {}  rel_l2 {}  cosine {}  max_ulp {} ({})",
            num(m.max_abs),
            num(m.mean_abs),
            num(m.rms),
            num(m.rel_l2),
            num(m.cosine),
            m.max_ulp.map_or("-".to_string(), |u| u.to_string()),
            m.ulp_dtype.as_deref().unwrap_or("-")
        );
        for crit in &c.criteria {
            match &crit.criterion {
                Check::Tolerance(Criterion::Allclose { atol, rtol, .. }) => {
                    let _ = writeln!(
                        s,
                        "allclose(atol={atol:e}, rtol={rtol:e}): {} mismatches, {} NaN mismatches, {} Inf mismatches",
                        m.mismatches, m.nan_mismatch, m.inf_mismatch
                    );
                }
                other => {
                    let _ = writeln!(
                        s,
                        "{}: {} (observed {}, threshold {})",
                        other.name(),
                        if crit.passed { "holds" } else { "fails" },
                        num(crit.observed),
                        num(crit.threshold)
                    );
                }
            }
        }
        if let Some(v) = &m.first_violation {
            let _ = writeln!(
                s,
                "first violation at {:?}: actual {} expected {}",
                v.index, v.actual, v.expected
            );
        }
    } else {
        s.push('\n');
    }
    for e in &c.errors {
        let _ = writeln!(s, "error ({}): {}", e.kind.name(), e.message);
    }
    let _ = writeln!(
        s,
        "{}",
        match c.status {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            _ => "ERROR",
        }
    );
    sanitize::terminal(&s).into_owned()
}
