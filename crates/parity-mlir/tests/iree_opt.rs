//! Emitted and promoted slices are valid MLIR for the real compiler front end:
//! `iree-opt FILE` exits 0. Skipped, with a note, when `.venv/bin/iree-opt` is missing.

mod common;

use std::process::Command;

use common::{attention, gemma, iree_opt, multi, value};
use parity_mlir::{emit_slices, promote_to_f64, SliceRequest};

fn check(iree_opt: &std::path::Path, dir: &std::path::Path, name: &str, text: &str) {
    let path = dir.join(format!("{name}.mlir"));
    std::fs::write(&path, text).unwrap();
    let out = Command::new(iree_opt).arg(&path).output().unwrap();
    assert!(
        out.status.success(),
        "iree-opt rejected {name}:\n{}\n--- text ---\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    // iree-opt prints what it parsed: the slice functions are all there.
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("func.func"), "{printed}");
}

#[test]
fn slices_and_promoted_slices_pass_iree_opt() {
    let Some(iree_opt) = iree_opt() else {
        eprintln!("note: .venv/bin/iree-opt not found (run ci/setup.sh); skipping the iree-opt round trip");
        return;
    };
    let dir = tempfile::tempdir().unwrap();

    let m = gemma();
    let f = attention(&m);
    let point = |p: &str| f.resolve_point(p).unwrap();
    let reqs = [
        SliceRequest {
            name: "rel_shift".into(),
            from: vec![
                point("conformer_1/attention/pos_proj"),
                point("conformer_1/attention/q_scaled"),
            ],
            to: vec![point("conformer_1/attention/rel_shift")],
        },
        SliceRequest {
            name: "whole".into(),
            from: vec![],
            to: f.results.clone(),
        },
        SliceRequest {
            name: "tail".into(),
            from: vec![point("conformer_1/attention/rel_shift")],
            to: vec![point("conformer_1/attention")],
        },
    ];
    let (text, _) = emit_slices(&m, f, "attention_slices", &reqs).unwrap();
    check(&iree_opt, dir.path(), "attention", &text);
    check(
        &iree_opt,
        dir.path(),
        "attention_f64",
        &promote_to_f64(&text).unwrap(),
    );

    let m = multi();
    let a = m.function("argmax_scale").unwrap();
    let reqs = [
        SliceRequest {
            name: "cut_index".into(),
            from: vec![value(a, "%13#1"), value(a, "%arg7")],
            to: vec![value(a, "%18"), value(a, "%13#0")],
        },
        SliceRequest {
            name: "all".into(),
            from: vec![],
            to: a.results.clone(),
        },
    ];
    let (text, _) = emit_slices(&m, a, "argmax_slices", &reqs).unwrap();
    check(&iree_opt, dir.path(), "argmax", &text);
    check(
        &iree_opt,
        dir.path(),
        "argmax_f64",
        &promote_to_f64(&text).unwrap(),
    );

    let g = m.function("loop_capture").unwrap();
    let reqs = [SliceRequest {
        name: "loop".into(),
        from: vec![value(g, "%2")],
        to: vec![value(g, "%4")],
    }];
    let (text, _) = emit_slices(&m, g, "loop_slices", &reqs).unwrap();
    check(&iree_opt, dir.path(), "loop", &text);
    check(
        &iree_opt,
        dir.path(),
        "loop_f64",
        &promote_to_f64(&text).unwrap(),
    );
}
