//! `parity points MODULE.mlir [--function F]`: where a `slice:` stage can cut.

use super::emit::Dest;
use crate::run::slices::read_normalised;
use parity_iree::IreeCompiler;
use parity_mlir::{yaml_point, Function, ScopePoint};
use parity_record::ExitCode;
use serde::Serialize;
use std::io::Write as _;
use std::path::PathBuf;

/// Schema identifier of `parity points --json`.
pub const POINTS_SCHEMA: &str = "parity.points/1";

/// Arguments of `parity points`.
#[derive(clap::Args, Debug)]
pub struct PointsArgs {
    /// The MLIR module (normalised by the IREE compiler before reading, as `slice:` stages are).
    /// Optional with --propose-map (the stage's module is used; if given, it must be that file).
    #[arg(required_unless_present = "propose_map")]
    pub(super) module: Option<PathBuf>,
    /// List this function's named scopes (default: list the public functions).
    #[arg(long)]
    function: Option<String>,
    /// Show scopes at most this deep (1 = top-level scopes only); with --cuts,
    /// cut between the scopes at this depth (default 1).
    #[arg(long)]
    depth: Option<usize>,
    /// With --function: list the cuts between consecutive scopes, each with
    /// the arguments a `slice:` stage cutting there takes (its `from` point,
    /// then function arguments by MLIR name), to write its `bind:` rules.
    #[arg(long, requires = "function")]
    cuts: bool,
    /// Write the listing as JSON (schema parity.points/1, see docs/your-model.md;
    /// with --propose-map, parity.map-proposal/1) to PATH; `-`: on stdout, in place of the text.
    #[arg(long, value_name = "PATH")]
    pub(super) json: Option<Dest>,
    /// Propose the spec's `checkpoints:` map for --stage by value: run the stage
    /// on its oracle inputs with every candidate value tapped and match each
    /// oracle tensor of the case(s) (see docs/your-model.md).
    #[arg(long, requires_all = ["spec", "stage"], conflicts_with_all = ["function", "depth"])]
    pub(super) propose_map: bool,
    /// The stage graph (with --propose-map).
    #[arg(long, requires = "propose_map")]
    pub(super) spec: Option<PathBuf>,
    /// The stage whose values are matched (with --propose-map).
    #[arg(long, requires = "propose_map")]
    pub(super) stage: Option<String>,
    /// Cases to run (with --propose-map; default: every case of the spec).
    #[arg(long = "case", requires = "propose_map")]
    pub(super) cases: Vec<String>,
    /// Compiled-artifact cache directory (with --propose-map).
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    pub(super) cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: EERIE_PYTHON, else the venv the build used or the checkout's .venv).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    pub(super) iree_compiler_lib: Option<PathBuf>,
}

#[derive(Serialize)]
struct PointsJson {
    schema: &'static str,
    module: String,
    /// The IREE parameters the module reads (`#flow.parameter.named` globals).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    parameters: Vec<super::points_params::ParameterJson>,
    functions: Vec<FunctionJson>,
}

#[derive(Serialize)]
struct FunctionJson {
    name: String,
    public: bool,
    ops: usize,
    args: Vec<ValueJson>,
    results: Vec<ValueJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scopes: Option<Vec<ScopeJson>>,
    /// With --cuts: the cuts between consecutive scopes.
    #[serde(skip_serializing_if = "Option::is_none")]
    cuts: Option<Vec<super::points_cuts::CutJson>>,
}

#[derive(Serialize)]
struct ValueJson {
    /// SSA name: a valid point.
    value: String,
    #[serde(rename = "type")]
    ty: String,
    /// The location's name (JAX argument names, `params['...']`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    loc_name: Option<String>,
}

#[derive(Serialize)]
struct ScopeJson {
    point: String,
    key: String,
    ops: usize,
    value: String,
    #[serde(rename = "type")]
    ty: String,
    shared_key: bool,
    children: Vec<ScopeJson>,
}

fn value_json(f: &Function, v: usize) -> ValueJson {
    let value = &f.values[v];
    ValueJson {
        value: value.name.clone(),
        ty: value.ty.text.clone(),
        // As written (what `bind:` rules match), else the scope path.
        loc_name: value.loc.name().or_else(|| value.loc.path()),
    }
}

