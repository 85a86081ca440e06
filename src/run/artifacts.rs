//! Per-function artifacts: an MLIR module's public functions are compiled
//! into a few group artifacts on a cold cache, and an edit to one function
//! recompiles that function alone.
//!
//! The module is normalised by the IREE compiler (generic form, calls
//! inlined, unused private functions dropped: [`IreeCompiler::normalize`]) and
//! split into one piece per public function with everything it references
//! ([`parity_mlir::split_module`]). A piece's cache key (its text, flags and
//! compiler) is the function's *function key*; its function entry says which
//! artifact holds the function's code ([`parity_iree::split_index`]). The
//! functions whose key has an entry reuse that artifact; the missing ones are
//! compiled in as many groups as there are compile processes
//! ([`compile_pool::job_limit`]), balanced by operation count with alike
//! functions kept together (they share dispatches), each group one
//! module holding its functions and their callees, in parallel child
//! processes ([`super::compile_pool`]). On a cold cache that is a few
//! compiles of large modules (about the CPU of compiling the module whole);
//! after an edit, the edited function alone. A group that fails to compile
//! is compiled again one function at a time, so the error names the function
//! and the others still get their code. A split index keyed by the whole
//! module lets an unchanged module find all of its artifacts without
//! normalising it again.
//!
//! The whole-module compile stays: `PARITY_ARTIFACTS=module` asks for it, and
//! a module that cannot be split (the compiler cannot normalise it, or parity
//! cannot read the normalised form) falls back to it with a warning.

use super::compile_pool::{self, Job};
use parity_iree::{ArtifactCache, CompileOptions, FunctionEntry, IreeCompiler, SplitIndex};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

/// Env var choosing the artifact granularity: `function` (default) or `module`.
pub const ARTIFACTS_ENV: &str = "PARITY_ARTIFACTS";

/// What a module compiled to.
#[derive(Clone, Debug)]
pub enum Artifacts {
    /// One vmfb for the whole module.
    Whole(Arc<Vec<u8>>),
    /// Each public function's code, in artifacts that may hold several.
    PerFunction(FunctionArtifacts),
}

/// The artifacts of a module compiled per function.
#[derive(Clone, Debug, Default)]
pub struct FunctionArtifacts {
    /// Function name -> the key of the artifact holding it (in `artifacts`),
    /// or why it has none (its compile failed).
    pub functions: BTreeMap<String, Result<String, String>>,
    /// Artifact key -> vmfb.
    pub artifacts: BTreeMap<String, Arc<Vec<u8>>>,
}

/// Whether modules are compiled per function (the default) or whole.
pub fn per_function_enabled() -> bool {
    !std::env::var(ARTIFACTS_ENV).is_ok_and(|v| v.trim() == "module")
}

/// One MLIR module to compile per function.
pub struct ModuleJob<'a> {
    /// The module's name in the spec.
    pub name: &'a str,
    /// The file, for messages and source names.
    pub source_name: String,
    /// The module's bytes as read.
    pub mlir: &'a [u8],
    /// Flags and backend.
    pub options: CompileOptions,
    /// The public functions stages use; None: all of them.
    pub wanted: Option<&'a BTreeSet<String>>,
}

/// A module's per-function compile once planned: the functions whose code
/// is in the cache, and the groups still to compile, each with its module
/// text. The caller compiles every module's groups in one pool
/// ([`compile_pool::compile_jobs`]) and hands the results to [`finish`].
pub struct GroupPlan {
    index_key: String,
    /// The normalised module: split again only to retry a failed group.
    normal: String,
    public: Vec<String>,
    index: SplitIndex,
    out: FunctionArtifacts,
    groups: Vec<(Group, String)>,
}

impl GroupPlan {
    /// One compile job per group, in group order.
    pub fn jobs(&self, job: &ModuleJob<'_>) -> Vec<Job> {
        self.groups
            .iter()
            .map(|(group, text)| Job {
                source_name: group_source_name(&job.source_name, &names(group)),
                mlir: text.clone(),
                options: job.options.clone(),
            })
            .collect()
    }
}

/// What [`plan`] found for a module.
pub enum Planned {
    /// Every wanted function's code is in the cache (through the split index).
    Cached(Artifacts),
    /// Groups to compile first (possibly none: the function entries cover
    /// every wanted function, and only the split index is to be written).
    Compile(GroupPlan),
}

