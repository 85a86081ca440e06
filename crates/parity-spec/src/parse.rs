//! Reading the top level of stages.yaml: version, subject, weights, oracle,
//! cases, tolerances and the stage list.

use crate::arg_parse::{dtype, location};
use crate::case_parse::parse_cases;
use crate::error::{Scope, SpecError, SpecErrorKind};
use crate::model::{
    BaselineSpec, Case, Module, ModuleSource, ParameterScope, Spec, Subject, TargetSpec,
    BASELINE_METRICS,
};
use crate::reader::Cx;
use crate::stage::parse_stage;
use crate::tolerance::tolerance;
use crate::yaml::{parse_document, Node};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

const TOP_KEYS: &[&str] = &[
    "version",
    "subject",
    "weights",
    "weight_transforms",
    "oracle",
    "cases",
    "tolerances",
    "stages",
    "tokens",
    "fuzz",
    "baseline",
    "checkpoints",
];
const BASELINE_KEYS: &[&str] = &["band", "band_abs", "metrics"];
const SUBJECT_KEYS: &[&str] = &[
    "modules",
    "targets",
    "target_backend",
    "driver",
    "flags",
    "parameters",
];
const MODULE_KEYS: &[&str] = &["mlir", "vmfb", "flags"];

/// Default `subject.target_backend`.
pub const DEFAULT_TARGET_BACKEND: &str = "llvm-cpu";
/// Default `subject.driver`.
pub const DEFAULT_DRIVER: &str = "local-task";
/// The name of the one target the older `target_backend` / `driver` pair makes.
pub const DEFAULT_TARGET: &str = "default";

