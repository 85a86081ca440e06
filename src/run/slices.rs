//! `slice:` stages: each is cut out of a larger function of its module.
//!
//! For every module that slice stages cut (over the selected cases and
//! stages), the module's MLIR is normalised by the IREE compiler (generic
//! form, calls inlined), parsed by `parity_mlir`, the stages' points are
//! resolved, and one extra module of generated functions is emitted: one
//! function per distinct (function, from, to), named
//! `<stage>__<function>` (see [`SliceSpec::entry_name`]). The runner compiles
//! it with its parent's flags, registers it as `<module>#slices`, and points
//! the stages at it. A stage whose slice cannot be made errors on its own;
//! the other stages run.

use super::module_error::CompilerUnavailable;
use parity_iree::IreeCompiler;
use parity_mlir::{Function, SliceArg, SliceInfo, SliceRequest, ValueId};
use parity_record::{ErrorKind, ErrorRecord};
use parity_spec::{ModuleSource, SliceSpec, Spec, Stage};
use std::collections::{BTreeMap, HashMap};

/// (case, stage).
pub type StageKey = (String, String);

/// One generated module: the slices of one function of one spec module.
#[derive(Clone, Debug)]
pub struct SliceModule {
    /// The name stages call it by: `<parent>#slices`, or
    /// `<parent>#slices@<function>` when the parent's slice stages cut several functions.
    pub name: String,
    /// The spec module it is cut from.
    pub parent: String,
    /// The function it is cut from.
    pub function: String,
    /// The generated MLIR.
    pub mlir: String,
    /// What each generated function takes and returns.
    pub infos: Vec<SliceInfo>,
}

/// Everything slicing decided for a run.
#[derive(Clone, Debug, Default)]
pub struct SlicePlan {
    /// The generated modules, to compile and load beside the spec's own.
    pub modules: Vec<SliceModule>,
    /// Where each slice stage that can run now points: (module, function).
    pub targets: HashMap<StageKey, (String, String)>,
    /// Why each slice stage that cannot run cannot.
    pub errors: HashMap<StageKey, ErrorRecord>,
    /// Problems with a whole module (it cannot be read, normalised or parsed).
    pub run_errors: Vec<ErrorRecord>,
    /// The operations each slice stage runs, and each `function:` stage whose
    /// function is also sliced: what first-divergence selection compares.
    pub extents: super::divergence::Extents,
}

impl SlicePlan {
    /// Points every instantiated slice stage at its generated function.
    pub fn retarget(&self, cases: &mut [(&str, Vec<Stage>)]) {
        for (case, stages) in cases.iter_mut() {
            for stage in stages.iter_mut() {
                if let Some((module, function)) =
                    self.targets.get(&(case.to_string(), stage.name.clone()))
                {
                    stage.module = module.clone();
                    stage.function = function.clone();
                }
            }
        }
    }
}

/// One slice stage of one case, waiting for its module.
struct Pending<'a> {
    key: StageKey,
    stage: &'a Stage,
    slice: &'a SliceSpec,
}

/// A `function:` stage of a module that slice stages cut: if its function is
/// one of the cut ones, it contains them (see `divergence`).
struct Whole<'a> {
    key: StageKey,
    function: &'a str,
}

/// Plans the slices of the stages at `selected` (spec indices) in `cases`
/// (instantiated per case). `compiler` is the loaded IREE compiler or why it is missing.
pub fn plan(
    spec: &Spec,
    compiler: Result<&IreeCompiler, &CompilerUnavailable>,
    cases: &[(&str, Vec<Stage>)],
    selected: &[usize],
) -> SlicePlan {
    let mut plan = SlicePlan::default();
    // Parent module -> its slice stages, in case order then execution order.
    let mut by_module: BTreeMap<&str, Vec<Pending<'_>>> = BTreeMap::new();
    let mut wholes: BTreeMap<&str, Vec<Whole<'_>>> = BTreeMap::new();
    for (case, stages) in cases {
        for &i in selected {
            let Some(stage) = stages.get(i) else { continue };
            if stage.slice.is_none() {
                wholes
                    .entry(stage.module.as_str())
                    .or_default()
                    .push(Whole {
                        key: (case.to_string(), stage.name.clone()),
                        function: stage.function.as_str(),
                    });
            }
            if let Some(slice) = &stage.slice {
                by_module
                    .entry(stage.module.as_str())
                    .or_default()
                    .push(Pending {
                        key: (case.to_string(), stage.name.clone()),
                        stage,
                        slice,
                    });
            }
        }
    }
    for (module, pending) in by_module {
        let wholes = wholes.remove(module).unwrap_or_default();
        plan_module(spec, compiler, module, &pending, &wholes, &mut plan);
    }
    plan
}

