//! Gate wall times on a spec: cold (empty artifact cache), warm (the same
//! cache again) and after editing one public function of an MLIR module
//! (a copy of the module, in the work directory), each run through the
//! same library call as `parity check`.

use crate::run::{self, RunOptions};
use parity_record::{Mode, Status};
use parity_spec::{ModuleSource, Spec};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why the gate could not be timed.
#[derive(Debug, thiserror::Error)]
pub enum GateBenchError {
    /// A module or work file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// No MLIR module declares the function to edit.
    #[error("no MLIR module of {spec} has a public function `{function}` to edit")]
    NoFunction {
        /// The spec file.
        spec: String,
        /// The function asked for (or `any` when none was named).
        function: String,
    },
}

/// One timed gate run.
#[derive(Clone, Debug)]
pub struct GateRow {
    /// Which run: cold, warm or one function changed.
    pub run: String,
    /// Wall time of the whole run (compile, execute, compare).
    pub wall: Duration,
    /// The run's status (a bench of a failing gate is still a bench, but says so).
    pub status: Status,
    /// CPU time of the run: this process and the compiler processes it ran.
    pub cpu: Duration,
    /// Artifacts the run compiled (entries it added to the cache).
    pub compiled: usize,
    /// Artifacts in the cache after the run.
    pub entries: usize,
    /// The 1-minute load average when the run ended.
    pub load: Option<f64>,
}

/// Where the edit went.
#[derive(Clone, Debug)]
pub struct Edit {
    /// The module's name in the spec.
    pub module: String,
    /// The edited function.
    pub function: String,
    /// What was changed, e.g. ``constant `1.000000e+00` -> `1.000000119e0` ``.
    pub change: String,
}

/// Times the gate on `spec` three times (cold, warm, one function edited),
/// with its artifact cache and the edited module under `work`, on
/// `targets` (all in one run; none: the spec's first). With two or more,
/// each target's warm gate alone follows (`warm, TARGET only`), so the
/// run over all can be set against the runs one after the other.
pub fn measure(
    spec: &Spec,
    work: &Path,
    function: Option<&str>,
    compiler_lib: Option<PathBuf>,
    targets: &[String],
) -> Result<(Edit, Vec<GateRow>), GateBenchError> {
    let cache_dir = work.join("cache");
    let options = RunOptions {
        modes: vec![Mode::Isolated, Mode::Chained],
        cache_dir: cache_dir.clone(),
        compiler_lib,
        cases: vec![],
        stages: vec![],
        shard: None,
        target: None,
    };
    let (edited, edit) = edit_one_function(spec, work, function)?;
    let mut rows = Vec::new();
    let mut known = 0;
    let alone: Vec<(String, &[String])> = if targets.len() > 1 {
        targets
            .iter()
            .map(|t| (format!("warm, {t} only"), std::slice::from_ref(t)))
            .collect()
    } else {
        Vec::new()
    };
    let runs = [
        ("cold".to_string(), spec, targets),
        ("warm".to_string(), spec, targets),
        ("one function edited".to_string(), &edited, targets),
    ]
    .into_iter()
    .chain(alone.into_iter().map(|(label, t)| (label, spec, t)));
    for (label, s, on) in runs {
        let t = Instant::now();
        let cpu = super::process_and_children_cpu();
        let record = run::execute_targets(s, &options, on, &mut |_| {});
        let wall = t.elapsed();
        let now = count_entries(&cache_dir)?;
        rows.push(GateRow {
            run: label,
            wall,
            status: record.derived_status(),
            cpu: super::process_and_children_cpu().saturating_sub(cpu),
            compiled: now.saturating_sub(known),
            entries: now,
            load: super::load_average(),
        });
        known = now;
    }
    Ok((edit, rows))
}

