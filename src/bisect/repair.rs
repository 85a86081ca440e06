//! Repair evidence: inside a region that neither the oracle nor the f64
//! shadow narrows (a semantic fault: the shadow replays the same wrong
//! program), edit the region one operation at a time with the mistakes ports
//! make, run every edited region on the oracle's inputs, and keep the edits
//! that make the region's end match the oracle. All candidates are functions
//! of one module: one compile, one load, one call each. Scalar constants are
//! fitted rather than enumerated: a variant takes a scale argument, searched
//! on a log grid and refined.

use super::error::BisectError;
use super::measure::{value_metrics, CHECKPOINT_ULP_BUDGET};
use super::probe::Prober;
use super::Program;
use parity_mlir::{emit_slices, SliceArg, SliceRequest, ValueId};
use parity_tensor::{DType, Tensor};
use std::fmt::Write as _;

/// Regions larger than this are not searched (the module would be too big).
pub const MAX_REGION_OPS: usize = 120;

/// Enumerated candidates at most (constants fitted besides).
const MAX_CANDIDATES: usize = 400;

/// One surviving edit.
pub struct Repair {
    /// The edited operation (index into the function's ops).
    pub op: usize,
    /// What the edit is, for people.
    pub edit: String,
    /// The region's end against the oracle after the edit, in ULPs at max.
    pub ulps: f64,
}

/// What the search found.
pub struct RepairOutcome {
    /// Edits that make the region match, best first.
    pub repairs: Vec<Repair>,
    /// Candidates tried (enumerated edits plus fitted constants).
    pub tried: usize,
}

/// A candidate: which op, what it does, and the edited function body.
struct Candidate {
    op: usize,
    edit: String,
    body: String,
    /// A fitted constant: its value, when the function takes a scale argument.
    fit: Option<f64>,
}

/// Searches repairs of `region` whose end `target` should equal `expected`.
pub fn search(
    program: &Program,
    prober: &mut Prober,
    region: &[usize],
    feed: &[(ValueId, Tensor)],
    target: ValueId,
    expected: &Tensor,
) -> Result<RepairOutcome, BisectError> {
    let func = program.func;
    let req = SliceRequest {
        name: "repair".into(),
        from: feed.iter().map(|(v, _)| *v).collect(),
        to: vec![target],
    };
    let (text, infos) =
        emit_slices(prober.module, func, "parity_repair", &[req]).map_err(|source| {
            BisectError::Slice {
                function: func.name.clone(),
                source,
            }
        })?;
    let info = &infos[0];
    let (head, body, tail) = split_function(&text).ok_or_else(|| BisectError::EmittedText {
        what: "the repair search's slice",
        problem: "no `@repair` function".into(),
    })?;
    let mut cands = Vec::new();
    for &o in region {
        cands.extend(edits_of(program, o, body));
    }
    cands.truncate(MAX_CANDIDATES);
    for (o, value, line) in scalar_constants(program, body) {
        let Some(consumer) = consumer_of(program, region, o) else {
            continue;
        };
        let fitted = body.replace(
            &line,
            &scaled_constant(&line, &func.values[func.ops[o].results[0]].name),
        );
        cands.push(Candidate {
            op: consumer,
            edit: func.values[func.ops[o].results[0]].name.clone(),
            body: fitted,
            fit: Some(value),
        });
    }
    if cands.is_empty() {
        return Ok(RepairOutcome {
            repairs: Vec::new(),
            tried: 0,
        });
    }
    // One module: every candidate as its own public function.
    let mut module = String::from(head);
    for (k, c) in cands.iter().enumerate() {
        let sig = if c.fit.is_some() {
            head_signature(tail, k, true)
        } else {
            head_signature(tail, k, false)
        };
        let _ = write!(module, "{sig}{}", c.body);
        module.push_str("  }\n");
    }
    module.push_str("}\n");
    let label = format!("{}[repair search]", prober.source_name);
    let vmfb = prober
        .cache
        .get_or_compile(prober.compiler, &label, module.as_bytes(), &prober.options)
        .map_err(|source| BisectError::Compile {
            label: label.clone(),
            source,
        })?
        .vmfb;
    prober.probes += 1;
    prober.log.push(format!(
        "probe {}: repair search ({} candidate functions in one module)",
        prober.probes,
        cands.len()
    ));
    let loaded = prober
        .runtime
        .load(&vmfb, &label)
        .map_err(|source| BisectError::Load {
            label: label.clone(),
            source,
        })?;
    let mut args = Vec::new();
    for (arg, _) in &info.args {
        match arg {
            SliceArg::From(i) => args.push(feed[*i].1.clone()),
            SliceArg::FuncArg(j) => {
                return Err(BisectError::MissingArgument {
                    slice: "repair".into(),
                    function: func.name.clone(),
                    index: *j,
                })
            }
        }
    }
    let score = |name: &str, args: &[Tensor]| -> Result<f64, BisectError> {
        let out = loaded
            .invoke(name, args)
            .map_err(|source| BisectError::Invoke {
                slice: name.to_string(),
                source,
            })?;
        let m = value_metrics(func, target, &out[0], expected, "oracle", program.budget)?;
        Ok(if m.ulps_at_max.is_nan() {
            f64::INFINITY
        } else {
            m.ulps_at_max
        })
    };
    let mut repairs = Vec::new();
    for (k, c) in cands.iter().enumerate() {
        let name = format!("repair_{k}");
        match c.fit {
            None => {
                let u = score(&name, &args)?;
                if u <= CHECKPOINT_ULP_BUDGET {
                    repairs.push(Repair {
                        op: c.op,
                        edit: c.edit.clone(),
                        ulps: u,
                    });
                }
            }
            Some(value) => {
                let dtype = DType::F32;
                let (s, u) = fit_scale(|s| {
                    let scale = Tensor::from_f64_as(dtype, vec![], &[s]).map_err(|source| {
                        BisectError::Tensor {
                            what: "the scale argument",
                            source,
                        }
                    })?;
                    let mut a = vec![scale];
                    a.extend(args.iter().cloned());
                    score(&name, &a)
                })?;
                if u <= CHECKPOINT_ULP_BUDGET && (s - 1.0).abs() > 1e-6 {
                    repairs.push(Repair {
                        op: c.op,
                        edit: format!(
                            "constant {} = {value:e} (used here) should be about {:.4e} (x{s:.4})",
                            c.edit,
                            value * s
                        ),
                        ulps: u,
                    });
                }
            }
        }
    }
    repairs.sort_by(|a, b| a.ulps.total_cmp(&b.ulps));
    Ok(RepairOutcome {
        repairs,
        tried: cands.len(),
    })
}

