//! Reading one `stages:` entry: name, module, function, arguments and outputs.
//! Checks that need only this stage happen here; cross-stage checks are in `graph`.

use crate::arg_parse::{dtype, location, parse_arg, template_string};
use crate::error::{Scope, SpecError, SpecErrorKind};
use crate::model::{Location, MaskSource, MaskSpec, OutputSpec, SliceSpec, Stage, StageLocations};
use crate::reader::Cx;
use crate::tolerance::tolerance;
use crate::yaml::Node;

const STAGE_KEYS: &[&str] = &[
    "name", "module", "function", "slice", "args", "bind", "outputs",
];
const SLICE_KEYS: &[&str] = &["function", "from", "to"];
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
            Some(crate::bind_parse::parse_bind(
                &cx,
                &name,
                b,
                literal_budget,
            )?)
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