/// Plans a module's per-function compile: reuses what the cache holds
/// (the split index, else each function's entry) and groups the missing
/// functions, with the warnings to show. Err (a warning) when the module
/// cannot be split: the caller compiles it whole.
pub fn plan(
    compiler: &IreeCompiler,
    cache: &ArtifactCache,
    job: &ModuleJob<'_>,
    warnings: &mut Vec<String>,
) -> Result<Planned, String> {
    let index_key = cache
        .index_key(compiler, job.mlir, &job.options)
        .map_err(|e| e.to_string())?;
    let mut out = FunctionArtifacts::default();
    // A compile that dumps files runs every time (a hit would skip them).
    let fresh = job.options.writes_files();
    if let Some((index, public)) = cache.read_index_with_public(&index_key).filter(|_| !fresh) {
        let wanted = index
            .iter()
            .filter(|(f, _)| job.wanted.is_none_or(|w| w.contains(*f)));
        // Every wanted function (all public ones when None) has an entry: an
        // index written by a run that wanted fewer does not cover this one.
        let all = match job.wanted {
            Some(w) => w.iter().all(|f| index.contains_key(f)),
            None => public.iter().all(|f| index.contains_key(f)),
        };
        if all
            && wanted
                .into_iter()
                .all(|(f, e)| reuse(cache, &mut out, f, e, warnings))
        {
            return Ok(Planned::Cached(Artifacts::PerFunction(out)));
        }
        out = FunctionArtifacts::default();
    }
    let normal = compiler
        .normalize(&job.source_name, job.mlir)
        .map_err(|e| format!("module `{}`: {e}", job.name))?;
    let split = parity_mlir::split_module(&normal).map_err(|e| {
        format!(
            "module `{}`: {} (normalised by the IREE compiler): {e}",
            job.name, job.source_name
        )
    })?;
    let mut index = SplitIndex::new();
    // Wanted functions with no usable entry: (name, function key).
    let mut missing = Vec::new();
    for function in split.public_functions() {
        let Some(text) = split.module_for(function) else {
            continue;
        };
        let key = cache
            .key(compiler, text.as_bytes(), &job.options)
            .map_err(|e| e.to_string())?;
        let found = cache.read_function(&key).filter(|_| !fresh);
        if let Some(entry) = &found {
            index.insert(function.to_string(), entry.clone());
        }
        if job.wanted.is_some_and(|w| !w.contains(function)) {
            continue;
        }
        let reused = found.is_some_and(|e| reuse(cache, &mut out, function, &e, warnings));
        if !reused {
            missing.push((function.to_string(), key));
        }
    }
    let groups = plan_groups(&split, &missing, compile_pool::job_limit())
        .into_iter()
        .map(|group| {
            let text = split.module_for_group(&names(&group)).unwrap_or_default();
            (group, text)
        })
        .collect();
    let public = split.public_functions().map(str::to_string).collect();
    Ok(Planned::Compile(GroupPlan {
        index_key,
        normal,
        public,
        index,
        out,
        groups,
    }))
}

/// Finishes a planned module with its groups' compile results (in the
/// order of [`GroupPlan::jobs`]): a group of several functions that failed
/// is compiled again one function at a time, so each error names its
/// function and the others get their code; then each group's artifact, a
/// function entry per function and the split index go to the cache.
pub fn finish(
    compiler: &IreeCompiler,
    cache: &ArtifactCache,
    job: &ModuleJob<'_>,
    plan: GroupPlan,
    results: Vec<compile_pool::Outcome>,
    warnings: &mut Vec<String>,
) -> Artifacts {
    let GroupPlan {
        index_key,
        normal,
        public,
        mut index,
        mut out,
        groups,
    } = plan;
    let mut done = Vec::new();
    let mut retry = Vec::new();
    let failed = || Err("the compile job was never run".to_string());
    let mut results = results.into_iter();
    for (group, text) in groups {
        let result = results.next().unwrap_or_else(failed);
        if result.is_err() && group.len() > 1 {
            retry.extend(group.into_iter().map(|f| vec![f]));
        } else {
            done.push((group, text, result));
        }
    }
    if !retry.is_empty() {
        done.extend(compile_one_by_one(compiler, &normal, job, retry));
    }
    for (group, text, result) in done {
        let names = names(&group);
        let vmfb = match result {
            Ok(vmfb) => vmfb,
            Err(message) => {
                for name in names {
                    out.functions.insert(name.to_string(), Err(message.clone()));
                }
                continue;
            }
        };
        let artifact = match cache.key(compiler, text.as_bytes(), &job.options) {
            Ok(key) => key,
            Err(e) => {
                warnings.push(format!("artifact cache not written: {e}"));
                format!("in-memory:{}", names.join(","))
            }
        };
        let source_name = group_source_name(&job.source_name, &names);
        let stored = cache.insert(
            compiler,
            &artifact,
            &source_name,
            text.as_bytes(),
            &job.options,
            &vmfb,
        );
        warnings.extend(stored);
        out.artifacts.insert(artifact.clone(), Arc::new(vmfb));
        for (function, key) in group {
            let entry = FunctionEntry {
                key,
                artifact: artifact.clone(),
                symbol: function.clone(),
            };
            if let Err(e) = cache.write_function(&entry) {
                warnings.push(format!("function entry not written: {e}"));
            }
            out.functions.insert(function.clone(), Ok(artifact.clone()));
            index.insert(function, entry);
        }
    }
    if let Err(e) = cache.write_index(&index_key, &job.source_name, &public, &index) {
        warnings.push(format!("split index not written: {e}"));
    }
    Artifacts::PerFunction(out)
}