/// `<spec>:<line>:<col>: stage `<name>` (<case>)`, the start of every stage message.
fn stage_at(spec: &Spec, p: &Pending<'_>, loc: parity_spec::Location) -> String {
    format!(
        "{}:{}:{}: stage `{}` ({})",
        spec.path.display(),
        loc.line,
        loc.col,
        p.stage.name,
        p.key.0
    )
}

/// Why a module's MLIR cannot be read for slicing: the file (input), IREE
/// rejecting it (execution, like a failed compile), or MLIR that IREE
/// accepts but parity cannot read (input, naming the line).
#[derive(Debug, thiserror::Error)]
pub enum ReadModuleError {
    /// The file cannot be read (or decompressed).
    #[error("cannot read {source_name}: {source}")]
    Read {
        /// The MLIR file.
        source_name: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The text nests deeper than the compiler's parser can recurse
    /// (checked before the compiler sees it, which would overflow the stack).
    #[error("{source_name}: {source}")]
    TooDeep {
        /// The MLIR file.
        source_name: String,
        /// Where the bound is passed.
        #[source]
        source: parity_mlir::MlirError,
    },
    /// The IREE compiler cannot parse or normalise it.
    #[error(transparent)]
    Normalise(#[from] parity_iree::IreeError),
    /// The normalised text is MLIR parity cannot read.
    #[error("{source_name} (normalised by the IREE compiler): {source}")]
    Parse {
        /// The MLIR file.
        source_name: String,
        /// Where and why (line and column of the normalised text).
        #[source]
        source: parity_mlir::MlirError,
    },
}

impl ReadModuleError {
    /// Input (exit 2) or execution (exit 3).
    pub fn kind(&self) -> ErrorKind {
        match self {
            ReadModuleError::Normalise(_) => ErrorKind::Execution,
            ReadModuleError::Read { .. }
            | ReadModuleError::TooDeep { .. }
            | ReadModuleError::Parse { .. } => ErrorKind::Input,
        }
    }

    /// As a record error (kind + message).
    pub fn to_record(&self) -> ErrorRecord {
        ErrorRecord {
            kind: self.kind(),
            message: self.to_string(),
            location: None,
        }
    }
}

/// Reads an MLIR module, normalises it with the IREE compiler (generic form,
/// calls inlined) and parses it; returns it with its source name.
pub fn read_normalised(
    compiler: &IreeCompiler,
    path: &std::path::Path,
) -> Result<(parity_mlir::Module, String), ReadModuleError> {
    let source_name = path.display().to_string();
    let bytes = match parity_tensor::read_module_bytes(path) {
        Ok(b) => b,
        Err(source) => {
            return Err(ReadModuleError::Read {
                source_name,
                source,
            })
        }
    };
    if let Err(source) = parity_mlir::check_nesting(&bytes) {
        return Err(ReadModuleError::TooDeep {
            source_name,
            source,
        });
    }
    let normal = compiler.normalize(&source_name, &bytes)?;
    match parity_mlir::parse(&normal) {
        Ok(module) => Ok((module, source_name)),
        Err(source) => Err(ReadModuleError::Parse {
            source_name,
            source,
        }),
    }
}

fn plan_module(
    spec: &Spec,
    compiler: Result<&IreeCompiler, &CompilerUnavailable>,
    module: &str,
    pending: &[Pending<'_>],
    wholes: &[Whole<'_>],
    plan: &mut SlicePlan,
) {
    let fail_all = |plan: &mut SlicePlan, kind: ErrorKind, why: &str| {
        for p in pending {
            let message = format!(
                "{}: cannot cut slice of `{}`: {why}",
                stage_at(spec, p, p.stage.location),
                p.slice.function
            );
            plan.errors.insert(
                p.key.clone(),
                ErrorRecord {
                    kind,
                    message,
                    location: None,
                },
            );
        }
    };
    let path = match spec.subject.modules.get(module).map(|m| &m.source) {
        Some(ModuleSource::Mlir(path)) => path,
        Some(ModuleSource::Vmfb(path)) => {
            let why = format!(
                "module `{module}` is a prebuilt vmfb ({}); slicing needs its MLIR",
                path.display()
            );
            return fail_all(plan, ErrorKind::Input, &why);
        }
        None => {
            let why = format!("module `{module}` is not declared in the subject");
            return fail_all(plan, ErrorKind::Input, &why);
        }
    };
    let parsed = compiler
        .map_err(|m| ErrorRecord::execution(m.to_string()))
        .and_then(|c| read_normalised(c, path).map_err(|e| e.to_record()));
    let (parsed, source_name) = match parsed {
        Ok(m) => m,
        Err(why) => {
            plan.run_errors.push(ErrorRecord {
                kind: why.kind,
                message: format!("module `{module}`: slicing: {why}"),
                location: None,
            });
            return fail_all(plan, why.kind, &why.message);
        }
    };

    // Function -> requests cut from it; (function, from, to) -> request index.
    let mut requests: BTreeMap<&str, Vec<SliceRequest>> = BTreeMap::new();
    let mut seen: HashMap<(&str, Vec<ValueId>, Vec<ValueId>), usize> = HashMap::new();
    // Stages that resolved: (pending, function, request index).
    let mut resolved: Vec<(&Pending<'_>, &str, usize)> = Vec::new();
    for p in pending {
        let fname = p.slice.function.as_str();
        let Some(func) = parsed.function(fname) else {
            let mut names: Vec<&str> = parsed.functions.iter().map(|f| f.name.as_str()).collect();
            names.sort_unstable();
            let message = format!(
                "{}: module `{module}` ({source_name}) has no function `{fname}` to slice (it has: {})",
                stage_at(spec, p, p.stage.locations.function),
                names.join(", ")
            );
            plan.errors
                .insert(p.key.clone(), ErrorRecord::input(message));
            continue;
        };
        match resolve_points(spec, p, func) {
            Ok((from, to)) => {
                let list = requests.entry(fname).or_default();
                let index = *seen
                    .entry((fname, from.clone(), to.clone()))
                    .or_insert_with(|| {
                        let base = SliceSpec::entry_name(&p.stage.name, fname);
                        let mut name = base.clone();
                        let mut n = 1;
                        while list.iter().any(|r| r.name == name) {
                            n += 1;
                            name = format!("{base}_{n}");
                        }
                        list.push(SliceRequest { name, from, to });
                        list.len() - 1
                    });
                resolved.push((p, fname, index));
            }
            Err(message) => {
                plan.errors
                    .insert(p.key.clone(), ErrorRecord::input(message));
            }
        }
    }

    for w in wholes {
        if let (true, Some(func)) = (
            requests.contains_key(w.function),
            parsed.function(w.function),
        ) {
            plan.extents.insert(
                w.key.clone(),
                super::divergence::Extent {
                    function: format!("{module}.{}", w.function),
                    ops: (0..func.ops.len()).collect(),
                },
            );
        }
    }

    let several = requests.len() > 1;
    let mut emitted: HashMap<&str, Result<(String, Vec<SliceInfo>), String>> = HashMap::new();
    for (fname, reqs) in &requests {
        let Some(func) = parsed.function(fname) else {
            continue;
        };
        let name = if several {
            format!("{module}#slices@{fname}")
        } else {
            format!("{module}#slices")
        };
        let symbol = SliceSpec::entry_name(module, "slices");
        match parity_mlir::emit_slices(&parsed, func, &symbol, reqs) {
            Ok((mlir, infos)) => {
                plan.modules.push(SliceModule {
                    name: name.clone(),
                    parent: module.to_string(),
                    function: fname.to_string(),
                    mlir: mlir.clone(),
                    infos: infos.clone(),
                });
                emitted.insert(fname, Ok((name, infos)));
            }
            Err(e) => {
                emitted.insert(fname, Err(format!("{source_name} (normalised): {e}")));
            }
        }
    }

    for (p, fname, index) in resolved {
        let (module_name, infos) = match &emitted[fname] {
            Ok(ok) => ok,
            Err(why) => {
                let message = format!(
                    "{}: cannot cut slice of `{fname}`: {why}",
                    stage_at(spec, p, p.stage.location)
                );
                plan.errors
                    .insert(p.key.clone(), ErrorRecord::execution(message));
                continue;
            }
        };
        let info = &infos[index];
        plan.extents.insert(
            p.key.clone(),
            super::divergence::Extent {
                function: format!("{module}.{fname}"),
                ops: info.ops.iter().copied().collect(),
            },
        );
        if info.args.len() != p.stage.args.len() {
            let func = parsed.function(fname).expect("function was found above");
            let message = format!(
                "{}: the slice of `{fname}` takes {} arguments but the stage gives {}; it takes, in order: {}",
                stage_at(spec, p, p.stage.location),
                info.args.len(),
                p.stage.args.len(),
                describe_args(func, p.slice, info)
            );
            plan.errors
                .insert(p.key.clone(), ErrorRecord::input(message));
            continue;
        }
        plan.targets
            .insert(p.key.clone(), (module_name.clone(), info.name.clone()));
    }
}

/// Resolves the stage's `from` and `to` points; the error names the stage and the point.
fn resolve_points(
    spec: &Spec,
    p: &Pending<'_>,
    func: &Function,
) -> Result<(Vec<ValueId>, Vec<ValueId>), String> {
    let locs = &p.stage.locations;
    let resolve = |which: &str, points: &[String], locs: &[parity_spec::Location]| {
        points
            .iter()
            .enumerate()
            .map(|(i, point)| {
                func.resolve_point(point).map_err(|e| {
                    let loc = locs.get(i).copied().unwrap_or(p.stage.location);
                    format!(
                        "{}: slice {which} point `{point}`: {}",
                        stage_at(spec, p, loc),
                        e.message
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let from = resolve("from", &p.slice.from, &locs.slice_from)?;
    let to = resolve("to", &p.slice.to, &locs.slice_to)?;
    for (j, v) in from.iter().enumerate() {
        if let Some(i) = from[..j].iter().position(|u| u == v) {
            let loc = locs.slice_from.get(j).copied().unwrap_or(p.stage.location);
            return Err(format!(
                "{}: slice from points `{}` and `{}` are the same value {} of `{}` (each from point takes one argument)",
                stage_at(spec, p, loc),
                p.slice.from[i],
                p.slice.from[j],
                func.values[*v].name,
                func.name
            ));
        }
    }
    Ok((from, to))
}

/// The slice's arguments in order, for an argument-count message.
fn describe_args(func: &Function, slice: &SliceSpec, info: &SliceInfo) -> String {
    info.args
        .iter()
        .enumerate()
        .map(|(n, (from, v))| {
            let value = &func.values[*v];
            let what = match from {
                SliceArg::From(i) => format!("from[{i}] `{}`", slice.from[*i]),
                SliceArg::FuncArg(k) => match value.loc.path() {
                    Some(name) => format!("argument {k} `{name}` of `{}`", func.name),
                    None => format!("argument {k} of `{}`", func.name),
                },
            };
            format!("{n}: {what} ({}: {})", value.name, value.ty.text)
        })
        .collect::<Vec<_>>()
        .join("; ")
}
