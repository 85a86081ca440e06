//! Reading and validating the `fuzz:` section (model in `fuzz`).

use crate::arg_parse::{dtype, location, parse_arg};
use crate::error::{Scope, SpecError};
use crate::fuzz::{
    FuzzArg, FuzzOutput, FuzzShape, FuzzSpec, LengthsContract, MaskContract, MaskLayout,
    MelContract, Tolerance, ValidRegion, INVARIANTS,
};
use crate::model::{Arg, Spec};
use crate::reader::Cx;
use crate::tolerance::tolerance;
use crate::yaml::Node;
use parity_compare::Criterion;
use parity_tensor::DType;
use std::path::Path;

const FUZZ_KEYS: &[&str] = &[
    "module",
    "function",
    "shapes",
    "args",
    "mel",
    "mask",
    "lengths",
    "outputs",
    "tolerance",
    "cases",
    "seed",
    "regressions",
];
const SHAPE_KEYS: &[&str] = &["clips", "bucket"];
const MEL_KEYS: &[&str] = &["dtype", "features", "sources"];
const MASK_KEYS: &[&str] = &["dtype", "layout", "padded", "min_valid"];
const LENGTHS_KEYS: &[&str] = &["dtype"];
const OUTPUT_KEYS: &[&str] = &["name", "batched", "valid", "lengths_rule"];
const VALID_KEYS: &[&str] = &["lengths", "stride"];
const RULE_KEYS: &[&str] = &["ceil_div"];
/// Most cases one run may ask for (each runs the entry point several times).
pub const MAX_FUZZ_CASES: usize = 100_000;

/// Reads the `fuzz:` mapping; whole-spec checks are in [`validate`].
pub(crate) fn parse_fuzz(
    top: &Cx<'_>,
    node: &Node,
    base: &Path,
    literal_budget: &mut usize,
) -> Result<FuzzSpec, SpecError> {
    let cx = top.with(Scope::Fuzz);
    let m = cx.map(node, "fuzz", "fuzz", FUZZ_KEYS)?;
    let module = cx.name(m.req(&cx, "module")?, "module")?;
    let f = m.req(&cx, "function")?;
    let function = cx.name(f, "function")?;
    let shapes_node = m.req(&cx, "shapes")?;
    let mut shapes = Vec::new();
    for s in cx.list(shapes_node, "shapes")? {
        let sm = cx.map(s, "shapes", "fuzz.shapes", SHAPE_KEYS)?;
        let clips = positive(&cx, sm.req(&cx, "clips")?, "clips")?;
        let bucket = positive(&cx, sm.req(&cx, "bucket")?, "bucket")?;
        let shape = FuzzShape { clips, bucket };
        if shapes.contains(&shape) {
            return Err(cx.invalid(s, format!("shape c{clips} b{bucket} is listed twice")));
        }
        shapes.push(shape);
    }
    if shapes.is_empty() {
        return Err(cx.invalid(shapes_node, "`fuzz.shapes` is empty".into()));
    }
    if !function.contains("{bucket}") && shapes.len() > 1 {
        return Err(cx.invalid(
            f,
            "`function` must contain `{bucket}` (and `{clips}`) when several shapes are listed"
                .into(),
        ));
    }
    let args_node = m.req(&cx, "args")?;
    let mut args = Vec::new();
    for (i, a) in cx.list(args_node, "args")?.iter().enumerate() {
        args.push(parse_fuzz_arg(&cx, i, a, literal_budget)?);
    }
    let count = |k: &FuzzArg| args.iter().filter(|a| *a == k).count();
    for (k, name) in [(FuzzArg::Mel, "mel"), (FuzzArg::Mask, "mask")] {
        if count(&k) != 1 {
            return Err(cx.invalid(
                args_node,
                format!(
                    "`args` needs exactly one `{{input: {name}}}` (has {})",
                    count(&k)
                ),
            ));
        }
    }
    let mel = parse_mel(&cx, m.req(&cx, "mel")?)?;
    let mask = parse_mask(&cx, m.req(&cx, "mask")?)?;
    let lengths = match m.opt("lengths") {
        Some(n) => {
            let lm = cx.map(n, "lengths", "fuzz.lengths", LENGTHS_KEYS)?;
            let dt = dtype(&cx, lm.req(&cx, "dtype")?, "dtype")?;
            if !matches!(dt, DType::I32 | DType::I64) {
                return Err(cx.invalid(n, format!("`lengths.dtype` must be i32 or i64, not {dt}")));
            }
            Some(LengthsContract { dtype: dt })
        }
        None => None,
    };
    if (count(&FuzzArg::Lengths) == 1) != lengths.is_some() || count(&FuzzArg::Lengths) > 1 {
        return Err(cx.invalid(
            args_node,
            "an `{input: lengths}` argument and a `lengths:` contract go together (one of each, or neither)".into(),
        ));
    }
    let outputs = parse_outputs(&cx, m.req(&cx, "outputs")?)?;
    let tolerance = match m.opt("tolerance") {
        Some(t) => parse_tolerances(&cx, t)?,
        None => Vec::new(),
    };
    let cases = match m.opt("cases") {
        Some(n) => {
            let c = positive(&cx, n, "cases")?;
            if c > MAX_FUZZ_CASES {
                return Err(cx.invalid(n, format!("`cases` is at most {MAX_FUZZ_CASES}")));
            }
            c
        }
        None => 32,
    };
    let seed = match m.opt("seed") {
        Some(n) => cx.usize(n, "seed")? as u64,
        None => 0,
    };
    let regressions = match m.opt("regressions") {
        Some(n) => Some(base.join(cx.name(n, "regressions")?)),
        None => None,
    };
    Ok(FuzzSpec {
        module,
        function,
        shapes,
        args,
        mel,
        mask,
        lengths,
        outputs,
        tolerance,
        cases,
        seed,
        regressions,
        location: location(node),
    })
}

