//! Reading one `stages:` entry: name, module, function, arguments and outputs.
//! Checks that need only this stage happen here; cross-stage checks are in `graph`.

use crate::error::{Scope, SpecError, SpecErrorKind};
use crate::model::{
    Arg, Location, MaskSource, MaskSpec, OutputSpec, SliceSpec, Stage, StageLocations,
};
use crate::reader::Cx;
use crate::template::{self, TemplateError};
use crate::tolerance::tolerance;
use crate::yaml::Node;
use parity_tensor::DType;

const STAGE_KEYS: &[&str] = &[
    "name", "module", "function", "slice", "args", "bind", "outputs",
];
const SLICE_KEYS: &[&str] = &["function", "from", "to"];
const ARG_KEYS: &[&str] = &["oracle", "weight", "stage", "literal"];
const LITERAL_KEYS: &[&str] = &["dtype", "shape", "value", "values"];
const OUTPUT_KEYS: &[&str] = &[
    "name",
    "oracle",
    "truth",
    "mask",
    "tolerance",
    "ulp_dtype",
    "equal_nan",
    "allow_empty",
];
const MASK_KEYS: &[&str] = &["oracle", "arg", "axes", "padded", "assert_zero"];

/// Most literal elements (after broadcast) one spec may hold, all literals
/// together; literals are for small constants like lengths and scales, and a
/// spec-wide budget bounds what a spec can make us allocate.
pub const MAX_LITERAL_ELEMENTS: usize = 1 << 20;

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

/// Reads one stage mapping.
pub(crate) fn parse_stage(
    top: &Cx<'_>,
    node: &Node,
    literal_budget: &mut usize,
) -> Result<Stage, SpecError> {
    let scoped = match node.peek("name") {
        Some(name) => top.with(Scope::Stage(name.to_string())),
        None => top.clone(),
    };
    let m = scoped.map(node, "stage", "stage", STAGE_KEYS)?;
    let name_node = m.req(top, "name")?;
    let name = top.name(name_node, "name")?;
    if name.contains('.') {
        return Err(top.invalid(
            name_node,
            format!("stage name `{name}` must not contain `.` (it separates stage and output in `stage:` arguments)"),
        ));
    }
    let cx = top.with(Scope::Stage(name.clone()));
    let module_node = m.req(&cx, "module")?;
    let module = template_string(&cx, &name, module_node, "module")?;
    let mut locations = StageLocations {
        module: location(module_node),
        ..StageLocations::default()
    };
    let (function, slice) = match (m.opt("function"), m.opt("slice")) {
        (Some(f), None) => {
            locations.function = location(f);
            (template_string(&cx, &name, f, "function")?, None)
        }
        (None, Some(s)) => {
            let slice = parse_slice(&cx, &name, s, &mut locations)?;
            // Informational until `Spec::instantiate` renders it per case.
            let function = format!("{name}__{}", slice.function);
            (function, Some(slice))
        }
        (Some(_), Some(s)) => {
            return Err(cx.invalid(
                s,
                "a stage has exactly one of `function` (an entry function) or `slice` (a cut of a larger function), not both".into(),
            ))
        }
        (None, None) => {
            return Err(SpecErrorKind::MissingField {
                at: cx.at(node),
                scope: cx.scope.clone(),
                field: "function".into(),
                context: "stage (give `function`, or `slice` to cut a larger function)".into(),
            }
            .into())
        }
    };
    let mut args = Vec::new();
    if let Some(list) = m.opt("args") {
        for (i, arg_node) in cx.list(list, "args")?.iter().enumerate() {
            args.push(parse_arg(&cx, &name, i, arg_node, literal_budget)?);
            locations.args.push(location(arg_node));
        }
    }
    let bind = match m.opt("bind") {
        None => None,
        Some(b) => {
            if let Some(a) = m.opt("args") {
                return Err(cx.invalid(
                    a,
                    "a stage has `args` (in call order) or `bind` (by MLIR argument name), not both; explicit `bind` rules (`arg:`) override patterns".into(),
                ));
            }
            Some(crate::bind::parse_bind(&cx, &name, b, literal_budget)?)
        }
    };
    let outputs_node = m.req(&cx, "outputs")?;
    let output_nodes = cx.list(outputs_node, "outputs")?;
    if output_nodes.is_empty() {
        return Err(cx.invalid(
            outputs_node,
            "`outputs` is empty; a stage needs at least one output".into(),
        ));
    }
    if let Some(slice) = &slice {
        if output_nodes.len() != slice.to.len() {
            return Err(cx.invalid(
                outputs_node,
                format!(
                    "the stage lists {} outputs but its slice returns {} `to` points; outputs match `to` in order",
                    output_nodes.len(),
                    slice.to.len()
                ),
            ));
        }
        // A `bind:` slice stage's arguments are bound at run time (its `from` points by name).
        if m.opt("bind").is_none() && args.len() < slice.from.len() {
            let at = m.opt("args").unwrap_or(node);
            return Err(cx.invalid(
                at,
                format!(
                    "the stage has {} arguments but its slice starts from {} `from` points; the `from` points take the first arguments, then the function arguments the slice needs",
                    args.len(),
                    slice.from.len()
                ),
            ));
        }
    }
    let mut outputs: Vec<OutputSpec> = Vec::new();
    for out_node in output_nodes {
        // A `bind:` stage's argument count is known only at run time.
        let arg_count = if bind.is_some() {
            usize::MAX
        } else {
            args.len()
        };
        let out = parse_output(&cx, &name, arg_count, out_node)?;
        if outputs.iter().any(|o| o.name == out.name) {
            return Err(SpecErrorKind::DuplicateOutput {
                at: cx.at(out_node),
                stage: name,
                output: out.name,
            }
            .into());
        }
        outputs.push(out);
        locations.outputs.push(location(out_node));
    }
    Ok(Stage {
        name,
        module,
        function,
        slice,
        args,
        bind,
        outputs,
        location: location(node),
        locations,
    })
}

