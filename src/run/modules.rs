//! Compiles every module of a spec once per run (through the artifact cache;
//! MLIR modules per function, see [`super::artifacts`]), and the generated
//! slice modules beside them; [`super::module_set`] loads them.

use super::artifacts::{self, Artifacts, ModuleJob, Planned};
use super::compile_pool;
pub use super::module_error::{CompilerUnavailable, ModuleError};
use super::slices::SliceModule;
use super::RunOptions;
use crate::target::Target;
use parity_iree::{ArtifactCache, Cached, CompileOptions, IreeCompiler};
use parity_record::{ErrorRecord, RunRecord};
use parity_spec::{ModuleSource, Spec};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Each module's compiled artifacts, or why they could not be had.
pub type Compiled = BTreeMap<String, Result<Artifacts, ModuleError>>;

/// Module name -> the functions stages call in it.
pub type Used = BTreeMap<String, BTreeSet<String>>;

/// Loads the IREE compiler when `needed` (some module is MLIR, or a stage is a
/// slice), recording its revision; `Err` says why it is not available.
pub fn load_compiler(
    options: &RunOptions,
    needed: bool,
    record: &mut RunRecord,
) -> Result<IreeCompiler, CompilerUnavailable> {
    if !needed {
        return Err(CompilerUnavailable::NotLoaded);
    }
    match IreeCompiler::load(options.compiler_lib.as_deref()) {
        Ok(c) => {
            record.compiler_revision = Some(c.revision());
            Ok(c)
        }
        Err(e) => Err(CompilerUnavailable::Load(Arc::new(e))),
    }
}

/// Compiles (or reads) every module the spec declares. Failures are recorded
/// in `record.errors` and remembered per module, so the stages using a broken
/// module error while the others run: a module file that cannot be read (or is
/// not a regular file) is an input error, a failed compile an execution error.
/// Cache problems are warnings (`record.warnings`, and stderr), never errors.
/// Every public function of an MLIR module is compiled; see [`compile_for`].
pub fn compile_all(
    spec: &Spec,
    target: &Target,
    options: &RunOptions,
    compiler: &Result<IreeCompiler, CompilerUnavailable>,
    record: &mut RunRecord,
) -> Compiled {
    compile_for(spec, target, options, compiler, None, record)
}

/// [`compile_all`], compiling of each MLIR module only the functions `used`
/// names (all of them for a module it does not list, or when None). A
/// function that fails to compile is an execution error naming the file and
/// function; the module's other functions are still compiled. The groups
/// of every module compiled per function go to one pool of compiler
/// processes, so none waits for another module's slowest group.
pub fn compile_for(
    spec: &Spec,
    target: &Target,
    options: &RunOptions,
    compiler: &Result<IreeCompiler, CompilerUnavailable>,
    used: Option<&Used>,
    record: &mut RunRecord,
) -> Compiled {
    let cache = ArtifactCache::new(&options.cache_dir);
    let mut compiled = BTreeMap::new();
    let mut planned = Vec::new();
    for (name, module) in &spec.subject.modules {
        // The target's own prebuilt vmfb for this module, when it gives one.
        let module = target.module(name, module);
        // A module none of the selected stages calls is not compiled at all
        // (`--stage` on a GPU target would otherwise compile every module).
        if used.is_some_and(|u| !u.contains_key(name)) {
            continue;
        }
        let read = |path: &std::path::Path| {
            parity_tensor::read_module_bytes(path).map_err(|e| ModuleError::Read {
                module: name.clone(),
                path: path.to_path_buf(),
                source: Arc::new(e),
            })
        };
        let vmfb = match &module.source {
            ModuleSource::Vmfb(path) => read(path).map(|b| Some(Artifacts::Whole(b.into()))),
            ModuleSource::Mlir(path) => match compiler {
                Err(why) => Err(ModuleError::NoCompiler {
                    module: name.clone(),
                    source: why.clone(),
                }),
                Ok(compiler) => read(path).and_then(|mlir| {
                    parity_mlir::check_nesting(&mlir).map_err(|source| ModuleError::TooDeep {
                        module: name.clone(),
                        path: path.to_path_buf(),
                        source,
                    })?;
                    let pending = Pending {
                        name,
                        source_name: path.display().to_string(),
                        mlir,
                        options: target.compile_options(&module.flags),
                        wanted: used.and_then(|u| u.get(name)),
                    };
                    match plan_mlir(compiler, &cache, &pending, record) {
                        Next::Compile(plan) => {
                            planned.push((pending, plan));
                            Ok(None)
                        }
                        Next::Whole => compile_whole(compiler, &cache, &pending.job(), record),
                        Next::Cached(done) => Ok(Some(done)),
                    }
                }),
            },
        };
        match vmfb {
            Ok(None) => {}
            Ok(Some(done)) => {
                compiled.insert(name.clone(), Ok(done));
            }
            Err(e) => {
                record.errors.push(module_error_record(&e));
                compiled.insert(name.clone(), Err(e));
            }
        }
    }
    if let Ok(compiler) = compiler {
        for (name, done) in compile_planned(compiler, &cache, planned, record) {
            compiled.insert(name, Ok(done));
        }
    }
    compiled
}

/// An MLIR module read and waiting for its artifacts.
struct Pending<'a> {
    name: &'a str,
    source_name: String,
    mlir: Vec<u8>,
    options: CompileOptions,
    wanted: Option<&'a BTreeSet<String>>,
}

impl Pending<'_> {
    fn job(&self) -> ModuleJob<'_> {
        ModuleJob {
            name: self.name,
            source_name: self.source_name.clone(),
            mlir: &self.mlir,
            options: self.options.clone(),
            wanted: self.wanted,
        }
    }
}