fn positive(cx: &Cx<'_>, node: &Node, field: &str) -> Result<usize, SpecError> {
    let v = cx.usize(node, field)?;
    if v == 0 {
        return Err(cx.invalid(node, format!("`{field}` must be at least 1")));
    }
    Ok(v)
}

fn parse_fuzz_arg(
    cx: &Cx<'_>,
    index: usize,
    node: &Node,
    literal_budget: &mut usize,
) -> Result<FuzzArg, SpecError> {
    let is_input = matches!(&node.value, crate::yaml::Value::Map(pairs)
        if pairs.iter().any(|(k, _)| k.scalar() == Some("input")));
    if !is_input {
        return match parse_arg(cx, "fuzz", index, node, literal_budget)? {
            Arg::Stage { .. } => Err(cx.invalid(
                node,
                format!("argument {index}: a fuzz entry point takes `input`, `weight`, `oracle` or `literal` arguments, not `stage`"),
            )),
            arg => Ok(FuzzArg::Fixed(arg)),
        };
    }
    let m = cx.map(node, "argument", "fuzz argument", &["input"])?;
    let v = m.req(cx, "input")?;
    match cx.name(v, "input")?.as_str() {
        "mel" => Ok(FuzzArg::Mel),
        "mask" => Ok(FuzzArg::Mask),
        "lengths" => Ok(FuzzArg::Lengths),
        other => Err(cx.invalid(
            v,
            format!("argument {index}: unknown input `{other}` (known: mel, mask, lengths)"),
        )),
    }
}

fn parse_mel(cx: &Cx<'_>, node: &Node) -> Result<MelContract, SpecError> {
    let m = cx.map(node, "mel", "fuzz.mel", MEL_KEYS)?;
    let dt = match m.opt("dtype") {
        Some(d) => dtype(cx, d, "dtype")?,
        None => DType::F32,
    };
    if !matches!(dt, DType::F32 | DType::F64) {
        return Err(cx.invalid(node, format!("`mel.dtype` must be f32 or f64, not {dt}")));
    }
    let features = positive(cx, m.req(cx, "features")?, "features")?;
    let sources_node = m.req(cx, "sources")?;
    let sources = cx.strings(sources_node, "sources")?;
    if sources.is_empty() {
        return Err(cx.invalid(
            sources_node,
            "`mel.sources` must name at least one oracle tensor".into(),
        ));
    }
    Ok(MelContract {
        dtype: dt,
        features,
        sources,
    })
}

fn parse_mask(cx: &Cx<'_>, node: &Node) -> Result<MaskContract, SpecError> {
    let m = cx.map(node, "mask", "fuzz.mask", MASK_KEYS)?;
    let dt = match m.opt("dtype") {
        Some(d) => dtype(cx, d, "dtype")?,
        None => DType::Bool,
    };
    if dt.is_float() {
        return Err(cx.invalid(
            node,
            format!("`mask.dtype` must be bool or an integer dtype, not {dt}"),
        ));
    }
    let layout_node = m.req(cx, "layout")?;
    let layout = match cx.name(layout_node, "layout")?.as_str() {
        "prefix" => MaskLayout::Prefix,
        "arbitrary" => MaskLayout::Arbitrary,
        other => {
            return Err(cx.invalid(
                layout_node,
                format!("unknown mask layout `{other}` (known: prefix, arbitrary)"),
            ))
        }
    };
    let padded = cx.bool(m.req(cx, "padded")?, "padded")?;
    let min_valid = match m.opt("min_valid") {
        Some(n) => positive(cx, n, "min_valid")?,
        None => 1,
    };
    Ok(MaskContract {
        dtype: dt,
        layout,
        padded,
        min_valid,
    })
}