/// Reads `slice: {function, from, to}`, recording the points' positions.
fn parse_slice(
    cx: &Cx<'_>,
    stage: &str,
    node: &Node,
    locations: &mut StageLocations,
) -> Result<SliceSpec, SpecError> {
    let m = cx.map(node, "slice", "slice", SLICE_KEYS)?;
    let function_node = m.req(cx, "function")?;
    locations.function = location(function_node);
    let function = template_string(cx, stage, function_node, "slice function")?;
    let points = |key: &str, locs: &mut Vec<Location>| -> Result<Vec<String>, SpecError> {
        let mut out: Vec<String> = Vec::new();
        let Some(list) = m.opt(key) else {
            return Ok(out);
        };
        for item in cx.list(list, key)? {
            let point = template_string(cx, stage, item, key)?;
            if key == "from" && out.contains(&point) {
                return Err(cx.invalid(
                    item,
                    format!(
                        "slice `from` point `{point}` is listed twice (each takes one argument)"
                    ),
                ));
            }
            out.push(point);
            locs.push(location(item));
        }
        Ok(out)
    };
    let from = points("from", &mut locations.slice_from)?;
    let to_node = m.req(cx, "to")?;
    let to = points("to", &mut locations.slice_to)?;
    if to.is_empty() {
        return Err(cx.invalid(
            to_node,
            "slice `to` is empty; name the values the slice returns".into(),
        ));
    }
    Ok(SliceSpec { function, from, to })
}

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

fn parse_output(
    cx: &Cx<'_>,
    stage: &str,
    arg_count: usize,
    node: &Node,
) -> Result<OutputSpec, SpecError> {
    let scoped = match node.peek("name") {
        Some(name) => cx.with(Scope::Output {
            stage: stage.to_string(),
            output: name.to_string(),
        }),
        None => cx.clone(),
    };
    let m = scoped.map(node, "output", "output", OUTPUT_KEYS)?;
    let name = cx.name(m.req(cx, "name")?, "name")?;
    let cx = cx.with(Scope::Output {
        stage: stage.to_string(),
        output: name.clone(),
    });
    let oracle = template_string(&cx, stage, m.req(&cx, "oracle")?, "oracle")?;
    let truth = match m.opt("truth") {
        Some(t) => Some(template_string(&cx, stage, t, "truth")?),
        None => None,
    };
    let mask = match m.opt("mask") {
        Some(n) => Some(parse_mask(&cx, stage, &name, arg_count, n)?),
        None => None,
    };
    let tolerance = match m.opt("tolerance") {
        Some(t) => Some(tolerance(&cx, t, "tolerance")?),
        None => None,
    };
    let ulp_dtype = match m.opt("ulp_dtype") {
        Some(n) => {
            let d = dtype(&cx, n, "ulp_dtype")?;
            if !d.is_float() {
                return Err(cx.invalid(n, format!("`ulp_dtype` must be a float dtype, not {d}")));
            }
            Some(d)
        }
        None => None,
    };
    let flag = |key: &str| {
        m.opt(key)
            .map(|n| cx.bool(n, key))
            .transpose()
            .map(|b| b.unwrap_or(false))
    };
    Ok(OutputSpec {
        name,
        oracle,
        truth,
        mask,
        tolerance,
        ulp_dtype,
        equal_nan: flag("equal_nan")?,
        allow_empty: flag("allow_empty")?,
    })
}

fn parse_mask(
    cx: &Cx<'_>,
    stage: &str,
    output: &str,
    arg_count: usize,
    node: &Node,
) -> Result<MaskSpec, SpecError> {
    let m = cx.map(node, "mask", "mask", MASK_KEYS)?;
    let source = match (m.opt("oracle"), m.opt("arg")) {
        (Some(o), None) => MaskSource::Oracle(template_string(cx, stage, o, "mask oracle")?),
        (None, Some(a)) => {
            let index = cx.usize(a, "arg")?;
            if index >= arg_count {
                return Err(SpecErrorKind::MaskArgOutOfRange {
                    at: cx.at(a),
                    stage: stage.to_string(),
                    output: output.to_string(),
                    index,
                    count: arg_count,
                }
                .into());
            }
            MaskSource::Arg(index)
        }
        _ => {
            return Err(cx.invalid(
                node,
                "a mask needs exactly one of `oracle` (tensor name) or `arg` (argument index)"
                    .into(),
            ))
        }
    };
    let axes_node = m.req(cx, "axes")?;
    let mut axes = Vec::new();
    for a in cx.list(axes_node, "axes")? {
        let axis = cx.usize(a, "axes")?;
        if axes.contains(&axis) {
            return Err(SpecErrorKind::RepeatedMaskAxis {
                at: cx.at(a),
                stage: stage.to_string(),
                output: output.to_string(),
                axis,
            }
            .into());
        }
        axes.push(axis);
    }
    if axes.is_empty() {
        return Err(cx.invalid(
            axes_node,
            "mask `axes` is empty; list the output axes the mask covers".into(),
        ));
    }
    let padded = m
        .opt("padded")
        .map(|n| cx.bool(n, "padded"))
        .transpose()?
        .unwrap_or(true);
    let assert_zero = m
        .opt("assert_zero")
        .map(|n| cx.bool(n, "assert_zero"))
        .transpose()?
        .unwrap_or(false);
    Ok(MaskSpec {
        source,
        axes,
        padded,
        assert_zero,
    })
}