/// The first region op using constant op `o`'s value, directly or through
/// constant-only ops (a `broadcast_in_dim` of it): where the constant acts.
fn consumer_of(program: &Program, region: &[usize], o: usize) -> Option<usize> {
    let func = program.func;
    let mut derived: std::collections::HashSet<ValueId> =
        func.ops[o].results.iter().copied().collect();
    for (k, op) in func.ops.iter().enumerate().skip(o + 1) {
        if !op.operands.iter().any(|v| derived.contains(v)) {
            continue;
        }
        if region.contains(&k) {
            return Some(k);
        }
        if op.results.iter().all(|&r| func.is_constant(r)) {
            derived.extend(op.results.iter().copied());
        }
    }
    None
}

/// Minimises `f` over scales: a signed log grid (1e-4 .. 1e4), then a
/// golden-section refinement in log space around the best grid point.
fn fit_scale(
    mut f: impl FnMut(f64) -> Result<f64, BisectError>,
) -> Result<(f64, f64), BisectError> {
    let mut best = (1.0, f64::INFINITY);
    for sign in [1.0, -1.0] {
        for i in 0..=32 {
            let s = sign * 10f64.powf(-4.0 + 0.25 * i as f64);
            let u = f(s)?;
            if u < best.1 {
                best = (s, u);
            }
        }
    }
    let sign = best.0.signum();
    let (mut lo, mut hi) = (best.0.abs().log10() - 0.25, best.0.abs().log10() + 0.25);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..24 {
        let a = hi - g * (hi - lo);
        let b = lo + g * (hi - lo);
        let (ua, ub) = (f(sign * 10f64.powf(a))?, f(sign * 10f64.powf(b))?);
        for (x, u) in [(a, ua), (b, ub)] {
            if u < best.1 {
                best = (sign * 10f64.powf(x), u);
            }
        }
        if ua < ub {
            hi = b;
        } else {
            lo = a;
        }
    }
    Ok(best)
}

/// Splits the emitted module into (text before the function, its body lines,
/// the function's signature line).
fn split_function(text: &str) -> Option<(&str, &str, &str)> {
    let sig_start = text.find("  func.func public @repair(")?;
    let sig_end = sig_start + text[sig_start..].find('\n')? + 1;
    let body_end = sig_end + text[sig_end..].rfind("\n  }\n")? + 1;
    Some((
        &text[..sig_start],
        &text[sig_end..body_end],
        &text[sig_start..sig_end],
    ))
}