fn parse_outputs(cx: &Cx<'_>, node: &Node) -> Result<Vec<FuzzOutput>, SpecError> {
    let mut outputs: Vec<FuzzOutput> = Vec::new();
    for o in cx.list(node, "outputs")? {
        let om = cx.map(o, "outputs", "fuzz output", OUTPUT_KEYS)?;
        let name = cx.name(om.req(cx, "name")?, "name")?;
        if outputs.iter().any(|p| p.name == name) {
            return Err(cx.invalid(o, format!("output `{name}` is listed twice")));
        }
        let batched = match om.opt("batched") {
            Some(b) => cx.bool(b, "batched")?,
            None => true,
        };
        let valid = match om.opt("valid") {
            None => ValidRegion::All,
            Some(v) if v.scalar() == Some("all") => ValidRegion::All,
            Some(v) => {
                let vm = cx.map(v, "valid", "fuzz output `valid`", VALID_KEYS)?;
                match (vm.opt("lengths"), vm.opt("stride")) {
                    (Some(l), None) => ValidRegion::Lengths(cx.name(l, "lengths")?),
                    (None, Some(s)) => ValidRegion::Stride(positive(cx, s, "stride")?),
                    _ => {
                        return Err(cx.invalid(
                            v,
                            "`valid` is `all`, `{lengths: OUTPUT}` or `{stride: N}`".into(),
                        ))
                    }
                }
            }
        };
        if !batched && valid != ValidRegion::All {
            return Err(cx.invalid(
                o,
                format!("output `{name}`: an unbatched output is compared whole (`valid: all`)"),
            ));
        }
        let lengths_rule = match om.opt("lengths_rule") {
            Some(r) => {
                let rm = cx.map(r, "lengths_rule", "fuzz output `lengths_rule`", RULE_KEYS)?;
                Some(positive(cx, rm.req(cx, "ceil_div")?, "ceil_div")?)
            }
            None => None,
        };
        outputs.push(FuzzOutput {
            name,
            batched,
            valid,
            lengths_rule,
        });
    }
    if outputs.is_empty() {
        return Err(cx.invalid(node, "`fuzz.outputs` is empty".into()));
    }
    for o in &outputs {
        if let ValidRegion::Lengths(l) = &o.valid {
            if !outputs.iter().any(|p| &p.name == l && p.batched) {
                return Err(cx.invalid(
                    node,
                    format!(
                        "output `{}`: `valid.lengths` names `{l}`, which is not a batched output",
                        o.name
                    ),
                ));
            }
        }
    }
    Ok(outputs)
}

fn parse_tolerances(cx: &Cx<'_>, node: &Node) -> Result<Vec<(String, Tolerance)>, SpecError> {
    let m = cx.map(node, "tolerance", "fuzz.tolerance", &INVARIANTS)?;
    let mut out = Vec::new();
    for (k, v) in m.entries() {
        let key = k.scalar().unwrap_or_default().to_string();
        let criteria = tolerance(cx, v, &key)?;
        let t = match criteria.as_slice() {
            [Criterion::Exact] => Tolerance::Exact,
            [Criterion::MaxAbs(x)] if x.is_finite() && *x >= 0.0 => Tolerance::MaxAbs(*x),
            _ => {
                return Err(cx.invalid(
                    v,
                    format!("`tolerance.{key}`: a fuzz invariant takes `[exact]` or `[{{max_abs: X}}]` (X finite, >= 0)"),
                ))
            }
        };
        out.push((key, t));
    }
    Ok(out)
}

/// Whole-spec checks: the module is declared.
pub(crate) fn validate(spec: &Spec) -> Result<(), SpecError> {
    let Some(f) = &spec.fuzz else {
        return Ok(());
    };
    if !spec.subject.modules.contains_key(&f.module) {
        let declared: Vec<&str> = spec.subject.modules.keys().map(String::as_str).collect();
        return Err(crate::error::SpecErrorKind::Invalid {
            at: crate::Position {
                file: spec.path.clone(),
                line: f.location.line,
                col: f.location.col,
                alias: None,
            },
            scope: Scope::Fuzz,
            message: format!(
                "module `{}` is not declared in `subject.modules` (declared: {})",
                f.module,
                declared.join(", ")
            ),
        }
        .into());
    }
    Ok(())
}