/// Takes `function`'s code from the artifact `entry` names (read once per
/// artifact); false when that artifact is not in the cache.
fn reuse(
    cache: &ArtifactCache,
    out: &mut FunctionArtifacts,
    function: &str,
    entry: &FunctionEntry,
    warnings: &mut Vec<String>,
) -> bool {
    if entry.symbol != function {
        return false;
    }
    if !out.artifacts.contains_key(&entry.artifact) {
        let (vmfb, mut w) = cache.read_key(&entry.artifact);
        warnings.append(&mut w);
        let Some(vmfb) = vmfb else {
            return false;
        };
        out.artifacts.insert(entry.artifact.clone(), Arc::new(vmfb));
    }
    out.functions
        .insert(function.to_string(), Ok(entry.artifact.clone()));
    true
}

/// Functions to compile together: (name, function key) of each.
type Group = Vec<(String, String)>;

/// Splits `missing` into at most `jobs` groups of about equal operation
/// count, each group's functions in source order, keeping similar functions
/// together: the compiler builds one dispatch for the operations two
/// functions of one module share (the same stage at one shape, a composite
/// and its parts), so a group of alike functions compiles in less time than
/// the same functions spread over the groups. Largest function first: one
/// that shares little with every group so far starts an empty group, any
/// other goes to the group where the fewest of its lines are new, among the
/// groups it fits in (an equal share of the operations and a tenth more),
/// else to the lightest.
fn plan_groups(
    split: &parity_mlir::SplitModule<'_>,
    missing: &[(String, String)],
    jobs: usize,
) -> Vec<Group> {
    if missing.is_empty() {
        return Vec::new();
    }
    let n = jobs.max(1).min(missing.len());
    let cost: Vec<usize> = missing
        .iter()
        .map(|(f, _)| split.op_count(f).unwrap_or(1))
        .collect();
    let lines: Vec<HashSet<String>> = missing
        .iter()
        .map(|(f, _)| split.function_text(f).map(line_shapes).unwrap_or_default())
        .collect();
    let total: usize = cost.iter().sum();
    let cap = total.div_ceil(n) + total / (10 * n);
    let mut order: Vec<usize> = (0..missing.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost[i]));
    let mut load = vec![0usize; n];
    let mut seen: Vec<HashSet<String>> = vec![HashSet::new(); n];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in order {
        let new_in = |g: usize| lines[i].iter().filter(|h| !seen[g].contains(*h)).count();
        let empty = (0..n).find(|&g| members[g].is_empty());
        let alike = (0..n)
            .filter(|&g| !members[g].is_empty())
            .any(|g| 2 * new_in(g) <= lines[i].len());
        let g = match empty {
            Some(e) if !alike => e,
            _ => (0..n)
                .filter(|&g| load[g] + cost[i] <= cap)
                .min_by_key(|&g| (new_in(g), load[g]))
                .or_else(|| (0..n).min_by_key(|&g| load[g]))
                .unwrap_or(0),
        };
        load[g] += cost[i];
        seen[g].extend(lines[i].iter().cloned());
        members[g].push(i);
    }
    members
        .into_iter()
        .filter(|m| !m.is_empty())
        .map(|mut m| {
            m.sort_unstable();
            m.into_iter().map(|i| missing[i].clone()).collect()
        })
        .collect()
}

/// A function's lines as the compiler sees their shape: each line without
/// its value names (`%12`, `%arg0`) and its location, so
/// `%7 = "stablehlo.add"(%5, %6) : (tensor<4xf32>, ...)` in two functions
/// is one line.
fn line_shapes(text: &str) -> HashSet<String> {
    text.lines()
        .map(|line| {
            let line = line.rfind(" loc(").map_or(line, |at| &line[..at]);
            let mut shape = String::with_capacity(line.len());
            let mut chars = line.trim().chars().peekable();
            while let Some(c) = chars.next() {
                shape.push(c);
                if c == '%' {
                    while chars
                        .next_if(|c| {
                            c.is_ascii_alphanumeric() || matches!(c, '_' | '#' | '$' | '.')
                        })
                        .is_some()
                    {}
                }
            }
            shape
        })
        .collect()
}

