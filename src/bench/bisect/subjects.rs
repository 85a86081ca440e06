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
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<9} {:<19} {:>3} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7}",
        "subject",
        "kind",
        "n",
        "exact",
        "pair",
        "ambig",
        "equiv",
        "region",
        "wrong",
        "crash",
        "masked",
        "probes",
        "wall s"
    );
    let mut subjects: Vec<&str> = rows.iter().map(|r| r.subject.as_str()).collect();
    subjects.dedup();
    for s in subjects {
        for kind in FaultKind::ALL {
            let rs: Vec<&Row> = rows
                .iter()
                .filter(|r| r.subject == s && r.kind == kind)
                .collect();
            if rs.is_empty() {
                continue;
            }
            let count = |o: Outcome| rs.iter().filter(|r| r.outcome == o).count();
            let ran: Vec<&&Row> = rs.iter().filter(|r| r.outcome != Outcome::Masked).collect();
            let med = |mut v: Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
            };
            let _ = writeln!(
                out,
                "{:<9} {:<19} {:>3} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7.0} {:>7.1}",
                s,
                kind.name(),
                rs.len(),
                count(Outcome::Exact),
                count(Outcome::Pair),
                count(Outcome::Ambiguous),
                rs.iter().filter(|r| r.equivalent == Some(true)).count(),
                count(Outcome::Region),
                count(Outcome::Wrong),
                count(Outcome::Crash),
                count(Outcome::Masked),
                med(ran.iter().map(|r| r.probes as f64).collect()),
                med(ran.iter().map(|r| r.wall.as_secs_f64()).collect()),
            );
        }
    }
    out
}