fn scope_json(f: &Function, nodes: &[ScopePoint], depth: Option<usize>) -> Vec<ScopeJson> {
    if depth == Some(0) {
        return Vec::new();
    }
    nodes
        .iter()
        .map(|n| ScopeJson {
            point: n.path.clone(),
            key: n.key.clone(),
            ops: n.ops,
            value: f.values[n.value].name.clone(),
            ty: f.values[n.value].ty.text.clone(),
            shared_key: n.shared_key,
            children: scope_json(f, &n.children, depth.map(|d| d - 1)),
        })
        .collect()
}

fn function_json(f: &Function, scopes: bool, depth: Option<usize>) -> FunctionJson {
    FunctionJson {
        name: f.name.clone(),
        public: f.public,
        ops: f.ops.len(),
        args: f.args.iter().map(|&v| value_json(f, v)).collect(),
        results: f.results.iter().map(|&v| value_json(f, v)).collect(),
        scopes: scopes.then(|| scope_json(f, &f.scope_tree(), depth)),
        cuts: None,
    }
}

/// Runs `parity points`.
pub fn run(args: PointsArgs) -> anyhow::Result<i32> {
    if args.propose_map {
        return super::points_propose::run(args);
    }
    let Some(module_path) = args.module.as_deref() else {
        eprintln!("parity: points: MODULE is required without --propose-map");
        return Ok(ExitCode::Input.code());
    };
    let compiler = match IreeCompiler::load(args.iree_compiler_lib.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("parity: points: {e}");
            return Ok(ExitCode::Execution.code());
        }
    };
    let (module, source) = match read_normalised(&compiler, module_path) {
        Ok(m) => m,
        Err(why) => {
            eprintln!(
                "parity: points: {}",
                crate::report::sanitize::terminal(&why.to_string())
            );
            return Ok(ExitCode::for_error(why.kind()).code());
        }
    };
    let functions: Vec<FunctionJson> = match &args.function {
        Some(name) => match module.function(name) {
            Some(f) => {
                let mut listed = function_json(f, true, args.depth);
                listed.cuts = args
                    .cuts
                    .then(|| super::points_cuts::cuts(&module, f, args.depth.unwrap_or(1)));
                vec![listed]
            }
            None => {
                let mut names: Vec<&str> =
                    module.functions.iter().map(|f| f.name.as_str()).collect();
                names.sort_unstable();
                eprintln!(
                    "parity: points: {source} (normalised) has no function `{name}` (it has: {})",
                    names.join(", ")
                );
                return Ok(ExitCode::Input.code());
            }
        },
        None => module
            .functions
            .iter()
            .filter(|f| f.public)
            .map(|f| function_json(f, false, None))
            .collect(),
    };
    let out = PointsJson {
        schema: POINTS_SCHEMA,
        module: source,
        parameters: super::points_params::parameters_of(module_path),
        functions,
    };
    let json = serde_json::to_string_pretty(&out)? + "\n";
    text_or_json(args.json.as_ref(), &json, || text(&out))
}

/// Prints the text (from `text`) unless the JSON goes to stdout, and
/// writes the JSON where `--json` says; a JSON file that cannot be written
/// is exit 2 after the text.
pub(super) fn text_or_json(
    dest: Option<&Dest>,
    json: &str,
    text: impl FnOnce() -> String,
) -> anyhow::Result<i32> {
    match dest {
        Some(Dest::Stdout) => print_stdout(json),
        Some(file) => {
            let code = print_stdout(&text())?;
            match file.deliver(json.as_bytes()) {
                Ok(()) => Ok(code),
                Err(e) => super::emit::refuse(&format!("points: {e}")),
            }
        }
        None => print_stdout(&text()),
    }
}

/// Writes `body` to stdout; a closed pipe (`parity points ... | head`) is not an error.
pub(super) fn print_stdout(body: &str) -> anyhow::Result<i32> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(body.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("parity: points: writing stdout: {e}");
            Ok(ExitCode::Execution.code())
        }
        _ => Ok(ExitCode::Pass.code()),
    }
}