/// Compiles each single-function group of a failed group on its own (in
/// the pool), from the module split again; the groups with their module
/// text and result.
fn compile_one_by_one(
    compiler: &IreeCompiler,
    normal: &str,
    job: &ModuleJob<'_>,
    groups: Vec<Group>,
) -> Vec<(Group, String, compile_pool::Outcome)> {
    // It was split once already; should it fail now, each function fails
    // with the message, as its group did.
    let split = parity_mlir::split_module(normal).map_err(|e| e.to_string());
    let jobs: Vec<Job> = groups
        .iter()
        .map(|group| Job {
            source_name: group_source_name(&job.source_name, &names(group)),
            mlir: split
                .as_ref()
                .ok()
                .and_then(|s| s.module_for_group(&names(group)))
                .unwrap_or_default(),
            options: job.options.clone(),
        })
        .collect();
    let results = match &split {
        Ok(_) => compile_pool::compile_jobs(compiler, &jobs),
        Err(e) => jobs.iter().map(|_| Err(e.clone())).collect(),
    };
    groups
        .into_iter()
        .zip(jobs)
        .zip(results)
        .map(|((group, j), result)| (group, j.mlir, result))
        .collect()
}

/// The names of a group's functions.
fn names(group: &Group) -> Vec<&str> {
    group.iter().map(|(f, _)| f.as_str()).collect()
}

/// Labels a group's diagnostics: the file and its function (or how many).
fn group_source_name(source_name: &str, functions: &[&str]) -> String {
    match functions {
        [one] => format!("{source_name}, function @{one}"),
        many => format!("{source_name}, {} functions", many.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A public function of `ops` adds at shape `n`, in generic form.
    fn function(name: &str, n: usize, ops: usize) -> String {
        let t = format!("tensor<{n}xf32>");
        let mut body = String::new();
        let mut last = "%arg0".to_string();
        for i in 0..ops {
            body.push_str(&format!(
                "    %{i} = \"stablehlo.add\"({last}, %arg0) : ({t}, {t}) -> {t} loc(\"{name}/{i}\")\n"
            ));
            last = format!("%{i}");
        }
        format!(
            "  \"func.func\"() <{{function_type = ({t}) -> {t}, sym_name = \"{name}\"}}> ({{\n  ^bb0(%arg0: {t} loc(\"x\")):\n{body}    \"func.return\"({last}) : ({t}) -> () loc(unknown)\n  }}) : () -> () loc(unknown)\n"
        )
    }

    fn groups(functions: &[(&str, usize, usize)], jobs: usize) -> Vec<Vec<String>> {
        // One function more than those missing: a module is never empty.
        let mut text = String::from("\"builtin.module\"() ({\n");
        text.push_str(&function("cached", 2, 1));
        for (name, n, ops) in functions {
            text.push_str(&function(name, *n, *ops));
        }
        text.push_str("}) : () -> () loc(unknown)\n");
        let split = parity_mlir::split_module(&text).unwrap();
        let missing: Vec<(String, String)> = functions
            .iter()
            .map(|(f, ..)| (f.to_string(), format!("key-{f}")))
            .collect();
        plan_groups(&split, &missing, jobs)
            .into_iter()
            .map(|g| g.into_iter().map(|(f, _)| f).collect())
            .collect()
    }

    #[test]
    fn functions_at_one_shape_share_a_group() {
        // Two shapes, interleaved in the module: by operation count alone
        // (largest first, each to the lightest group), `b128` would join
        // `a64`.
        let got = groups(
            &[
                ("a128", 128, 6),
                ("a64", 64, 5),
                ("b128", 128, 5),
                ("b64", 64, 4),
            ],
            2,
        );
        assert_eq!(got, [vec!["a128", "b128"], vec!["a64", "b64"]]);
    }

    #[test]
    fn alike_functions_still_fill_every_group() {
        // One shape only: similarity would put everything in one group; the
        // tenth-over-equal-share cap keeps both compile processes busy.
        let got = groups(&[("a", 8, 10), ("b", 8, 10), ("c", 8, 10), ("d", 8, 10)], 2);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|g| g.len() == 2), "{got:?}");
        // One job, or more jobs than functions.
        assert_eq!(groups(&[("a", 8, 3), ("b", 4, 3)], 1).len(), 1);
        assert_eq!(groups(&[("a", 8, 3), ("b", 4, 3)], 8).len(), 2);
        // Nothing missing: no group.
        assert!(groups(&[], 2).is_empty());
    }

    #[test]
    fn a_line_shape_leaves_out_value_names_and_locations() {
        let a = line_shapes(
            "%12 = \"stablehlo.add\"(%10, %arg0) : (tensor<4xf32>) -> tensor<4xf32> loc(\"a\")",
        );
        let b = line_shapes(
            "%7 = \"stablehlo.add\"(%5, %arg3) : (tensor<4xf32>) -> tensor<4xf32> loc(#loc9)",
        );
        let c = line_shapes(
            "%7 = \"stablehlo.add\"(%5, %arg3) : (tensor<8xf32>) -> tensor<8xf32> loc(#loc9)",
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