/// The directory relative paths are resolved against: the spec file's directory.
pub(crate) fn base_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Parses the text into a `Spec` with per-node checks done; cross-stage checks are left to `graph`.
pub(crate) fn parse_spec(text: &str, path: &Path) -> Result<Spec, SpecError> {
    let root = parse_document(text, path)?;
    let cx = Cx {
        file: path,
        scope: Scope::Top,
    };
    let top = cx.map(&root, "spec", "the top level", TOP_KEYS)?;
    let version_node = top.req(&cx, "version")?;
    if version_node.as_i128() != Some(1) {
        return Err(SpecErrorKind::UnsupportedVersion {
            at: cx.at(version_node),
            found: version_node
                .scalar()
                .map_or_else(|| version_node.describe(), str::to_string),
        }
        .into());
    }
    let base = base_dir(path);
    let subject = parse_subject(&cx, top.req(&cx, "subject")?, &base)?;
    let weights = match top.opt("weights") {
        Some(w) => cx
            .list(w, "weights")?
            .iter()
            .map(|n| cx.name(n, "weights").map(|s| base.join(s)))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let weight_transforms = match top.opt("weight_transforms") {
        Some(t) => crate::transform::parse_transforms(&cx, t)?,
        None => Vec::new(),
    };
    let checkpoints = match top.opt("checkpoints") {
        Some(c) => crate::transform::parse_checkpoints(&cx, c)?,
        None => Vec::new(),
    };
    let oracle = base.join(cx.name(top.req(&cx, "oracle")?, "oracle")?);
    let cases = match top.opt("cases") {
        Some(c) => parse_cases(&cx, c)?,
        None => vec![Case {
            name: "default".to_string(),
            vars: BTreeMap::new(),
        }],
    };
    let tolerances = match top.opt("tolerances") {
        Some(t) => parse_tolerances(&cx, t)?,
        None => HashMap::new(),
    };
    let baseline = match top.opt("baseline") {
        Some(b) => parse_baseline(&cx, b)?,
        None => BaselineSpec::default(),
    };
    let mut literal_budget = crate::arg_parse::MAX_LITERAL_ELEMENTS;
    let tokens = match top.opt("tokens") {
        Some(t) => Some(crate::tokens_parse::parse_tokens(
            &cx,
            t,
            &mut literal_budget,
        )?),
        None => None,
    };
    let fuzz = match top.opt("fuzz") {
        Some(f) => Some(crate::fuzz_parse::parse_fuzz(
            &cx,
            f,
            &base,
            &mut literal_budget,
        )?),
        None => None,
    };
    // A spec with a `tokens:` or `fuzz:` section may leave out `stages`.
    let stage_nodes: &[std::rc::Rc<Node>] = match (top.opt("stages"), &tokens, &fuzz) {
        (None, Some(_), _) | (None, _, Some(_)) => &[],
        (stages, _, _) => {
            let stages_node = match stages {
                Some(n) => n,
                None => top.req(&cx, "stages")?,
            };
            let nodes = cx.list(stages_node, "stages")?;
            if nodes.is_empty() {
                return Err(SpecErrorKind::NoStages {
                    at: cx.at(stages_node),
                }
                .into());
            }
            nodes
        }
    };
    let stages: Vec<_> = stage_nodes
        .iter()
        .map(|n| parse_stage(&cx, n, &mut literal_budget))
        .collect::<Result<_, _>>()?;
    crate::target_parse::check_target_tolerances(&cx, &subject, &stages)?;
    Ok(Spec {
        path: path.to_path_buf(),
        base_dir: base,
        version: 1,
        subject,
        weights,
        weight_transforms,
        checkpoints,
        oracle,
        cases,
        tolerances,
        stages,
        tokens,
        fuzz,
        baseline,
    })
}

/// `baseline: {band, band_abs, metrics}`: bands are finite and >= 0, metrics known names.
fn parse_baseline(cx: &Cx<'_>, node: &Node) -> Result<BaselineSpec, SpecError> {
    let m = cx.map(node, "baseline", "baseline", BASELINE_KEYS)?;
    let band = |key: &str| -> Result<Option<f64>, SpecError> {
        let Some(n) = m.opt(key) else {
            return Ok(None);
        };
        let x = cx.f64(n, key)?;
        if !(x.is_finite() && x >= 0.0) {
            return Err(cx.invalid(
                n,
                format!("`baseline.{key}` must be a finite number >= 0, not {x}"),
            ));
        }
        Ok(Some(x))
    };
    let metrics = match m.opt("metrics") {
        None => None,
        Some(n) => {
            let names = cx.strings(n, "metrics")?;
            if let Some(bad) = names
                .iter()
                .find(|s| !BASELINE_METRICS.contains(&s.as_str()))
            {
                return Err(cx.invalid(
                    n,
                    format!(
                        "unknown baseline metric `{bad}` (known: {})",
                        BASELINE_METRICS.join(", ")
                    ),
                ));
            }
            if names.is_empty() {
                return Err(
                    cx.invalid(n, "`baseline.metrics` must name at least one metric".into())
                );
            }
            Some(names)
        }
    };
    Ok(BaselineSpec {
        band: band("band")?,
        band_abs: band("band_abs")?,
        metrics,
    })
}

fn parse_subject(cx: &Cx<'_>, node: &Node, base: &Path) -> Result<Subject, SpecError> {
    let m = cx.map(node, "subject", "subject", SUBJECT_KEYS)?;
    let flags = match m.opt("flags") {
        Some(f) => cx.strings(f, "flags")?,
        None => Vec::new(),
    };
    let modules_node = m.req(cx, "modules")?;
    let modules_map = cx.free_map(modules_node, "modules", "subject.modules")?;
    let mut modules = BTreeMap::new();
    for (key, value) in modules_map.entries() {
        let name = cx.name(key, "module name")?;
        let mcx = cx.with(Scope::Module(name.clone()));
        let module = parse_module(&mcx, &name, value, base)?;
        modules.insert(name, module);
    }
    if modules.is_empty() {
        return Err(cx.invalid(
            modules_node,
            "`subject.modules` is empty; declare at least one module".into(),
        ));
    }
    let text_or = |key: &str, default: &str| -> Result<String, SpecError> {
        m.opt(key)
            .map_or_else(|| Ok(default.to_string()), |n| cx.name(n, key))
    };
    let targets = match m.opt("targets") {
        Some(targets_node) => {
            if let Some(old) = m.opt("target_backend").or(m.opt("driver")) {
                return Err(cx.invalid(
                    old,
                    "`target_backend` / `driver` and `targets` both given; name each target's backend and device under `targets:` instead".into(),
                ));
            }
            crate::target_parse::parse_targets(cx, targets_node, &modules, base)?
        }
        None => vec![TargetSpec {
            name: DEFAULT_TARGET.to_string(),
            backend: text_or("target_backend", DEFAULT_TARGET_BACKEND)?,
            device: text_or("driver", DEFAULT_DRIVER)?,
            flags: Vec::new(),
            modules: BTreeMap::new(),
            tolerances: BTreeMap::new(),
            location: location(node),
        }],
    };
    let parameters = match m.opt("parameters") {
        Some(p) => parse_parameters(cx, p, base)?,
        None => Vec::new(),
    };
    Ok(Subject {
        modules,
        targets,
        flags,
        parameters,
    })
}

/// The parameter formats IREE's parsers read (by extension).
const PARAMETER_EXTENSIONS: &[&str] = &["irpa", "safetensors", "gguf"];

/// `subject.parameters:`, a mapping of scope -> list of files (or one file).
fn parse_parameters(
    cx: &Cx<'_>,
    node: &Node,
    base: &Path,
) -> Result<Vec<ParameterScope>, SpecError> {
    let map = cx.free_map(node, "parameters", "subject.parameters")?;
    let mut scopes = Vec::new();
    for (key, value) in map.entries() {
        let scope = cx.string(key, "parameter scope")?;
        let files: Vec<(String, &Node)> = if value.scalar().is_some() {
            vec![(cx.string(value, "parameter file")?, value)]
        } else {
            let items = cx.list(value, "parameter files")?;
            let mut files = Vec::new();
            for item in items {
                files.push((cx.string(item, "parameter file")?, &**item));
            }
            files
        };
        if files.is_empty() {
            return Err(cx.invalid(
                value,
                format!("parameter scope `{scope}` lists no files; name its .irpa, .safetensors or .gguf files"),
            ));
        }
        let mut paths = Vec::new();
        for (file, at) in files {
            let path = base.join(&file);
            let ext = path
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase)
                .unwrap_or_default();
            if !PARAMETER_EXTENSIONS.contains(&ext.as_str()) {
                return Err(cx.invalid(
                    at,
                    format!("parameter file {file} (scope `{scope}`): IREE reads parameters from .irpa, .safetensors and .gguf files, by their extension"),
                ));
            }
            if !path.is_file() {
                return Err(SpecErrorKind::MissingParameterFile {
                    at: cx.at(at),
                    scope: scope.clone(),
                    path,
                }
                .into());
            }
            paths.push(path);
        }
        scopes.push(ParameterScope {
            scope,
            files: paths,
            location: location(key),
        });
    }
    Ok(scopes)
}