/// The signature line for candidate `k` (with a leading scale argument for fits).
fn head_signature(sig: &str, k: usize, scale: bool) -> String {
    let renamed = sig.replacen("@repair(", &format!("@repair_{k}("), 1);
    if !scale {
        return renamed;
    }
    let ty = "tensor<f32>";
    renamed.replacen(
        &format!("@repair_{k}("),
        &format!("@repair_{k}(%parity_scale: {ty}, "),
        1,
    )
}

/// `%c = "stablehlo.constant"() ... : () -> tensor<...xf32> loc(..)` (a
/// splat) becomes the constant (renamed) times the scale argument
/// (broadcast to the constant's shape).
fn scaled_constant(line: &str, name: &str) -> String {
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let plain = name.trim_start_matches('%');
    let ty = constant_type(line).unwrap_or("tensor<f32>");
    let renamed = line.replacen(&format!("{name} = "), &format!("%parity_c{plain} = "), 1);
    let (scale, broadcast) = if ty == "tensor<f32>" {
        ("%parity_scale".to_string(), String::new())
    } else {
        (
            format!("%parity_b{plain}"),
            format!(
                "{indent}%parity_b{plain} = \"stablehlo.broadcast_in_dim\"(%parity_scale) <{{broadcast_dimensions = array<i64>}}> : (tensor<f32>) -> {ty}\n"
            ),
        )
    };
    format!(
        "{renamed}\n{broadcast}{indent}{name} = \"stablehlo.multiply\"(%parity_c{plain}, {scale}) : ({ty}, {ty}) -> {ty}"
    )
}

/// The result type of a constant line (`... : () -> tensor<64xf32> loc(..)`).
fn constant_type(line: &str) -> Option<&str> {
    let rest = &line[line.find(": () -> ")? + 8..];
    Some(rest.split(" loc(").next()?.trim())
}

/// Splat f32 constants of the region's slice (a scalar, or one value
/// repeated): (op, value, its line).
fn scalar_constants(program: &Program, body: &str) -> Vec<(usize, f64, String)> {
    let func = program.func;
    let mut out = Vec::new();
    for line in body.lines() {
        let splat_f32 = constant_type(line)
            .is_some_and(|t| t.ends_with("f32>") && parity_mlir::Type::new(t).shape().is_some());
        if !line.contains("\"stablehlo.constant\"") || !splat_f32 || line.contains("dense<[") {
            continue;
        }
        let Some(name) = line.trim_start().split(" = ").next() else {
            continue;
        };
        let Some(v) = func.value_by_name(name) else {
            continue;
        };
        let Some(o) = func.op_of(v) else { continue };
        let value = line
            .split("dense<")
            .nth(1)
            .and_then(|r| r.split('>').next())
            .and_then(|x| x.parse::<f64>().ok());
        if let Some(value) = value.filter(|x| *x != 0.0) {
            out.push((o, value, line.to_string()));
        }
    }
    out
}

/// The line of op `o` in `body`, found by its first result's name.
fn line_of<'b>(program: &Program, o: usize, body: &'b str) -> Option<&'b str> {
    let op = &program.func.ops[o];
    let name = &program.func.values[*op.results.first()?].name;
    let prefix = format!("{name} = \"");
    body.lines().find(|l| l.trim_start().starts_with(&prefix))
}

