//! Cutting one module's slice stages: read the module, resolve each stage's
//! points into slice requests, emit one generated module per function cut,
//! and point each stage at its generated function (or record why not).

use super::{read_normalised, Pending, SliceModule, SlicePlan, Whole};
use crate::run::divergence::Extent;
use crate::run::module_error::CompilerUnavailable;
use parity_iree::IreeCompiler;
use parity_mlir::{Function, Module, SliceArg, SliceInfo, SliceRequest, ValueId};
use parity_record::{ErrorKind, ErrorRecord};
use parity_spec::{ModuleSource, SliceSpec, Spec};
use std::collections::{BTreeMap, HashMap};

/// Function -> the requests cut from it, in stage order.
type Requests<'a> = BTreeMap<&'a str, Vec<SliceRequest>>;

/// A stage whose points resolved: the stage, its function, its request's index.
type Resolved<'a> = (&'a Pending<'a>, &'a str, usize);

/// Function -> its generated module's name and slices, or why it cannot be emitted.
type Emitted<'a> = HashMap<&'a str, Result<(String, Vec<SliceInfo>), String>>;

/// Plans the slices of `module`'s `pending` stages into `plan`; `wholes` are
/// the module's `function:` stages, whose extents are recorded when their
/// function is cut.
pub(super) fn plan_module(
    spec: &Spec,
    compiler: Result<&IreeCompiler, &CompilerUnavailable>,
    module: &str,
    pending: &[Pending<'_>],
    wholes: &[Whole<'_>],
    plan: &mut SlicePlan,
) {
    let cut = ModuleCut {
        spec,
        module,
        pending,
    };
    let Some((parsed, source_name)) = cut.read(compiler, plan) else {
        return;
    };
    let (requests, resolved) = cut.requests(&parsed, &source_name, plan);
    cut.whole_extents(&parsed, &requests, wholes, plan);
    let emitted = cut.emit(&parsed, &source_name, &requests, plan);
    cut.point_stages(&parsed, resolved, &emitted, plan);
}

/// The slice stages of one spec module, being cut.
struct ModuleCut<'a> {
    spec: &'a Spec,
    module: &'a str,
    pending: &'a [Pending<'a>],
}

impl<'a> ModuleCut<'a> {
    /// Records that no stage of the module can be cut, for `why`.
    fn fail_all(&self, plan: &mut SlicePlan, kind: ErrorKind, why: &str) {
        for p in self.pending {
            let message = format!(
                "{}: cannot cut slice of `{}`: {why}",
                stage_at(self.spec, p, p.stage.location),
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
    }

    /// The module normalised and parsed, with its source name; `None` (every
    /// stage failed, and a run error when the MLIR cannot be read) without it.
    fn read(
        &self,
        compiler: Result<&IreeCompiler, &CompilerUnavailable>,
        plan: &mut SlicePlan,
    ) -> Option<(Module, String)> {
        let module = self.module;
        let path = match self.spec.subject.modules.get(module).map(|m| &m.source) {
            Some(ModuleSource::Mlir(path)) => path,
            Some(ModuleSource::Vmfb(path)) => {
                let why = format!(
                    "module `{module}` is a prebuilt vmfb ({}); slicing needs its MLIR",
                    path.display()
                );
                self.fail_all(plan, ErrorKind::Input, &why);
                return None;
            }
            None => {
                let why = format!("module `{module}` is not declared in the subject");
                self.fail_all(plan, ErrorKind::Input, &why);
                return None;
            }
        };
        let parsed = compiler
            .map_err(|m| ErrorRecord::execution(m.to_string()))
            .and_then(|c| read_normalised(c, path).map_err(|e| e.to_record()));
        match parsed {
            Ok(m) => Some(m),
            Err(why) => {
                plan.run_errors.push(ErrorRecord {
                    kind: why.kind,
                    message: format!("module `{module}`: slicing: {why}"),
                    location: None,
                });
                self.fail_all(plan, why.kind, &why.message);
                None
            }
        }
    }

    /// Each stage's points resolved into a request of its function (stages
    /// cutting the same values share one), and the stages that resolved;
    /// the others' errors go into `plan`.
    fn requests(
        &self,
        parsed: &Module,
        source_name: &str,
        plan: &mut SlicePlan,
    ) -> (Requests<'a>, Vec<Resolved<'a>>) {
        let module = self.module;
        let mut requests: Requests<'a> = BTreeMap::new();
        // (function, from, to) -> request index.
        let mut seen: HashMap<(&str, Vec<ValueId>, Vec<ValueId>), usize> = HashMap::new();
        let mut resolved: Vec<Resolved<'a>> = Vec::new();
        for p in self.pending {
            let fname = p.slice.function.as_str();
            let Some(func) = parsed.function(fname) else {
                let mut names: Vec<&str> =
                    parsed.functions.iter().map(|f| f.name.as_str()).collect();
                names.sort_unstable();
                let message = format!(
                    "{}: module `{module}` ({source_name}) has no function `{fname}` to slice (it has: {})",
                    stage_at(self.spec, p, p.stage.locations.function),
                    names.join(", ")
                );
                plan.errors
                    .insert(p.key.clone(), ErrorRecord::input(message));
                continue;
            };
            match resolve_points(self.spec, p, func) {
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
        (requests, resolved)
    }

    /// The extent of each `function:` stage whose function is cut: all its ops.
    fn whole_extents(
        &self,
        parsed: &Module,
        requests: &Requests<'a>,
        wholes: &[Whole<'_>],
        plan: &mut SlicePlan,
    ) {
        for w in wholes {
            if let (true, Some(func)) = (
                requests.contains_key(w.function),
                parsed.function(w.function),
            ) {
                plan.extents.insert(
                    w.key.clone(),
                    Extent {
                        function: format!("{}.{}", self.module, w.function),
                        ops: (0..func.ops.len()).collect(),
                    },
                );
            }
        }
    }

    /// One generated module per function cut, added to `plan`; what each
    /// became (its name and slices, or why it could not be emitted).
    fn emit(
        &self,
        parsed: &Module,
        source_name: &str,
        requests: &Requests<'a>,
        plan: &mut SlicePlan,
    ) -> Emitted<'a> {
        let module = self.module;
        let several = requests.len() > 1;
        let mut emitted: Emitted<'a> = HashMap::new();
        for (&fname, reqs) in requests {
            let Some(func) = parsed.function(fname) else {
                continue;
            };
            let name = if several {
                format!("{module}#slices@{fname}")
            } else {
                format!("{module}#slices")
            };
            let symbol = SliceSpec::entry_name(module, "slices");
            match parity_mlir::emit_slices(parsed, func, &symbol, reqs) {
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
        emitted
    }

    /// Points each resolved stage at its generated function, or records why
    /// it cannot run (its module not emitted, or a wrong argument count).
    fn point_stages(
        &self,
        parsed: &Module,
        resolved: Vec<Resolved<'a>>,
        emitted: &Emitted<'a>,
        plan: &mut SlicePlan,
    ) {
        let (spec, module) = (self.spec, self.module);
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
                Extent {
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