pub(crate) fn parse_module(
    cx: &Cx<'_>,
    name: &str,
    node: &Node,
    base: &Path,
) -> Result<Module, SpecError> {
    let m = cx.map(node, "module", "module", MODULE_KEYS)?;
    let (path_node, is_mlir) = match (m.opt("mlir"), m.opt("vmfb")) {
        (Some(p), None) => (p, true),
        (None, Some(p)) => (p, false),
        _ => {
            return Err(cx.invalid(
                node,
                "a module needs exactly one of `mlir` (source to compile) or `vmfb` (prebuilt)"
                    .into(),
            ))
        }
    };
    let path = base.join(cx.name(path_node, if is_mlir { "mlir" } else { "vmfb" })?);
    if !path.is_file() {
        return Err(SpecErrorKind::MissingModuleFile {
            at: cx.at(path_node),
            module: name.to_string(),
            path,
        }
        .into());
    }
    let mut flags = Vec::new();
    if let Some(f) = m.opt("flags") {
        if !is_mlir {
            // A prebuilt vmfb is never compiled, so flags on it would silently do nothing.
            return Err(cx.invalid(
                f,
                "`flags` has no effect on a prebuilt `vmfb` module".into(),
            ));
        }
        flags.extend(cx.strings(f, "flags")?);
    }
    Ok(Module {
        source: if is_mlir {
            ModuleSource::Mlir(path)
        } else {
            ModuleSource::Vmfb(path)
        },
        flags,
        location: location(node),
    })
}

fn parse_tolerances(
    cx: &Cx<'_>,
    node: &Node,
) -> Result<HashMap<parity_tensor::DType, Vec<parity_compare::Criterion>>, SpecError> {
    let mut out = HashMap::new();
    for (key, value) in cx.free_map(node, "tolerances", "tolerances")?.entries() {
        let d = dtype(cx, key, "tolerances key")?;
        if out.contains_key(&d) {
            // Aliases like `float32` and `f32` name the same dtype.
            return Err(cx.invalid(key, format!("tolerance for dtype {d} is given twice")));
        }
        out.insert(d, tolerance(cx, value, "tolerances")?);
    }
    Ok(out)
}
