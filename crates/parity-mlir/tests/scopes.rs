//! Named-scope checkpoints and point resolution on the real attention function.

mod common;

use common::{attention, gemma, multi, value};

#[test]
fn rel_shift_checkpoint_is_its_last_reshape() {
    let m = gemma();
    let f = attention(&m);
    let scopes = f.scope_outputs();
    let v = scopes["conformer_1_attention_rel_shift"];
    assert_eq!(f.values[v].name, "%7864");
    let op = &f.ops[f.op_of(v).unwrap()];
    assert_eq!(op.name, "stablehlo.reshape");
    assert_eq!(f.values[v].ty.shape(), Some(vec![1, 4, 8, 4, 8]));
    // Deeper scopes inside rel_shift, including callsite paths, and every prefix.
    assert_eq!(
        f.values[scopes["conformer_1_attention_rel_shift_padded"]].name,
        "%7862"
    );
    assert_eq!(
        f.values[scopes["conformer_1_attention_rel_shift_padded_pad"]].name,
        "%7861"
    );
    assert_eq!(
        f.values[scopes["conformer_1_attention_rel_shift_sliced"]].name,
        "%7863"
    );
    assert_eq!(
        f.values[scopes["conformer_1_attention_rel_shift_buwnh,fnh->bnuwf"]].name,
        "%7859"
    );
    // The whole block's output is the function's last result.
    assert_eq!(f.values[scopes["conformer_1"]].name, "%7925");
    assert_eq!(f.values[scopes["conformer_1_attention"]].name, "%7925");
    // Ops without a named scope (loc(unknown), bare jit(...)) contribute nothing.
    assert!(
        scopes.keys().all(|k| k.starts_with("conformer_1")),
        "{:?}",
        scopes.keys()
    );
}

#[test]
fn resolve_points_by_ssa_name_path_and_key() {
    let m = gemma();
    let f = attention(&m);
    let by_path = f.resolve_point("conformer_1/attention/rel_shift").unwrap();
    let by_key = f.resolve_point("conformer_1_attention_rel_shift").unwrap();
    assert_eq!(by_path, by_key);
    assert_eq!(f.values[by_path].name, "%7864");
    assert_eq!(f.resolve_point("%7861").unwrap(), value(f, "%7861"));
    assert_eq!(f.resolve_point("%arg1077").unwrap(), f.args[0]);

    let err = f
        .resolve_point("conformer_1/attention/rel_shfit")
        .unwrap_err();
    assert_eq!(err.line, f.line);
    assert!(
        err.message.contains("conformer_1/attention/rel_shfit"),
        "{err}"
    );
    assert!(
        err.message
            .contains("near names: conformer_1_attention_rel_shift"),
        "{err}"
    );
    let err = f.resolve_point("%99999").unwrap_err();
    assert!(err.message.contains("no value `%99999`"), "{err}");
    assert!(err.to_string().starts_with(&format!("line {}:1: ", f.line)));
}

#[test]
fn multi_result_points_take_the_first_result() {
    let m = multi();
    let f = m.function("argmax_scale").unwrap();
    assert_eq!(f.resolve_point("argmax/reduce").unwrap(), value(f, "%13#0"));
    assert_eq!(f.resolve_point("%13#1").unwrap(), value(f, "%13#1"));
    assert_eq!(f.resolve_point("scale").unwrap(), value(f, "%16"));
    assert!(f.resolve_point("%13").is_err());
}
