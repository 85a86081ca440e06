//! Queries over a function's SSA graph: dependence on arguments, backward cones,
//! named-scope checkpoints and resolving user-given point names.

use std::collections::BTreeMap;

use crate::error::MlirError;
use crate::ir::{Def, Function, ValueId};

impl Function {
    /// Whether `v` depends on no function argument, directly or transitively (captures
    /// included). Arguments and unknown ids are not constant.
    pub fn is_constant(&self, v: ValueId) -> bool {
        let Some(value) = self.values.get(v) else {
            return false;
        };
        let Def::Op { op: target, .. } = value.def else {
            return false;
        };
        let mut depends = vec![false; target + 1];
        for op in 0..=target {
            depends[op] = self.inputs(op).any(|input| match self.values[input].def {
                Def::Arg(_) => true,
                Def::Op { op: def, .. } => depends[def],
            });
        }
        !depends[target]
    }

    /// Ops needed to compute `to` when every value in `from` (and every function argument)
    /// is given: the backward closure, in program order. Unknown ids are ignored.
    pub fn cone(&self, from: &[ValueId], to: &[ValueId]) -> Vec<usize> {
        let mut given = vec![false; self.values.len()];
        for &v in from {
            if let Some(g) = given.get_mut(v) {
                *g = true;
            }
        }
        let mut needed = vec![false; self.ops.len()];
        let mut stack: Vec<ValueId> = to
            .iter()
            .copied()
            .filter(|&v| v < self.values.len())
            .collect();
        while let Some(v) = stack.pop() {
            if given[v] {
                continue;
            }
            let Def::Op { op, .. } = self.values[v].def else {
                continue;
            };
            if !needed[op] {
                needed[op] = true;
                stack.extend(self.inputs(op));
            }
        }
        (0..self.ops.len()).filter(|&op| needed[op]).collect()
    }

    /// Naming convention for oracle checkpoints. For every op with a path p = s1/../sn,
    /// for every prefix S = s1/../sk (1<=k<=n) the op is "in" S. Output of S = first
    /// result of the LAST op (program order) in S. Key = S with '/' replaced by '_'.
    /// Only ops with results; returns key -> value.
    pub fn scope_outputs(&self) -> BTreeMap<String, ValueId> {
        let mut out = BTreeMap::new();
        for op in &self.ops {
            let Some(&first) = op.results.first() else {
                continue;
            };
            let Some(segments) = op.loc.path_segments() else {
                continue;
            };
            let mut key = String::new();
            for segment in &segments {
                if !key.is_empty() {
                    key.push('_');
                }
                key.push_str(&segment.replace('/', "_"));
                out.insert(key.clone(), first);
            }
        }
        out
    }

    /// Resolves a named point: `%12` / `%arg3` (SSA as printed), a scope path
    /// `conformer_0/attention`, or its `_` form `conformer_0_attention` (via
    /// [`Function::scope_outputs`]). The error lists a few near names.
    pub fn resolve_point(&self, point: &str) -> Result<ValueId, MlirError> {
        let point = point.trim();
        if point.starts_with('%') {
            return self.value_by_name(point).ok_or_else(|| {
                let names = self.values.iter().map(|v| v.name.as_str());
                self.point_error(point, "no value", names)
            });
        }
        let scopes = self.scope_outputs();
        let key = point.replace('/', "_");
        scopes.get(&key).copied().ok_or_else(|| {
            self.point_error(point, "no named scope", scopes.keys().map(String::as_str))
        })
    }

    fn point_error<'a>(
        &self,
        point: &str,
        what: &str,
        names: impl Iterator<Item = &'a str>,
    ) -> MlirError {
        let key = point.replace('/', "_");
        let mut ranked: Vec<(usize, &str)> = names.map(|n| (edit_distance(&key, n), n)).collect();
        ranked.sort();
        let near: Vec<&str> = ranked.iter().take(5).map(|&(_, n)| n).collect();
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!("; near names: {}", near.join(", "))
        };
        MlirError::at_line(
            self.line,
            format!("{what} `{point}` in function @{}{hint}", self.name),
        )
    }
}

/// Levenshtein distance over bytes.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != cb);
            row[j + 1] = subst.min(prev[j + 1] + 1).min(row[j] + 1);
        }
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
