//! The repair search's cross-case check (issue 31, docs/bisect.md): when
//! the repairs that make the failing case's region match act at several
//! operations, each is run on the stage's other cases of the same function
//! (their own inputs, their own oracle tensors, the value fitted on the
//! failing case held fixed); the ones another case's oracle rejects are
//! dropped, and an op is claimed only when the survivors act at one.

mod common;

use serde_json::Value;

/// Meant: 2x + 1; the port subtracts. On an all-ones input a scale by 3
/// after the subtract, or the weight doubled, repairs the output as well as
/// `subtract -> add` (tests/bisect_equivalence.rs); on other inputs they
/// do not. `g` is the same program at another shape (JAX names every
/// location after its function: `jit(g)/...`); `h` is that shape without
/// the fault.
const MODEL: &str = r#"
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %w = stablehlo.constant dense<2.0> : tensor<8xf32>
  %one = stablehlo.constant dense<1.0> : tensor<8xf32>
  %t = stablehlo.multiply %x, %w : tensor<8xf32> loc("jit(f)/affine/mul")
  %y = stablehlo.subtract %t, %one : tensor<8xf32> loc("jit(f)/affine/sub")
  return %y : tensor<8xf32>
}

func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = stablehlo.constant dense<2.0> : tensor<4xf32>
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %t = stablehlo.multiply %x, %w : tensor<4xf32> loc("jit(g)/affine/mul")
  %y = stablehlo.subtract %t, %one : tensor<4xf32> loc("jit(g)/affine/sub")
  return %y : tensor<4xf32>
}

func.func @h(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = stablehlo.constant dense<2.0> : tensor<4xf32>
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %t = stablehlo.multiply %x, %w : tensor<4xf32> loc("jit(h)/affine/mul")
  %y = stablehlo.add %t, %one : tensor<4xf32> loc("jit(h)/affine/sub")
  return %y : tensor<4xf32>
}
"#;

/// A spec of one stage over the cases `(name, function)`, each with its
/// own oracle `{case}_x` and `{case}_y`.
fn spec(cases: &[(&str, &str)]) -> String {
    let cases: String = cases
        .iter()
        .map(|(c, f)| format!("  - {{name: {c}, vars: {{fn: {f}}}}}\n"))
        .collect();
    format!(
        r#"version: 1
subject:
  modules:
    m: {{mlir: model.mlir}}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
oracle: oracle
cases:
{cases}stages:
  - name: f
    module: m
    function: "{{fn}}"
    args:
      - {{oracle: "{{case}}_x"}}
    outputs:
      - name: y
        oracle: "{{case}}_y"
        tolerance: [{{max_ulp: 4}}]
"#
    )
}

/// Bisects case `a` of a subject whose cases are `(name, function, x)`,
/// with y = 2x + 1 for each; returns the text, the record's repair search
/// and its named op.
fn bisect(cases: &[(&str, &str, Vec<f32>)]) -> (String, Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.mlir"), MODEL).unwrap();
    let names: Vec<(&str, &str)> = cases.iter().map(|(c, f, _)| (*c, *f)).collect();
    std::fs::write(dir.path().join("stages.yaml"), spec(&names)).unwrap();
    let ys: Vec<Vec<f32>> = cases
        .iter()
        .map(|(_, _, x)| x.iter().map(|v| 2.0 * v + 1.0).collect())
        .collect();
    let names: Vec<(String, String)> = cases
        .iter()
        .map(|(c, _, _)| (format!("{c}_x"), format!("{c}_y")))
        .collect();
    let mut tensors: Vec<(&str, &[f32])> = Vec::new();
    for (i, (x, y)) in names.iter().enumerate() {
        tensors.push((x, &cases[i].2));
        tensors.push((y, &ys[i]));
    }
    common::write_f32_store(&dir.path().join("oracle"), &tensors);
    let (code, text, report) = common::bisect_in(dir.path(), "stages.yaml", &["--case", "a"]);
    assert_eq!(code, 1, "{text}");
    assert_eq!(report["case"], "a", "{text}");
    (
        text,
        report["repair"].clone(),
        report["first_divergent_op"].clone(),
    )
}

fn ones(n: usize) -> Vec<f32> {
    vec![1.0; n]
}