/// A location name in the listing: always in double quotes, escaped as the
/// scope tree's points are (`yaml_point`), so a name holding terminal
/// controls (colour codes, a window-title escape, BEL) is shown, not obeyed.
pub(super) fn quoted_name(name: &str) -> String {
    let spelled = yaml_point(name);
    if spelled.starts_with('"') {
        spelled
    } else {
        format!("\"{spelled}\"")
    }
}

/// The human listing: signatures, then (with --function) the scope tree, points spelled for YAML.
/// Every other name (module, function, type) goes through the terminal sanitiser.
fn text(out: &PointsJson) -> String {
    crate::report::sanitize::terminal(&listing(out)).into_owned()
}

fn listing(out: &PointsJson) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "module {} (normalised by the IREE compiler)", out.module);
    s.push_str(&super::points_params::listing(&out.parameters));
    for f in &out.functions {
        let sig = |vs: &[ValueJson]| {
            vs.iter()
                .map(|v| match &v.loc_name {
                    Some(n) => format!("{}: {} {}", v.value, v.ty, quoted_name(n)),
                    None => format!("{}: {}", v.value, v.ty),
                })
                .collect::<Vec<_>>()
        };
        let _ = writeln!(s, "\n@{} ({} top-level ops)", f.name, f.ops);
        let _ = writeln!(s, "  arguments:");
        for a in sig(&f.args) {
            let _ = writeln!(s, "    {a}");
        }
        let _ = writeln!(s, "  results:");
        for r in sig(&f.results) {
            let _ = writeln!(s, "    {r}");
        }
        if let Some(cuts) = &f.cuts {
            s.push_str(&super::points_cuts::listing(cuts));
        }
        let Some(scopes) = &f.scopes else { continue };
        if scopes.is_empty() {
            let _ = writeln!(
                s,
                "  no named scopes: cut at SSA names (quote them in YAML: \"%12\")"
            );
            continue;
        }
        let mut rows = Vec::new();
        flatten(scopes, 0, &mut rows);
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let _ = writeln!(
            s,
            "  named scopes (point as a slice: stage spells it, top-level ops, value, type):"
        );
        for (point, scope) in rows {
            let note = if scope.shared_key {
                "  (its `_` form is shared with another scope: cut at the SSA name to be sure)"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "    {point:<width$}  {:>6}  {:<8} {}{note}",
                scope.ops, scope.value, scope.ty
            );
        }
    }
    s
}

fn flatten<'a>(nodes: &'a [ScopeJson], depth: usize, rows: &mut Vec<(String, &'a ScopeJson)>) {
    for n in nodes {
        rows.push((format!("{}{}", "  ".repeat(depth), yaml_point(&n.point)), n));
        flatten(&n.children, depth + 1, rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(loc_name: &str) -> ValueJson {
        ValueJson {
            value: "%arg0".into(),
            ty: "tensor<f32>".into(),
            loc_name: Some(loc_name.into()),
        }
    }

    #[test]
    fn location_names_with_terminal_controls_are_shown_escaped() {
        let out = PointsJson {
            schema: POINTS_SCHEMA,
            module: "m\u{1b}[2J.mlir".into(),
            parameters: Vec::new(),
            functions: vec![FunctionJson {
                name: "main".into(),
                public: true,
                ops: 1,
                args: vec![value("\u{1b}[31mred\u{1b}[0m"), value("params['w']")],
                results: vec![value("\u{1b}]0;owned\u{7}x\u{9b}y")],
                scopes: None,
                cuts: None,
            }],
        };
        let listed = text(&out);
        for control in ['\u{1b}', '\u{7}', '\u{9b}'] {
            assert!(!listed.contains(control), "raw {control:?} in:\n{listed}");
        }
        assert!(
            listed.contains("%arg0: tensor<f32> \"\\u001b[31mred\\u001b[0m\""),
            "{listed}"
        );
        assert!(
            listed.contains("%arg0: tensor<f32> \"\\u001b]0;owned\\u0007x\\u009by\""),
            "{listed}"
        );
        // Ordinary names read as before.
        assert!(
            listed.contains("%arg0: tensor<f32> \"params['w']\""),
            "{listed}"
        );
        assert!(listed.contains("module m\\x1b[2J.mlir"), "{listed}");
    }
}
