//! An activation written as another: SiLU ported as ReLU, GELU as SiLU, a
//! sigmoid gate as tanh. An activation the port wrote as two ops (SiLU is
//! `x * logistic(x)`, ReLU `max(x, 0)`) is not one unary op, so the
//! unary-op swaps cannot reach it; this edit recognises the activation an
//! op computes of one value `x` and rewrites the op as each other
//! activation of the same `x`. Part of the wide catalogue.

use super::text;
use super::{AfterOp, Change, Edit, EditKind, STEM};
use parity_mlir::{Function, ValueId};

/// The activations an op is recognised as and rewritten to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `max(x, 0)`.
    Relu,
    /// `x * logistic(x)` (swish).
    Silu,
    /// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (written, never
    /// recognised: its five ops are not one op to rewrite).
    GeluTanh,
    /// `logistic(x)`.
    Sigmoid,
    /// `tanh(x)`.
    Tanh,
}

/// Every activation, in the order the edits are tried.
const ALL: [Activation; 5] = [
    Activation::Relu,
    Activation::Silu,
    Activation::GeluTanh,
    Activation::Sigmoid,
    Activation::Tanh,
];

impl Activation {
    /// Its name, for reports.
    pub fn name(self) -> &'static str {
        match self {
            Activation::Relu => "relu",
            Activation::Silu => "silu",
            Activation::GeluTanh => "gelu (tanh)",
            Activation::Sigmoid => "sigmoid",
            Activation::Tanh => "tanh",
        }
    }

    /// Helper lines and the op's text computing the activation of `x`
    /// into `result`, all of type `ty`, at location `loc`.
    fn render(self, result: &str, x: &str, ty: &str, loc: &str) -> (Vec<String>, String) {
        let cst = |name: &str, v: &str| {
            format!(
                "{STEM}_{name} = \"stablehlo.constant\"() <{{value = dense<{v}> : {ty}}}> : () -> {ty}"
            )
        };
        let un = |name: &str, op: &str, a: &str| {
            format!("{name} = \"stablehlo.{op}\"({a}) : ({ty}) -> {ty}")
        };
        let bin = |name: &str, op: &str, a: &str, b: &str| {
            format!("{name} = \"stablehlo.{op}\"({a}, {b}) : ({ty}, {ty}) -> {ty}")
        };
        let s = |n: &str| format!("{STEM}_{n}");
        match self {
            Activation::Relu => (
                vec![cst("z", "0.000000e+00")],
                format!("{} {loc}", bin(result, "maximum", x, &s("z"))),
            ),
            Activation::Silu => (
                vec![un(&s("l"), "logistic", x)],
                format!("{} {loc}", bin(result, "multiply", x, &s("l"))),
            ),
            Activation::Sigmoid => (Vec::new(), format!("{} {loc}", un(result, "logistic", x))),
            Activation::Tanh => (Vec::new(), format!("{} {loc}", un(result, "tanh", x))),
            Activation::GeluTanh => (
                vec![
                    cst("k", "4.471500e-02"),
                    cst("c", "0.797884583"),
                    cst("h", "5.000000e-01"),
                    cst("one", "1.000000e+00"),
                    bin(&s("x2"), "multiply", x, x),
                    bin(&s("x3"), "multiply", &s("x2"), x),
                    bin(&s("kx3"), "multiply", &s("k"), &s("x3")),
                    bin(&s("in"), "add", x, &s("kx3")),
                    bin(&s("cin"), "multiply", &s("c"), &s("in")),
                    un(&s("t"), "tanh", &s("cin")),
                    bin(&s("t1"), "add", &s("one"), &s("t")),
                    bin(&s("hx"), "multiply", &s("h"), x),
                ],
                format!("{} {loc}", bin(result, "multiply", &s("hx"), &s("t1"))),
            ),
        }
    }
}

