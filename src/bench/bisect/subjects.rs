//! The bundled subjects of the fault matrix, and its table.

use super::{FaultKind, MatrixError, Outcome, Row, Subject};
use parity_spec::Spec;
use std::path::{Path, PathBuf};

/// The bundled subjects: `basic` (examples/basic, every stage) and
/// `gemma3n` (subject/gemma3n's audio stages that compile fastest), with
/// their committed faults' places excluded. `root` is the repository.
pub fn bundled_subject(root: &Path, name: &str) -> Result<Subject, MatrixError> {
    let setup = |m: String| MatrixError::Setup(m);
    let load = |p: PathBuf| Spec::load(&p).map_err(|e| setup(format!("{}: {e}", p.display())));
    match name {
        "basic" => {
            let dir = root.join("examples/basic");
            // The committed fault (model_faulty.mlir): the variance divide.
            let model = std::fs::read_to_string(dir.join("model.mlir"))
                .map_err(|e| setup(format!("examples/basic/model.mlir: {e}")))?;
            let line = model
                .lines()
                .position(|l| l.contains("%var = stablehlo.divide"))
                .map_or(0, |i| i + 1);
            Ok(Subject {
                name: "basic".into(),
                spec: load(dir.join("stages.yaml"))?,
                case: "default".into(),
                stages: [
                    "layer_norm",
                    "strided_conv",
                    "scores",
                    "masked_softmax",
                    "attend",
                    "proj_bf16",
                ]
                .map(String::from)
                .to_vec(),
                exclude: vec![format!("model.mlir\":{line}:")],
            })
        }
        "gemma3n" => {
            let dir = root.join("subject/gemma3n");
            let faults = std::fs::read_to_string(dir.join("faults/faults.json"))
                .map_err(|e| setup(format!("faults.json: {e}")))?;
            let faults: serde_json::Value =
                serde_json::from_str(&faults).map_err(|e| setup(format!("faults.json: {e}")))?;
            let exclude = faults["faults"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f["localise_to"]["path"].as_str().map(String::from))
                .collect();
            Ok(Subject {
                name: "gemma3n".into(),
                spec: load(dir.join("stages.yaml"))?,
                case: "full128".into(),
                stages: GEMMA3N_STAGES.map(String::from).to_vec(),
                exclude,
            })
        }
        other => Err(setup(format!(
            "no bundled subject `{other}` (basic, gemma3n)"
        ))),
    }
}

/// The gemma3n stages the matrix injects into.
pub const GEMMA3N_STAGES: [&str; 4] = [
    "sscp_conv_0",
    "conformer_0_feed_forward_start",
    "conformer_0_light_conv",
    "conformer_1_attention",
];

/// Per kind: counts of each outcome (`equiv`: ambiguous answers whose
/// repairs were shown to compute the same function), median probes and wall
/// time.
pub fn table(rows: &[Row]) -> String {
    use std::fmt::Write as _;
    let mut out = format!("{:<9} {:<19} {}\n", "subject", "kind", OUTCOME_HEADER);
    let mut subjects: Vec<&str> = rows.iter().map(|r| r.subject.as_str()).collect();
    subjects.dedup();
    for s in subjects {
        for kind in FaultKind::ALL {
            let rs: Vec<Scored> = rows
                .iter()
                .filter(|r| r.subject == s && r.kind == kind)
                .map(|r| Scored {
                    outcome: r.outcome,
                    equivalent: r.equivalent,
                    reproduces: r.reproduces,
                    probes: r.probes,
                    wall: r.wall,
                })
                .collect();
            if !rs.is_empty() {
                let _ = writeln!(out, "{s:<9} {:<19} {}", kind.name(), outcome_cells(&rs));
            }
        }
    }
    out
}

/// The outcome columns of a table row (`repro`: reproducers that fail as
/// they should, of those bisect wrote and ran).
pub const OUTCOME_HEADER: &str =
    "  n  exact   pair  ambig  equiv region  wrong  crash  masked  repro  probes  wall s";

/// What a row of a table counts.
pub struct Scored {
    /// The outcome.
    pub outcome: Outcome,
    /// Whether an ambiguous answer's repairs are one function.
    pub equivalent: Option<bool>,
    /// Whether the reproducer fails as it should (none when not checked).
    pub reproduces: Option<bool>,
    /// Probes bisect used.
    pub probes: usize,
    /// Wall time.
    pub wall: std::time::Duration,
}

/// The outcome columns for some faults: counts of each outcome, the
/// reproducers that fail of those checked, median probes and wall time of
/// those not masked.
pub fn outcome_cells(rs: &[Scored]) -> String {
    let count = |o: Outcome| rs.iter().filter(|r| r.outcome == o).count();
    let ran: Vec<&Scored> = rs.iter().filter(|r| r.outcome != Outcome::Masked).collect();
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
    };
    let checked = rs.iter().filter(|r| r.reproduces.is_some()).count();
    let repro = format!(
        "{}/{checked}",
        rs.iter().filter(|r| r.reproduces == Some(true)).count()
    );
    format!(
        "{:>3} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>6} {:>7.0} {:>7.1}",
        rs.len(),
        count(Outcome::Exact),
        count(Outcome::Pair),
        count(Outcome::Ambiguous),
        rs.iter().filter(|r| r.equivalent == Some(true)).count(),
        count(Outcome::Region),
        count(Outcome::Wrong),
        count(Outcome::Crash),
        count(Outcome::Masked),
        repro,
        med(ran.iter().map(|r| r.probes as f64).collect()),
        med(ran.iter().map(|r| r.wall.as_secs_f64()).collect()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn scored(outcome: Outcome, reproduces: Option<bool>, wall: f64) -> Scored {
        Scored {
            outcome,
            equivalent: None,
            reproduces,
            probes: 5,
            wall: Duration::from_secs_f64(wall),
        }
    }

    #[test]
    fn the_repro_column_counts_failing_reproducers_of_those_checked() {
        let cells = outcome_cells(&[
            scored(Outcome::Exact, Some(true), 2.0),
            scored(Outcome::Ambiguous, Some(false), 4.0),
            scored(Outcome::Masked, None, 100.0),
        ]);
        let cols: Vec<&str> = cells.split_whitespace().collect();
        let header: Vec<&str> = OUTCOME_HEADER.split_whitespace().collect();
        // "wall s" is two words in the header.
        assert_eq!(cols.len() + 1, header.len(), "{cells}");
        let at = |name: &str| cols[header.iter().position(|h| *h == name).unwrap()];
        assert_eq!(at("n"), "3");
        assert_eq!(at("exact"), "1");
        assert_eq!(at("masked"), "1");
        assert_eq!(at("repro"), "1/2");
        // The median wall time leaves the masked fault out.
        assert_eq!(cols[cols.len() - 1], "2.0");
    }
}
