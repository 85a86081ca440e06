//! [`Judge::find`] on a small real module (parsed as parity reads any
//! module) with chosen tapped tensors: ties between values holding the same
//! numbers, and tensors with nothing to compare.

use super::*;
use crate::bisect::propose::{Found, Tie};

/// `%0` a gather (bare Keras name), `%1` a select inside the scope
/// `encoder/subsampled_mask`, `%2` a multiply named `mul`.
const MODULE: &str = r#""builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xf32> loc("x")):
    %0 = "stablehlo.abs"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("gather")
    %1 = "stablehlo.negate"(%0) : (tensor<4xf32>) -> tensor<4xf32> loc("encoder/subsampled_mask/select_n")
    %2 = "stablehlo.multiply"(%1, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("mul")
    "func.return"(%2) : (tensor<4xf32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
}) : () -> () loc(unknown)
"#;

fn t(values: &[f32]) -> Tensor {
    Tensor::from_f32(vec![values.len()], values).unwrap()
}

/// Finds `name` (holding `oracle`) among `%0`..`%2` holding `values`.
fn find(name: &str, oracle: &Tensor, values: &[Tensor]) -> Found {
    let module = parity_mlir::parse(MODULE).unwrap();
    let func = module.function("main").unwrap();
    let tapped: Vec<ValueId> = ["%0", "%1", "%2"]
        .iter()
        .map(|n| func.resolve_point(n).unwrap())
        .collect();
    let judge = Judge {
        func,
        tapped: &tapped,
        values,
        tolerance: &[Criterion::MaxAbs(1e-5)],
        points: points_of(func),
        scopes: scope_names_of(func),
    };
    judge.find(name, oracle)
}

fn matched(found: &Found) -> (&str, Option<Tie>, &[String]) {
    match found {
        Found::Matched {
            point, tie, also, ..
        } => (point.as_str(), *tie, also.as_slice()),
        other => panic!("not matched: {other:?}"),
    }
}

#[test]
fn a_tie_goes_to_the_value_whose_scope_names_the_tensor() {
    let mask = t(&[1.0, 1.0, 0.0, 0.0]);
    let values = [mask.clone(), mask.clone(), t(&[5.0, 5.0, 5.0, 5.0])];
    let found = find("subsampled_mask", &mask, &values);
    // Before: the earliest named value, `gather`, with no word of a tie.
    assert_eq!(
        matched(&found),
        (
            "encoder/subsampled_mask",
            Some(Tie::ScopeName),
            &["gather".to_string()][..]
        ),
        "{found:?}"
    );
    let Found::Matched { value, .. } = &found else {
        unreachable!()
    };
    assert_eq!(value, "%1");
}

#[test]
fn a_tie_no_scope_decides_is_the_last_value_and_flagged() {
    let x = t(&[2.0, 3.0, 4.0, 5.0]);
    let values = [t(&[9.0; 4]), x.clone(), x.clone()];
    let found = find("hidden", &x, &values);
    assert_eq!(
        matched(&found),
        ("mul", Some(Tie::Last), &["encoder".to_string()][..]),
        "{found:?}"
    );
    // One value holding the numbers: no tie.
    let values = [t(&[9.0; 4]), t(&[8.0; 4]), x.clone()];
    assert_eq!(matched(&find("hidden", &x, &values)).1, None);
}

#[test]
fn an_empty_tensor_has_no_candidate_and_no_zero_distance() {
    let empty = Tensor::from_f32(vec![0], &[]).unwrap();
    let values = [empty.clone(), empty.clone(), empty.clone()];
    // Before: "no match (closest: gather, max_abs 0.000e0)".
    assert_eq!(
        find("cache", &empty, &values),
        Found::NoMatch {
            closest: None,
            closest_max_abs: None
        }
    );
}

#[test]
fn scope_paths_name_tensors_by_their_words() {
    assert!(scope_names_tensor(
        "conformer_1/attention/rel_shift",
        "conformer_1_attention_rel_shift"
    ));
    assert!(scope_names_tensor(
        "encoder/subsampled_mask",
        "subsampled_mask"
    ));
    assert!(!scope_names_tensor("gather", "subsampled_mask"));
    assert!(!scope_names_tensor(
        "encoder/xsubsampled_mask",
        "subsampled_mask"
    ));
}
