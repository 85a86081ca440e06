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
                .map(|r| (r.outcome, r.equivalent, r.probes, r.wall))
                .collect();
            if !rs.is_empty() {
                let _ = writeln!(out, "{s:<9} {:<19} {}", kind.name(), outcome_cells(&rs));
            }
        }
    }
    out
}

/// The outcome columns of a table row.
pub const OUTCOME_HEADER: &str =
    "  n  exact   pair  ambig  equiv region  wrong  crash  masked  probes  wall s";

/// What a row of a table counts: the outcome, whether an ambiguous answer's
/// repairs are one function, probes and wall time.
pub type Scored = (Outcome, Option<bool>, usize, std::time::Duration);

/// The outcome columns for some faults: counts of each outcome, median
/// probes and wall time of those not masked.
pub fn outcome_cells(rs: &[Scored]) -> String {
    let count = |o: Outcome| rs.iter().filter(|r| r.0 == o).count();
    let ran: Vec<&Scored> = rs.iter().filter(|r| r.0 != Outcome::Masked).collect();
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
    };
    format!(
        "{:>3} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7.0} {:>7.1}",
        rs.len(),
        count(Outcome::Exact),
        count(Outcome::Pair),
        count(Outcome::Ambiguous),
        rs.iter().filter(|r| r.1 == Some(true)).count(),
        count(Outcome::Region),
        count(Outcome::Wrong),
        count(Outcome::Crash),
        count(Outcome::Masked),
        med(ran.iter().map(|r| r.2 as f64).collect()),
        med(ran.iter().map(|r| r.3.as_secs_f64()).collect()),
    )
}
