//! Reading the values every section shares: spec-file positions, template
//! strings, dtypes and stage arguments (`oracle`, `weight`, `stage`,
//! `literal`). Stages, `bind:` rules, `tokens:`, `fuzz:` and weight
//! transforms all read them, so they sit below every section's reader.

use crate::error::{SpecError, SpecErrorKind};
use crate::reader::Cx;
use crate::stage_model::{Arg, Location};
use crate::template::{self, TemplateError};
use crate::yaml::Node;
use parity_tensor::DType;

const ARG_KEYS: &[&str] = &["oracle", "weight", "stage", "literal"];
const LITERAL_KEYS: &[&str] = &["dtype", "shape", "value", "values"];

/// Most literal elements (after broadcast) one spec may hold, all literals
/// together; literals are for small constants like lengths and scales, and a
/// spec-wide budget bounds what a spec can make us allocate.
pub const MAX_LITERAL_ELEMENTS: usize = 1 << 20;

/// Where `node` is in the spec file (1-based line and column).
pub(crate) fn location(node: &Node) -> Location {
    Location {
        line: node.mark.line,
        col: node.mark.col,
    }
}

/// Reads a string that may contain `{case}` / `{var}`, checking its brace syntax.
pub(crate) fn template_string(
    cx: &Cx<'_>,
    stage: &str,
    node: &Node,
    field: &str,
) -> Result<String, SpecError> {
    let text = cx.name(node, field)?;
    match template::check(&text) {
        Ok(()) => Ok(text),
        Err(TemplateError::Syntax(message) | TemplateError::UnknownVariable(message)) => {
            Err(SpecErrorKind::Template {
                at: cx.at(node),
                stage: stage.to_string(),
                text,
                message,
            }
            .into())
        }
    }
}

/// Reads a dtype name (canonical names and the aliases `DType::from_str` takes).
pub(crate) fn dtype(cx: &Cx<'_>, node: &Node, field: &str) -> Result<DType, SpecError> {
    let name = cx.string(node, field)?;
    name.parse::<DType>().map_err(|_| {
        SpecErrorKind::UnknownDType {
            at: cx.at(node),
            scope: cx.scope.clone(),
            name,
        }
        .into()
    })
}

/// Reads argument `index` of `stage`: a mapping with exactly one of
/// `oracle`, `weight`, `stage`, `literal`.
pub(crate) fn parse_arg(
    cx: &Cx<'_>,
    stage: &str,
    index: usize,
    node: &Node,
    literal_budget: &mut usize,
) -> Result<Arg, SpecError> {
    let m = cx.map(node, "argument", "argument", ARG_KEYS)?;
    let mut entries = m.entries();
    let (Some((key, value)), None) = (entries.next(), entries.next()) else {
        return Err(cx.invalid(
            node,
            format!("argument {index} must have exactly one of: oracle, weight, stage, literal"),
        ));
    };
    parse_arg_entry(
        cx,
        stage,
        index,
        key.scalar().unwrap_or_default(),
        value,
        literal_budget,
    )
}

/// Reads one argument source given as `key: value` (`oracle`, `weight`,
/// `stage` or `literal`; any other key is taken as `literal`, so callers check keys first).
pub(crate) fn parse_arg_entry(
    cx: &Cx<'_>,
    stage: &str,
    index: usize,
    key: &str,
    value: &Node,
    literal_budget: &mut usize,
) -> Result<Arg, SpecError> {
    Ok(match key {
        "oracle" => Arg::Oracle(template_string(cx, stage, value, "oracle")?),
        "weight" => Arg::Weight(template_string(cx, stage, value, "weight")?),
        "stage" => {
            let text = cx.name(value, "stage")?;
            // Stage names cannot contain `.`, so the first dot splits stage from output.
            let (stage, output) = text.split_once('.').unwrap_or((text.as_str(), ""));
            Arg::Stage {
                stage: stage.to_string(),
                output: output.to_string(),
            }
        }
        _ => parse_literal(cx, stage, index, value, literal_budget)?,
    })
}

fn parse_literal(
    cx: &Cx<'_>,
    stage: &str,
    index: usize,
    node: &Node,
    literal_budget: &mut usize,
) -> Result<Arg, SpecError> {
    let m = cx.map(node, "literal", "literal", LITERAL_KEYS)?;
    let dtype = dtype(cx, m.req(cx, "dtype")?, "dtype")?;
    let shape: Vec<usize> = match m.opt("shape") {
        Some(s) => cx
            .list(s, "shape")?
            .iter()
            .map(|d| cx.usize(d, "shape"))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let numel = parity_tensor::checked_numel(&shape)
        .filter(|&n| n <= *literal_budget)
        .ok_or_else(|| {
            cx.invalid(
                node,
                format!(
                    "argument {index}: literal shape {shape:?} is too large: all literals in a spec \
                     may have at most {MAX_LITERAL_ELEMENTS} elements together ({} left)",
                    *literal_budget
                ),
            )
        })?;
    *literal_budget -= numel;
    let values = match (m.opt("value"), m.opt("values")) {
        (Some(v), None) => vec![literal_value(cx, index, dtype, v)?; numel],
        (None, Some(list)) => {
            let items = cx.list(list, "values")?;
            if items.len() != numel {
                return Err(SpecErrorKind::LiteralCount {
                    at: cx.at(list),
                    stage: stage.to_string(),
                    arg: index,
                    shape,
                    expected: numel,
                    found: items.len(),
                }
                .into());
            }
            items
                .iter()
                .map(|v| literal_value(cx, index, dtype, v))
                .collect::<Result<_, _>>()?
        }
        _ => {
            return Err(cx.invalid(
                node,
                format!(
                "argument {index}: a literal needs exactly one of `value` (broadcast) or `values`"
            ),
            ))
        }
    };
    Ok(Arg::Literal {
        dtype,
        shape,
        values,
    })
}

/// Reads one literal element, refusing values the dtype cannot hold exactly.
fn literal_value(cx: &Cx<'_>, index: usize, dtype: DType, node: &Node) -> Result<f64, SpecError> {
    if dtype == DType::Bool {
        if let Some(b) = node.as_bool() {
            return Ok(if b { 1.0 } else { 0.0 });
        }
    }
    let v = cx.f64(node, "literal value")?;
    let range = match dtype {
        DType::Bool => Some((0.0, 1.0)),
        DType::U8 => Some((0.0, 255.0)),
        DType::I8 => Some((-128.0, 127.0)),
        DType::I16 => Some((-32768.0, 32767.0)),
        DType::I32 => Some((-2147483648.0, 2147483647.0)),
        // Past 2^53 an f64 cannot hold every i64 exactly.
        DType::I64 => Some((-9007199254740992.0, 9007199254740992.0)),
        DType::F16 | DType::Bf16 | DType::F32 | DType::F64 => None,
    };
    if let Some((lo, hi)) = range {
        if v.fract() != 0.0 || !(lo..=hi).contains(&v) {
            return Err(cx.invalid(
                node,
                format!("argument {index}: literal value {v} is not a valid {dtype} (integer in [{lo}, {hi}])"),
            ));
        }
    }
    Ok(v)
}