/// The enumerated edits of op `o`.
fn edits_of(program: &Program, o: usize, body: &str) -> Vec<Candidate> {
    let func = program.func;
    let op = &func.ops[o];
    let Some(line) = line_of(program, o, body) else {
        return Vec::new();
    };
    let short = op.name.trim_start_matches("stablehlo.");
    let mut out = Vec::new();
    let mut push = |edit: String, new_line: String| {
        if new_line != line {
            out.push(Candidate {
                op: o,
                edit,
                body: body.replacen(line, &new_line, 1),
                fit: None,
            });
        }
    };
    let ty = |i: usize| op.operands.get(i).map(|&v| func.values[v].ty.text.clone());
    // Swapped operands.
    let swap = match short {
        "subtract" | "divide" | "power" | "remainder" | "atan2" | "compare" => Some((0, 1)),
        "select" => Some((1, 2)),
        _ => None,
    };
    if let Some((i, j)) = swap.filter(|(i, j)| ty(*i).is_some() && ty(*i) == ty(*j)) {
        let (a, b) = (
            &func.values[op.operands[i]].name,
            &func.values[op.operands[j]].name,
        );
        if let Some(l) = swap_operands(line, i, j, a, b) {
            push(format!("swap operands {i} and {j} ({a}, {b})"), l);
        }
    }
    // Comparison direction.
    if short == "compare" {
        for d in ["EQ", "NE", "LT", "LE", "GT", "GE"] {
            for cur in ["EQ", "NE", "LT", "LE", "GT", "GE"] {
                let from = format!("comparison_direction {cur}>");
                if cur != d && line.contains(&from) {
                    push(
                        format!("comparison {cur} -> {d}"),
                        line.replacen(&from, &format!("comparison_direction {d}>"), 1),
                    );
                }
            }
        }
    }
    // Off-by-one slices (window kept) and pads (total kept).
    if short == "slice" {
        if let Some(shape) = op.operands.first().and_then(|&v| func.values[v].ty.shape()) {
            if let (Some(start), Some(limit)) = (
                ints(line, "start_indices = array<i64: "),
                ints(line, "limit_indices = array<i64: "),
            ) {
                for d in 0..start.len().min(shape.len()) {
                    for delta in [-1i64, 1] {
                        let (s, l) = (start[d] + delta, limit[d] + delta);
                        if s >= 0 && l <= shape[d] as i64 {
                            let mut s2 = start.clone();
                            let mut l2 = limit.clone();
                            s2[d] = s;
                            l2[d] = l;
                            let new = set_ints(
                                &set_ints(line, "start_indices = array<i64: ", &s2),
                                "limit_indices = array<i64: ",
                                &l2,
                            );
                            push(format!("slice dim {d} shifted by {delta:+}"), new);
                        }
                    }
                }
            }
        }
    }
    if short == "pad" {
        if let (Some(low), Some(high)) = (
            ints(line, "edge_padding_low = array<i64: "),
            ints(line, "edge_padding_high = array<i64: "),
        ) {
            for d in 0..low.len().min(high.len()) {
                // Padding moved between the two ends (a causal pad written
                // symmetric, an off-by-one): the output shape is kept.
                let total = (low[d] + high[d]).clamp(0, 8);
                let deltas = (1..=total).flat_map(|k| [-k, k]);
                for delta in deltas {
                    if low[d] + delta < 0 || high[d] - delta < 0 {
                        continue;
                    }
                    let mut l2 = low.clone();
                    let mut h2 = high.clone();
                    l2[d] += delta;
                    h2[d] -= delta;
                    let new = set_ints(
                        &set_ints(line, "edge_padding_low = array<i64: ", &l2),
                        "edge_padding_high = array<i64: ",
                        &h2,
                    );
                    push(
                        format!("pad dim {d}: low {delta:+}, high {:+}", -delta),
                        new,
                    );
                }
            }
        }
    }
    // Off-by-k integers becoming floats (a position or an index read at the
    // wrong offset, e.g. a rope position taken after a cache advanced it):
    // `convert(x + k)` for small k.
    if short == "convert" {
        if let (Some(&x), Some(&r)) = (op.operands.first(), op.results.first()) {
            let (xt, rt) = (&func.values[x].ty.text, &func.values[r].ty.text);
            if integer_element(xt) && !integer_element(rt) && !rt.ends_with("i1>") {
                let xn = &func.values[x].name;
                for k in [-4i64, -3, -2, -1, 1, 2, 3, 4] {
                    if let Some(l) = offset_operand(line, xn, xt, k) {
                        push(format!("its integer operand {xn} offset by {k:+}"), l);
                    }
                }
            }
        }
    }
    out
}

/// Whether a tensor type's elements are integers wider than i1
/// (`tensor<i32>`, `tensor<1x4xsi64>`, `tensor<ui8>`).
fn integer_element(ty: &str) -> bool {
    let inner = ty
        .trim()
        .trim_start_matches("tensor<")
        .trim_end_matches('>');
    let elem = inner.rsplit('x').next().unwrap_or(inner);
    let digits = elem.trim_start_matches(['s', 'u']).strip_prefix('i');
    digits.is_some_and(|d| !d.is_empty() && d != "1" && d.bytes().all(|b| b.is_ascii_digit()))
}

/// A generic `convert` line `%r = "stablehlo.convert"(%x) : (T) -> U ...`
/// rewritten to convert `%x + k` instead (two lines added before it).
fn offset_operand(line: &str, x: &str, ty: &str, k: i64) -> Option<String> {
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let result = line.trim_start().split(" = ").next()?;
    let plain: String = result
        .trim_start_matches('%')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let operand = format!("\"stablehlo.convert\"({x})");
    if !line.contains(&operand) {
        return None;
    }
    let (kc, sum) = (format!("%parity_k{plain}"), format!("%parity_o{plain}"));
    Some(format!(
        "{indent}{kc} = \"stablehlo.constant\"() <{{value = dense<{k}> : {ty}}}> : () -> {ty}\n\
         {indent}{sum} = \"stablehlo.add\"({x}, {kc}) : ({ty}, {ty}) -> {ty}\n\
         {}",
        line.replacen(&operand, &format!("\"stablehlo.convert\"({sum})"), 1)
    ))
}