/// Whether value `v` is a constant zero: a splat `0` constant, or a
/// broadcast / reshape / convert of one.
fn is_zero(func: &Function, v: ValueId) -> bool {
    let mut v = v;
    for _ in 0..4 {
        let Some(p) = func.op_of(v) else { return false };
        let op = &func.ops[p];
        let line = text::first_line(&op.text);
        match op.name.as_str() {
            "stablehlo.constant" => {
                if line.contains("dense<[") {
                    return false;
                }
                return line
                    .split("dense<")
                    .nth(1)
                    .and_then(|r| r.split('>').next())
                    .and_then(|x| x.trim().parse::<f64>().ok())
                    == Some(0.0);
            }
            "stablehlo.broadcast_in_dim" | "stablehlo.reshape" | "stablehlo.convert" => {
                let Some(&u) = op.operands.first() else {
                    return false;
                };
                v = u;
            }
            _ => return false,
        }
    }
    false
}

/// The activation op `o` computes and the operand index of its `x`.
pub fn recognise(func: &Function, o: usize) -> Option<(Activation, usize)> {
    let op = &func.ops[o];
    let (&r, 1) = (op.results.first()?, op.results.len()) else {
        return None;
    };
    let ty = &func.values[r].ty.text;
    if !text::float_element(ty) || op.operands.iter().any(|&v| func.values[v].ty.text != *ty) {
        return None;
    }
    let ops = &op.operands;
    match (op.name.as_str(), ops.len()) {
        ("stablehlo.logistic", 1) => Some((Activation::Sigmoid, 0)),
        ("stablehlo.tanh", 1) => Some((Activation::Tanh, 0)),
        ("stablehlo.maximum", 2) => (0..2)
            .find(|&i| is_zero(func, ops[1 - i]) && !is_zero(func, ops[i]))
            .map(|i| (Activation::Relu, i)),
        ("stablehlo.multiply", 2) => (0..2)
            .find(|&i| {
                func.op_of(ops[1 - i]).is_some_and(|p| {
                    let g = &func.ops[p];
                    g.name == "stablehlo.logistic" && g.operands.first() == Some(&ops[i])
                })
            })
            .map(|i| (Activation::Silu, i)),
        _ => None,
    }
}

/// The edits of op `o` (text `op_text` where it is edited) when it computes
/// an activation: the op rewritten as each other activation of its `x`
/// (tanh and sigmoid for each other are the unary swaps already; identity
/// is the bypass edit).
pub fn activation_edits(func: &Function, o: usize, op_text: &str) -> Vec<Edit> {
    let Some((current, i)) = recognise(func, o) else {
        return Vec::new();
    };
    let line = text::first_line(op_text);
    let (Some(result), Some(names)) = (text::result_name(op_text), text::operands(line)) else {
        return Vec::new();
    };
    let Some(x) = names.get(i) else {
        return Vec::new();
    };
    let ty = &func.values[func.ops[o].results[0]].ty.text;
    let loc = text::location(op_text);
    let unary_pair = |a: Activation, b: Activation| {
        matches!(
            (a, b),
            (Activation::Tanh, Activation::Sigmoid) | (Activation::Sigmoid, Activation::Tanh)
        )
    };
    ALL.iter()
        .filter(|&&to| to != current && !unary_pair(current, to))
        .map(|&to| {
            let (helpers, t) = to.render(result, x, ty, loc);
            Edit {
                op: o,
                named: o,
                kind: EditKind::WrongActivation,
                what: format!("{} -> {} of {x}", current.name(), to.name()),
                change: Change::Rewrite { helpers, text: t },
            }
        })
        .collect()
}

