//! The stage graph: unique names, resolved `stage:` references, no cycles, and
//! a stable topological order.

use crate::error::{SpecError, SpecErrorKind};
use crate::model::{Arg, Location, Stage};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

fn at(file: &Path, loc: Location) -> crate::Position {
    crate::Position {
        file: file.to_path_buf(),
        line: loc.line,
        col: loc.col,
        alias: None,
    }
}

/// Checks names and references, fills in the output of `{stage: name}` shorthand
/// arguments, and rejects dependency cycles.
pub(crate) fn resolve(file: &Path, stages: &mut [Stage]) -> Result<(), SpecError> {
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, s) in stages.iter().enumerate() {
        if let Some(&first) = index.get(&s.name) {
            return Err(SpecErrorKind::DuplicateStage {
                at: at(file, s.location),
                name: s.name.clone(),
                first_line: stages[first].location.line,
            }
            .into());
        }
        index.insert(s.name.clone(), i);
    }
    // Output names per stage, to resolve references without borrowing `stages` twice.
    let outputs: Vec<Vec<String>> = stages
        .iter()
        .map(|s| s.outputs.iter().map(|o| o.name.clone()).collect())
        .collect();
    for s in stages.iter_mut() {
        // Positional arguments, then `bind:` rules (numbered as rules).
        let mut refs: Vec<(usize, Location, &mut Arg)> = Vec::new();
        for (a, arg) in s.args.iter_mut().enumerate() {
            let loc = s.locations.args.get(a).copied().unwrap_or(s.location);
            refs.push((a, loc, arg));
        }
        if let Some(bind) = &mut s.bind {
            for (r, rule) in bind.rules.iter_mut().enumerate() {
                refs.push((r, rule.location, &mut rule.source));
            }
        }
        for (a, loc, arg) in refs {
            let Arg::Stage { stage, output } = arg else {
                continue;
            };
            let pos = at(file, loc);
            let Some(&target) = index.get(stage.as_str()) else {
                return Err(SpecErrorKind::UnknownStage {
                    at: pos,
                    stage: s.name.clone(),
                    arg: a,
                    referenced: stage.clone(),
                }
                .into());
            };
            let available = &outputs[target];
            let listed = format!("its outputs are: {}", available.join(", "));
            if output.is_empty() {
                match available.as_slice() {
                    [only] => *output = only.clone(),
                    _ => {
                        return Err(SpecErrorKind::UnknownOutput {
                            at: pos,
                            stage: s.name.clone(),
                            arg: a,
                            referenced: stage.clone(),
                            output: String::new(),
                            detail: format!(
                                "is ambiguous: name one as `{stage}.<output>`; {listed}"
                            ),
                        }
                        .into());
                    }
                }
            } else if !available.contains(output) {
                return Err(SpecErrorKind::UnknownOutput {
                    at: pos,
                    stage: s.name.clone(),
                    arg: a,
                    referenced: stage.clone(),
                    output: output.clone(),
                    detail: format!("does not exist; {listed}"),
                }
                .into());
            }
        }
    }
    check_acyclic(file, stages, &index)
}

/// Indices of each stage's dependencies (unknown names are skipped; `resolve` reports them).
fn edges(stages: &[Stage], index: &HashMap<String, usize>) -> Vec<Vec<usize>> {
    stages
        .iter()
        .map(|s| {
            s.dependencies()
                .into_iter()
                .filter_map(|d| index.get(d).copied())
                .collect()
        })
        .collect()
}

fn check_acyclic(
    file: &Path,
    stages: &[Stage],
    index: &HashMap<String, usize>,
) -> Result<(), SpecError> {
    let deps = edges(stages, index);
    // 0 = unvisited, 1 = on the current path, 2 = done. Iterative so a long
    // chain of stages cannot overflow the stack.
    let mut state = vec![0u8; stages.len()];
    for root in 0..stages.len() {
        if state[root] != 0 {
            continue;
        }
        let mut path: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some(&mut (node, ref mut next)) = path.last_mut() {
            if let Some(&dep) = deps[node].get(*next) {
                *next += 1;
                match state[dep] {
                    0 => {
                        state[dep] = 1;
                        path.push((dep, 0));
                    }
                    1 => return Err(cycle_error(file, stages, &path, dep)),
                    _ => {}
                }
            } else {
                state[node] = 2;
                path.pop();
            }
        }
    }
    Ok(())
}

/// Builds the error for a cycle closing at `dep`, rotated to start at its
/// first stage in file order so the message does not depend on traversal order.
fn cycle_error(file: &Path, stages: &[Stage], path: &[(usize, usize)], dep: usize) -> SpecError {
    let start = path.iter().position(|&(n, _)| n == dep).unwrap_or(0);
    // `path` runs consumer -> producer; reverse so the message reads producer -> consumer.
    let mut cycle: Vec<usize> = path[start..].iter().map(|&(n, _)| n).collect();
    cycle.reverse();
    let first = cycle
        .iter()
        .enumerate()
        .min_by_key(|&(_, &n)| n)
        .map_or(0, |(i, _)| i);
    cycle.rotate_left(first);
    let mut names: Vec<&str> = cycle.iter().map(|&n| stages[n].name.as_str()).collect();
    names.push(names[0]);
    let head = &stages[cycle[0]];
    SpecErrorKind::Cycle {
        at: at(file, head.location),
        stage: head.name.clone(),
        cycle: names.join(" -> "),
    }
    .into()
}

/// Stage indices so that every stage comes after its dependencies; among
/// independent stages, file order. Stages on a cycle (impossible in a
/// validated spec) are appended in file order.
pub(crate) fn topo_order(stages: &[Stage]) -> Vec<usize> {
    let index: HashMap<String, usize> = stages
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.clone(), i))
        .collect();
    let deps = edges(stages, &index);
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); stages.len()];
    for (i, ds) in deps.iter().enumerate() {
        for &d in ds {
            consumers[d].push(i);
        }
    }
    let mut ready: BTreeSet<usize> = (0..stages.len()).filter(|&i| waiting[i] == 0).collect();
    let mut order = Vec::with_capacity(stages.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &c in &consumers[i] {
            waiting[c] -= 1;
            if waiting[c] == 0 {
                ready.insert(c);
            }
        }
    }
    if order.len() < stages.len() {
        let placed: BTreeSet<usize> = order.iter().copied().collect();
        order.extend((0..stages.len()).filter(|i| !placed.contains(i)));
    }
    order
}