/// What an MLIR module needs next.
enum Next {
    /// Its groups compiled (with every other module's, in one pool).
    Compile(artifacts::GroupPlan),
    /// A whole-module compile: per-function artifacts are turned off, or
    /// the module cannot be split (a warning says why).
    Whole,
    /// Nothing: its artifacts are all in the cache.
    Cached(Artifacts),
}

/// A module's artifacts, or why it has none.
type Step = Result<Option<Artifacts>, ModuleError>;

/// Plans an MLIR module's per-function compile; warnings go to the record.
fn plan_mlir(
    compiler: &IreeCompiler,
    cache: &ArtifactCache,
    pending: &Pending<'_>,
    record: &mut RunRecord,
) -> Next {
    if !artifacts::per_function_enabled() {
        return Next::Whole;
    }
    let mut warnings = Vec::new();
    let planned = artifacts::plan(compiler, cache, &pending.job(), &mut warnings);
    let fallback = planned.as_ref().err().map(|why| {
        format!(
            "{why}; compiling module `{}` whole (one artifact for all its functions)",
            pending.name
        )
    });
    for warning in warnings.into_iter().chain(fallback) {
        eprintln!("parity: warning: {warning}");
        record.warnings.push(warning);
    }
    match planned {
        Ok(Planned::Cached(done)) => Next::Cached(done),
        Ok(Planned::Compile(plan)) => Next::Compile(plan),
        Err(_) => Next::Whole,
    }
}

/// Compiles every planned module's groups in one pool and finishes each
/// module; per-function compile failures are recorded, each naming its
/// function.
fn compile_planned(
    compiler: &IreeCompiler,
    cache: &ArtifactCache,
    planned: Vec<(Pending<'_>, artifacts::GroupPlan)>,
    record: &mut RunRecord,
) -> Vec<(String, Artifacts)> {
    let mut counts = Vec::new();
    let mut all = Vec::new();
    for (pending, plan) in &planned {
        let jobs = plan.jobs(&pending.job());
        counts.push(jobs.len());
        all.extend(jobs);
    }
    let mut results = compile_pool::compile_jobs(compiler, &all).into_iter();
    let mut done = Vec::new();
    for ((pending, plan), count) in planned.into_iter().zip(counts) {
        let mine: Vec<_> = results.by_ref().take(count).collect();
        let mut warnings = Vec::new();
        let artifacts =
            artifacts::finish(compiler, cache, &pending.job(), plan, mine, &mut warnings);
        for warning in warnings {
            eprintln!("parity: warning: {warning}");
            record.warnings.push(warning);
        }
        if let Artifacts::PerFunction(per) = &artifacts {
            for (function, result) in &per.functions {
                if let Err(diagnostic) = result {
                    record
                        .errors
                        .push(module_error_record(&ModuleError::Function {
                            module: pending.name.to_string(),
                            function: function.clone(),
                            diagnostic: diagnostic.clone(),
                        }));
                }
            }
        }
        done.push((pending.name.to_string(), artifacts));
    }
    done
}

/// A module compiled whole, through the cache.
fn compile_whole(
    compiler: &IreeCompiler,
    cache: &ArtifactCache,
    job: &ModuleJob<'_>,
    record: &mut RunRecord,
) -> Step {
    cache
        .get_or_compile(compiler, &job.source_name, job.mlir, &job.options)
        .map(|cached| Some(Artifacts::Whole(keep_warnings(cached, record).into())))
        .map_err(|e| ModuleError::Compile {
            module: job.name.to_string(),
            source: Arc::new(e),
        })
}

/// The vmfb of a cache lookup; its warnings go to the run record and stderr,
/// where a user sees them (the run goes on with the module in memory).
fn keep_warnings(cached: Cached, record: &mut RunRecord) -> Vec<u8> {
    for warning in cached.warnings {
        eprintln!("parity: warning: {warning}");
        record.warnings.push(warning);
    }
    cached.vmfb
}

/// Compiles the generated slice modules with their parent module's flags
/// (through the same cache) and adds them to `compiled` under their own names.
pub fn compile_slices(
    spec: &Spec,
    target: &Target,
    options: &RunOptions,
    compiler: &Result<IreeCompiler, CompilerUnavailable>,
    slices: &[SliceModule],
    compiled: &mut Compiled,
    record: &mut RunRecord,
) {
    let cache = ArtifactCache::new(&options.cache_dir);
    for slice in slices {
        let vmfb = match (compiler, spec.subject.modules.get(&slice.parent)) {
            (Err(why), _) => Err(ModuleError::NoCompiler {
                module: slice.name.clone(),
                source: why.clone(),
            }),
            (_, None) => Err(ModuleError::UndeclaredParent {
                module: slice.name.clone(),
                parent: slice.parent.clone(),
            }),
            (Ok(compiler), Some(parent)) => {
                let source_name = match &parent.source {
                    ModuleSource::Mlir(p) | ModuleSource::Vmfb(p) => {
                        format!("{}#slices", p.display())
                    }
                };
                cache
                    .get_or_compile(
                        compiler,
                        &source_name,
                        slice.mlir.as_bytes(),
                        &target.compile_options(&parent.flags),
                    )
                    .map(|cached| keep_warnings(cached, record))
                    .map_err(|e| ModuleError::Compile {
                        module: slice.name.clone(),
                        source: Arc::new(e),
                    })
            }
        };
        if let Err(e) = &vmfb {
            record.errors.push(module_error_record(e));
        }
        compiled.insert(slice.name.clone(), vmfb.map(|b| Artifacts::Whole(b.into())));
    }
}

/// A module error as a record error (kind and message).
fn module_error_record(e: &ModuleError) -> ErrorRecord {
    ErrorRecord {
        kind: e.kind(),
        message: e.to_string(),
        location: None,
    }
}