#[test]
fn another_case_of_the_same_function_drops_the_repairs_that_only_fit_the_failing_one() {
    // Case a alone is ambiguous (tests/bisect_equivalence.rs: 7 repairs at
    // #2 and #3, 3 of them not the same function). Case b's inputs are not
    // all ones: its oracle rejects the scales and the doubled weight.
    let b: Vec<f32> = (0..8).map(|i| 0.25 + i as f32 * 0.5).collect();
    let (text, repair, op) = bisect(&[("a", "f", ones(8)), ("b", "f", b)]);
    let cross = &repair["cross_case"];
    assert_eq!(cross["cases"], serde_json::json!(["b"]), "{repair}");
    let dropped = cross["dropped"].as_array().unwrap();
    assert_eq!(dropped.len(), 3, "{repair}");
    for d in dropped {
        assert_eq!(d["case"], "b", "{d}");
        assert!(d["ulps"].as_f64().unwrap() > 4.0, "{d}");
    }
    let edits: Vec<&str> = dropped
        .iter()
        .map(|d| d["candidate"]["edit"].as_str().unwrap())
        .collect();
    assert!(
        edits.contains(&"its result times 3.0000e0 (a missing scale)"),
        "{edits:?}"
    );
    // The survivors (subtract -> add, and +2 after the multiply, which acts
    // at the subtract) all act at #3: it is claimed.
    assert_eq!(repair["claimed"], 3, "{repair}");
    assert_eq!(op["op_index"], 3, "{op}");
    assert_eq!(op["op_name"], "stablehlo.subtract", "{op}");
    assert_eq!(op["evidence"], "repair", "{op}");
    assert!(op["pair"].is_null(), "{op}");
    for c in repair["candidates"].as_array().unwrap() {
        assert!(
            !c["edit"].as_str().unwrap().contains("times"),
            "a dropped repair is still a candidate: {c}"
        );
    }
    assert!(
        text.contains("judged on case b against its own oracle tensors: 3 fail there"),
        "{text}"
    );
}

#[test]
fn another_case_that_cannot_separate_the_repairs_leaves_them_ambiguous() {
    // Cases b (the same function) and c (another function, the repairs
    // carried to it) are all ones too: every repair holds there, none is
    // dropped, nothing is claimed. Case d's function `h` does not hold the
    // fault (its unedited region matches its oracle): not used, and said.
    let (text, repair, op) = bisect(&[
        ("a", "f", ones(8)),
        ("b", "f", ones(8)),
        ("c", "g", ones(4)),
        ("d", "h", vec![0.5, 1.5, 2.5, 3.5]),
    ]);
    assert!(op.is_null(), "ambiguous: {text}");
    assert!(repair["claimed"].is_null(), "{repair}");
    let cross = &repair["cross_case"];
    assert_eq!(cross["cases"], serde_json::json!(["b", "c"]), "{repair}");
    assert!(cross["dropped"].is_null(), "{repair}");
    assert!(cross["uncarried"].is_null(), "{repair}");
    let skipped = cross["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{repair}");
    assert!(
        skipped[0]
            .as_str()
            .unwrap()
            .starts_with("d: its function `h` unedited already matches its oracle"),
        "{repair}"
    );
    assert_eq!(
        repair["candidates"].as_array().unwrap().len(),
        7,
        "{repair}"
    );
    assert!(text.contains("0 fail there and are dropped"), "{text}");
    assert!(text.contains("ambiguous"), "{text}");
}

#[test]
fn a_case_of_another_function_decides_with_the_repairs_carried_to_it() {
    // Only case c, of another function (other shapes), has inputs that
    // are not all ones: the repairs are carried to `g` op by op (same name,
    // location and operands), run there, and its oracle drops the three
    // that only fit the ones.
    let c = vec![0.5, 1.5, 2.5, 3.5];
    let (text, repair, op) = bisect(&[("a", "f", ones(8)), ("c", "g", c)]);
    let cross = &repair["cross_case"];
    assert_eq!(cross["cases"], serde_json::json!(["c"]), "{repair}");
    assert_eq!(cross["dropped"].as_array().unwrap().len(), 3, "{repair}");
    assert!(cross["uncarried"].is_null(), "{repair}");
    assert_eq!(repair["claimed"], 3, "{repair}");
    assert_eq!(op["op_index"], 3, "{op}");
    assert_eq!(op["evidence"], "repair", "{op}");
    assert!(text.contains("judged on case c"), "{text}");
}