/// Swaps operands `i` and `j` in a generic op line `"op"(%a, %b, ...)`.
fn swap_operands(line: &str, i: usize, j: usize, a: &str, b: &str) -> Option<String> {
    let open = line.find("\"(")? + 2;
    let close = open + line[open..].find(')')?;
    let mut ops: Vec<&str> = line[open..close].split(", ").collect();
    if ops.get(i) != Some(&a) || ops.get(j) != Some(&b) {
        return None;
    }
    ops.swap(i, j);
    Some(format!(
        "{}{}{}",
        &line[..open],
        ops.join(", "),
        &line[close..]
    ))
}

/// The integers after `key` up to `>`.
fn ints(line: &str, key: &str) -> Option<Vec<i64>> {
    let rest = &line[line.find(key)? + key.len()..];
    rest[..rest.find('>')?]
        .split(", ")
        .map(|x| x.trim().parse().ok())
        .collect()
}

/// `line` with the integers after `key` replaced.
fn set_ints(line: &str, key: &str, values: &[i64]) -> String {
    let Some(at) = line.find(key) else {
        return line.to_string();
    };
    let start = at + key.len();
    let Some(end) = line[start..].find('>').map(|e| start + e) else {
        return line.to_string();
    };
    let joined = values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!("{}{joined}{}", &line[..start], &line[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integer_convert_operand_is_offset() {
        assert!(integer_element("tensor<i32>"));
        assert!(integer_element("tensor<1x4xsi64>"));
        assert!(!integer_element("tensor<4xi1>"));
        assert!(!integer_element("tensor<4xf32>"));
        let line =
            "    %7 = \"stablehlo.convert\"(%arg2) : (tensor<i32>) -> tensor<f32> loc(\"q_rope\")";
        let out = offset_operand(line, "%arg2", "tensor<i32>", 1).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "    %parity_k7 = \"stablehlo.constant\"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>",
                "    %parity_o7 = \"stablehlo.add\"(%arg2, %parity_k7) : (tensor<i32>, tensor<i32>) -> tensor<i32>",
                "    %7 = \"stablehlo.convert\"(%parity_o7) : (tensor<i32>) -> tensor<f32> loc(\"q_rope\")",
            ]
        );
        assert!(offset_operand(line, "%arg3", "tensor<i32>", 1).is_none());
    }

    #[test]
    fn integer_attributes_are_read_and_rewritten() {
        let l = "%3 = \"stablehlo.slice\"(%2) <{limit_indices = array<i64: 1, 33>, start_indices = array<i64: 0, 1>}>";
        assert_eq!(ints(l, "start_indices = array<i64: "), Some(vec![0, 1]));
        let m = set_ints(l, "start_indices = array<i64: ", &[0, 0]);
        assert!(m.contains("start_indices = array<i64: 0, 0>"), "{m}");
        assert!(m.contains("limit_indices = array<i64: 1, 33>"), "{m}");
    }

    #[test]
    fn operands_swap_only_where_named() {
        let l = "%5 = \"stablehlo.subtract\"(%3, %4) : (tensor<f32>, tensor<f32>) -> tensor<f32>";
        let s = swap_operands(l, 0, 1, "%3", "%4").unwrap();
        assert!(s.contains("(%4, %3) : (tensor<f32>"), "{s}");
        assert!(swap_operands(l, 0, 1, "%9", "%4").is_none());
    }

    #[test]
    fn a_scale_fit_finds_a_factor_of_a_thousand() {
        let (s, u) = fit_scale(|s| Ok((s.log10() - 3.0).abs())).unwrap();
        assert!((s / 1000.0 - 1.0).abs() < 1e-3, "{s}");
        assert!(u < 1e-3);
    }

    #[test]
    fn constants_become_constant_times_scale() {
        let l = "    %1017 = \"stablehlo.constant\"() <{value = dense<9.99999997E-7> : tensor<f32>}> : () -> tensor<f32> loc(\"x\")";
        let s = scaled_constant(l, "%1017");
        assert!(s.contains("%parity_c1017 = \"stablehlo.constant\""), "{s}");
        assert!(
            s.contains("    %1017 = \"stablehlo.multiply\"(%parity_c1017, %parity_scale)"),
            "{s}"
        );
    }
}