/// A soft cap `c * tanh(x / c)` missing after op `o` (logits left
/// uncapped), `c` fitted: for a float op that computes values (a layout
/// op's cap is the cap of its operand, which is tried there).
pub fn softcap_edit(func: &Function, o: usize) -> Option<Edit> {
    let op = &func.ops[o];
    let (&r, 1) = (op.results.first()?, op.results.len()) else {
        return None;
    };
    let layout = matches!(
        op.name.as_str(),
        "stablehlo.broadcast_in_dim"
            | "stablehlo.reshape"
            | "stablehlo.transpose"
            | "stablehlo.slice"
            | "stablehlo.convert"
            | "stablehlo.constant"
    );
    (func.values[r].ty.is_float() && !layout).then(|| Edit {
        op: o,
        named: o,
        kind: EditKind::InsertSoftcap,
        what: "soft cap".into(),
        change: Change::After(AfterOp::Softcap),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `%2 = max(x, 0)` (ReLU), `%4 = x * logistic(x)` (SiLU), `%5 = tanh`.
    const MODULE: &str = r#""builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xf32> loc("x")):
    %0 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32> loc("zero")
    %1 = "stablehlo.broadcast_in_dim"(%0) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4xf32> loc("zero_b")
    %2 = "stablehlo.maximum"(%arg0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("relu")
    %3 = "stablehlo.logistic"(%2) : (tensor<4xf32>) -> tensor<4xf32> loc("sig")
    %4 = "stablehlo.multiply"(%3, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("silu")
    %5 = "stablehlo.tanh"(%4) : (tensor<4xf32>) -> tensor<4xf32> loc("tanh")
    %6 = "stablehlo.maximum"(%5, %arg0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("max")
    "func.return"(%6) : (tensor<4xf32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
}) : () -> () loc(unknown)
"#;

    #[test]
    fn relu_silu_and_unary_activations_are_recognised_and_nothing_else() {
        let m = parity_mlir::parse(MODULE).unwrap();
        let f = m.function("main").unwrap();
        assert_eq!(recognise(f, 2), Some((Activation::Relu, 0)));
        assert_eq!(recognise(f, 3), Some((Activation::Sigmoid, 0)));
        assert_eq!(recognise(f, 4), Some((Activation::Silu, 1)));
        assert_eq!(recognise(f, 5), Some((Activation::Tanh, 0)));
        // A maximum of two non-constant values is no ReLU.
        assert_eq!(recognise(f, 6), None);
        assert!(activation_edits(f, 6, &f.ops[6].text).is_empty());
    }

    #[test]
    fn relu_is_rewritten_as_silu_of_the_same_operand() {
        let m = parity_mlir::parse(MODULE).unwrap();
        let f = m.function("main").unwrap();
        let edits = activation_edits(f, 2, &f.ops[2].text);
        let whats: Vec<&str> = edits.iter().map(|e| e.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "relu -> silu of %arg0",
                "relu -> gelu (tanh) of %arg0",
                "relu -> sigmoid of %arg0",
                "relu -> tanh of %arg0"
            ]
        );
        let Change::Rewrite { helpers, text: t } = &edits[0].change else {
            panic!("{:?}", edits[0].change)
        };
        assert_eq!(
            helpers,
            &["%STEM_l = \"stablehlo.logistic\"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>"]
        );
        assert_eq!(
            t,
            "%2 = \"stablehlo.multiply\"(%arg0, %STEM_l) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(\"relu\")"
        );
        // SiLU back to ReLU, of the multiply's x (operand 1, not the logistic).
        let back = activation_edits(f, 4, &f.ops[4].text);
        assert_eq!(back[0].what, "silu -> relu of %2");
        // tanh is not offered sigmoid here (that is the unary swap's edit).
        let t = activation_edits(f, 5, &f.ops[5].text);
        assert!(t.iter().all(|e| !e.what.contains("sigmoid")), "{t:?}");
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn a_soft_cap_is_tried_after_ops_that_compute_values_only() {
        let m = parity_mlir::parse(MODULE).unwrap();
        let f = m.function("main").unwrap();
        // Not after the zero constant or its broadcast.
        assert!(softcap_edit(f, 0).is_none());
        assert!(softcap_edit(f, 1).is_none());
        let e = softcap_edit(f, 4).unwrap();
        assert_eq!(e.kind, EditKind::InsertSoftcap);
        assert!(e.kind.fitted());
        let r = e
            .render(
                &f.ops[4].text,
                "tensor<4xf32>",
                &super::super::Names {
                    result: "%r",
                    orig: "%4",
                    scale: "%s",
                    stem: "%e7",
                    indent: "",
                },
            )
            .unwrap();
        assert_eq!(r.value, "%r");
        let lines: Vec<&str> = r.lines.lines().collect();
        assert_eq!(lines.len(), 4, "{}", r.lines);
        assert!(
            lines[1].starts_with("%e7_d = \"stablehlo.divide\"(%4, %e7_b)"),
            "{}",
            r.lines
        );
        assert!(
            lines[2].starts_with("%e7_t = \"stablehlo.tanh\"(%e7_d)"),
            "{}",
            r.lines
        );
        assert!(
            lines[3].starts_with("%r = \"stablehlo.multiply\"(%e7_t, %e7_b)"),
            "{}",
            r.lines
        );
    }
}