/// A copy of `spec` whose first MLIR module holding `function` (or, when
/// None, any public function) is a copy under `work` with that function's
/// first float constant moved to the next f32 up (a real edit: comments do not
/// survive normalisation, so a comment alone changes no artifact), or, in a
/// function without one, a comment line added.
fn edit_one_function(
    spec: &Spec,
    work: &Path,
    function: Option<&str>,
) -> Result<(Spec, Edit), GateBenchError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GateBenchError::Io { path, source }
    };
    for (name, module) in &spec.subject.modules {
        let ModuleSource::Mlir(path) = &module.source else {
            continue;
        };
        // Read as the runner reads modules (a .mlir.gz is inflated).
        let bytes = parity_tensor::read_module_bytes(path).map_err(io(path))?;
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let Some((func, at)) = find_public_function(&text, function) else {
            continue;
        };
        let end = text[at..].find("func.func").map_or(text.len(), |i| at + i);
        let mut changed = String::with_capacity(text.len() + 64);
        let change = match first_float_constant(&text[at..end]) {
            Some((start, len, next)) => {
                let old = &text[at + start..at + start + len];
                changed.push_str(&text[..at + start]);
                changed.push_str(&next);
                changed.push_str(&text[at + start + len..]);
                format!("constant `{old}` -> `{next}`")
            }
            None => {
                changed.push_str(&text[..at]);
                changed.push_str("    // parity bench: this function was edited\n");
                changed.push_str(&text[at..]);
                "comment line added".to_string()
            }
        };
        std::fs::create_dir_all(work).map_err(io(work))?;
        // Written as plain text: the edited copy of a .mlir.gz is a .mlir.
        let file = path.file_name().map_or("module.mlir".into(), |f| {
            f.to_string_lossy().trim_end_matches(".gz").to_string()
        });
        let copy = work.join(file);
        std::fs::write(&copy, changed).map_err(io(&copy))?;
        let mut edited = spec.clone();
        if let Some(m) = edited.subject.modules.get_mut(name) {
            m.source = ModuleSource::Mlir(copy);
        }
        let edit = Edit {
            module: name.clone(),
            function: func,
            change,
        };
        return Ok((edited, edit));
    }
    Err(GateBenchError::NoFunction {
        spec: spec.path.display().to_string(),
        function: function.unwrap_or("any").to_string(),
    })
}

/// The name of the public function `wanted` (or the first one) and the
/// byte offset just after its signature line.
fn find_public_function(text: &str, wanted: Option<&str>) -> Option<(String, usize)> {
    const HEAD: &str = "func.func public @";
    let mut from = 0;
    while let Some(i) = text[from..].find(HEAD) {
        let start = from + i + HEAD.len();
        let name_len = text[start..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '$'))
            .unwrap_or(text.len() - start);
        let name = &text[start..start + name_len];
        let line_end = text[start..]
            .find('\n')
            .map_or(text.len(), |j| start + j + 1);
        if wanted.is_none_or(|w| w == name) {
            return Some((name.to_string(), line_end));
        }
        from = line_end;
    }
    None
}

/// The first `dense<FLOAT>` splat in `body`: the literal's offset and length,
/// and the next f32 above it, printed as MLIR reads it.
fn first_float_constant(body: &str) -> Option<(usize, usize, String)> {
    let mut from = 0;
    while let Some(i) = body[from..].find("dense<") {
        let start = from + i + "dense<".len();
        let len = body[start..].find('>')?;
        let literal = &body[start..start + len];
        from = start;
        if !literal.contains('.') {
            continue;
        }
        let Ok(x) = literal.parse::<f32>() else {
            continue;
        };
        if !x.is_finite() {
            continue;
        }
        let next = if x == 0.0 {
            f32::from_bits(1)
        } else if x > 0.0 {
            f32::from_bits(x.to_bits() + 1)
        } else {
            f32::from_bits(x.to_bits() - 1)
        };
        return Some((start, len, format!("{next:.9e}")));
    }
    None
}

/// Cache entries (`*.vmfb`) in `dir`; 0 when it does not exist yet.
fn count_entries(dir: &Path) -> Result<usize, GateBenchError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => {
            return Err(GateBenchError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    Ok(entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "vmfb"))
        .count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_named_or_first_public_function() {
        let text = "module {\n  func.func private @p(%a: i32) {\n  }\n  func.func public @first(%a: i32) {\n    return\n  }\n  func.func public @second_b32(%a: i32) {\n  }\n}\n";
        let (name, at) = find_public_function(text, None).unwrap();
        assert_eq!(name, "first");
        assert!(text[at..].starts_with("    return"));
        let (name, at) = find_public_function(text, Some("second_b32")).unwrap();
        assert_eq!(name, "second_b32");
        assert!(text[at..].starts_with("  }\n}"));
        assert!(find_public_function(text, Some("p")).is_none());
        assert!(find_public_function(text, Some("missing")).is_none());
    }

    #[test]
    fn moves_the_first_float_constant_one_ulp_up() {
        let body = "%c = stablehlo.constant dense<0> : tensor<i32>\n%d = stablehlo.constant dense<2.560000e+02> : tensor<f32>\n";
        let (start, len, next) = first_float_constant(body).unwrap();
        assert_eq!(&body[start..start + len], "2.560000e+02");
        assert_eq!(
            next.parse::<f32>().unwrap(),
            f32::from_bits(256f32.to_bits() + 1)
        );
        assert!(
            next.contains('.'),
            "MLIR float literals need a point: {next}"
        );
        let (_, _, down) = first_float_constant("dense<-1.0>").unwrap();
        assert!(down.parse::<f32>().unwrap() > -1.0);
        assert!(first_float_constant("dense<0> dense<[1.0, 2.0]>").is_none());
    }
}
