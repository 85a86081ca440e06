//! `weight_transforms:`: per-weight transforms applied when a weight is
//! loaded (a rename, a transpose permutation, a reshape, a dtype cast), so that a
//! checkpoint in another layout (e.g. HF `[out, in]` matrices for a keras
//! `[in, out]` module) feeds the module without a conversion script. They are
//! explicit: a square matrix fed untransposed would otherwise give wrong
//! numbers silently. The runner records every applied transform.

use crate::arg_parse::{dtype, location, template_string};
use crate::bind::{capture_refs, expand, NamePattern};
use crate::error::SpecError;
use crate::reader::Cx;
use crate::stage_model::Location;
use crate::yaml::Node;
use parity_tensor::DType;

const KEYS: &[&str] = &["match", "rename", "transpose", "reshape", "cast"];

/// One `weight_transforms:` entry. The first entry whose `match` matches a
/// weight name (as a stage asks for it) applies to that weight; at most one does.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightTransform {
    /// Which weights: a regular expression on the whole name.
    pub pattern: NamePattern,
    /// The name to read from the weight files instead (`$1`..`$9`: captures).
    pub rename: Option<String>,
    /// Axis permutation (`[1, 0]` transposes a matrix): result axis `i` is source axis `transpose[i]`.
    pub transpose: Option<Vec<usize>>,
    /// Shape the weight is given after `transpose` (same element count, row-major order kept).
    pub reshape: Option<Vec<usize>>,
    /// Dtype the weight is converted to after loading.
    pub cast: Option<DType>,
    /// Where the entry is in the spec.
    pub location: Location,
}

impl WeightTransform {
    /// The name to read for weight `name`, when this entry applies to it.
    pub fn source_for(&self, name: &str) -> Option<String> {
        let captures = self.pattern.captures(name)?;
        Some(match &self.rename {
            Some(to) => expand(to, &captures, &[]),
            None => name.to_string(),
        })
    }
}

/// Reads `weight_transforms: [...]`.
pub(crate) fn parse_transforms(
    cx: &Cx<'_>,
    node: &Node,
) -> Result<Vec<WeightTransform>, SpecError> {
    let mut out = Vec::new();
    for (i, item) in cx.list(node, "weight_transforms")?.iter().enumerate() {
        let m = cx.map(item, "weight transform", "weight transform", KEYS)?;
        let match_node = m.req(cx, "match")?;
        let text = cx.name(match_node, "match")?;
        let pattern = NamePattern::new(&text).map_err(|e| {
            cx.invalid(
                match_node,
                format!("weight transform {i}: `match` is not a valid regular expression: {e}"),
            )
        })?;
        let rename = match m.opt("rename") {
            None => None,
            Some(r) => {
                let to = cx.name(r, "rename")?;
                if let Some(bad) = capture_refs(&to).find(|&d| d >= pattern.groups()) {
                    return Err(cx.invalid(
                        r,
                        format!(
                            "weight transform {i}: `${bad}` but the pattern has {} capture groups",
                            pattern.groups() - 1
                        ),
                    ));
                }
                Some(to)
            }
        };
        let transpose = match m.opt("transpose") {
            None => None,
            Some(t) => {
                let perm: Vec<usize> = cx
                    .list(t, "transpose")?
                    .iter()
                    .map(|d| cx.usize(d, "transpose"))
                    .collect::<Result<_, _>>()?;
                let mut seen = perm.clone();
                seen.sort_unstable();
                if perm.is_empty() || seen != (0..perm.len()).collect::<Vec<_>>() {
                    return Err(cx.invalid(
                        t,
                        format!("weight transform {i}: `transpose` {perm:?} is not a permutation of 0..{}", perm.len()),
                    ));
                }
                Some(perm)
            }
        };
        let reshape = match m.opt("reshape") {
            None => None,
            Some(r) => Some(
                cx.list(r, "reshape")?
                    .iter()
                    .map(|d| cx.usize(d, "reshape"))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let cast = m.opt("cast").map(|c| dtype(cx, c, "cast")).transpose()?;
        if rename.is_none() && transpose.is_none() && reshape.is_none() && cast.is_none() {
            return Err(cx.invalid(
                item,
                format!("weight transform {i} does nothing: give `rename`, `transpose`, `reshape` or `cast`"),
            ));
        }
        out.push(WeightTransform {
            pattern,
            rename,
            transpose,
            reshape,
            cast,
            location: location(item),
        });
    }
    Ok(out)
}

/// One `checkpoints:` entry: an oracle tensor that is the value of a point of
/// the functions parity bisects, when it is not named after that point's
/// scope (the MLX recorder names tensors after modules, `conformer.0.attention`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointMap {
    /// The oracle tensor (template over the case, e.g. `"{case}/l1"`).
    pub oracle: String,
    /// The point it is the value of, spelled as a `slice:` point (`dense_1`, `%12`).
    pub point: String,
    /// Where the entry is in the spec.
    pub location: Location,
}

/// Reads `checkpoints: [{oracle, point}, ...]`.
pub(crate) fn parse_checkpoints(cx: &Cx<'_>, node: &Node) -> Result<Vec<CheckpointMap>, SpecError> {
    let mut out: Vec<CheckpointMap> = Vec::new();
    for item in cx.list(node, "checkpoints")? {
        let m = cx.map(item, "checkpoint", "checkpoint", &["oracle", "point"])?;
        let oracle_node = m.req(cx, "oracle")?;
        let oracle = template_string(cx, "checkpoints", oracle_node, "oracle")?;
        let point = cx.name(m.req(cx, "point")?, "point")?;
        if out.iter().any(|c| c.oracle == oracle) {
            return Err(cx.invalid(
                oracle_node,
                format!("checkpoint oracle tensor `{oracle}` is mapped twice"),
            ));
        }
        out.push(CheckpointMap {
            oracle,
            point,
            location: location(item),
        });
    }
    Ok(out)
}
