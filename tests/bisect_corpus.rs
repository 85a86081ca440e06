//! `parity bisect` on faults it did not make: the porting-bug corpus
//! (examples/porting-bugs/corpus.json), hand edits of the bundled subjects
//! with citations of the public reports they come from, each bisected with
//! the real IREE compiler and runtime and judged against its right answers.
//! The whole corpus is `parity bench --bisect corpus` (docs/bisect.md); this
//! test runs every examples/basic entry and eight of the gemma3n ones.

mod common;

use parity::bench::bisect::corpus::{self, CorpusRow};
use parity::bench::bisect::{bundled_subject, prepare, Outcome};
use std::io::Write as _;

fn entries() -> Vec<corpus::Entry> {
    corpus::load(&common::repo().join(corpus::CORPUS)).expect("the corpus parses")
}

fn run(names: &[&str]) -> Vec<CorpusRow> {
    let all = entries();
    let picked: Vec<corpus::Entry> = names
        .iter()
        .map(|n| all.iter().find(|e| e.name == *n).expect(n).clone())
        .collect();
    let work = tempfile::tempdir().unwrap();
    let rows = corpus::run_all(
        &common::repo(),
        &picked,
        work.path(),
        &common::cache_dir(),
        None,
        |row| {
            let _ = writeln!(std::io::stderr(), "{}", row.line());
        },
    )
    .unwrap();
    let _ = writeln!(std::io::stderr(), "{}", corpus::table(&rows));
    rows
}

#[test]
fn every_entry_applies_once_names_its_answers_and_cites_a_public_report() {
    let root = common::repo();
    let all = entries();
    assert!(all.len() >= 23, "{} entries", all.len());
    // Names are how `--bisect-kind` and the docs' table pick entries.
    let mut names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all.len(), "entry names are unique");
    for subject in ["basic", "gemma3n"] {
        let p = prepare(bundled_subject(&root, subject).unwrap(), None).unwrap();
        for e in all.iter().filter(|e| e.subject == subject) {
            let (text, answers, _) = corpus::edited(&p, e).unwrap_or_else(|m| panic!("{m}"));
            assert!(!answers.is_empty(), "{}", e.name);
            assert!(text.len() > 1000, "{}", e.name);
            assert!(
                e.cite.starts_with("https://github.com/"),
                "{}: {}",
                e.name,
                e.cite
            );
        }
    }
    // A replace text that is not in the module is a setup error naming the
    // entry, not a panic and not a row that scores.
    let mut bad = all[0].clone();
    bad.edits[0].replace = "no such text".into();
    let p = prepare(bundled_subject(&root, &bad.subject).unwrap(), None).unwrap();
    let e = corpus::edited(&p, &bad).unwrap_err();
    assert!(e.contains("occurs 0 times"), "{e}");
}

#[test]
fn the_basic_entries_are_named_exactly_or_proven_equivalent_and_never_wrong() {
    let rows = run(&[
        "layer_scale_dropped",
        "norm_eps_1e-6",
        "mask_polarity",
        "attn_scale_twice",
        "wq_transposed",
        "softmax_wrong_axis",
        "conv_pad_causal",
        "sub_mask_offset",
        "proj_bias_dropped",
        "ln_stats_over_seq",
    ]);
    for r in &rows {
        assert_ne!(r.outcome, Outcome::Wrong, "{}", r.line());
        assert_ne!(r.outcome, Outcome::Crash, "{}", r.line());
        // Every reproducer bisect writes fails as it should.
        assert_eq!(r.reproduces, Some(true), "{}", r.line());
        match r.entry.name.as_str() {
            // An eps in its consumer, a scale after the reduce and one after
            // the centring compute one function: ambiguous, shown equivalent.
            "norm_eps_1e-6" => {
                assert_eq!(r.outcome, Outcome::Ambiguous, "{}", r.line());
                assert_eq!(r.equivalent, Some(true), "{}", r.line());
                // Which ops it is one of, and where an oracle tensor would
                // decide: the eps's add, the variance's reduce, the centring.
                assert!(
                    r.said
                        .starts_with("ambiguous: 3 equivalent one-op repairs, at #6, #8, #10;")
                        && r.said
                            .contains("an oracle tensor between #6 and #10 would decide"),
                    "{}",
                    r.said
                );
            }
            // Mean and variance over (T, D): one mistake at two sites (the
            // extra sum over T, broadcast back, for each statistic), undone
            // only by the edit at both: named at the first.
            "ln_stats_over_seq" => {
                assert_eq!(r.outcome, Outcome::Exact, "{}", r.line());
                assert!(
                    r.said.contains("#5 stablehlo.broadcast_in_dim"),
                    "{}",
                    r.said
                );
            }
            // The wide catalogue: a weight never multiplied in (an input of
            // the region), a reduction over the other axis of a square matrix;
            // a mask subsampled from the wrong frames (an off-by-one slice), a
            // bias never added (a missing binary op with a region input).
            _ => assert_eq!(r.outcome, Outcome::Exact, "{}", r.line()),
        }
    }
}

#[test]
fn gemma3n_entries_found_only_by_the_wide_catalogue_are_named() {
    // x * 0.5 written x + 0.5 (a swap across families), an integer
    // position constant off by one inside a constant-only chain, and the
    // GLU's halves swapped (two slices, one edit).
    let rows = run(&[
        "residual_scale_became_add",
        "rel_position_offset",
        "glu_halves_swapped",
    ]);
    for r in &rows {
        assert_eq!(r.outcome, Outcome::Exact, "{}", r.line());
        assert_eq!(r.reproduces, Some(true), "{}", r.line());
    }
    assert!(rows[0].said.contains("stablehlo.add"), "{}", rows[0].said);
    assert!(rows[1].said.contains("dot_general"), "{}", rows[1].said);
    assert!(rows[2].said.contains("stablehlo.slice"), "{}", rows[2].said);
}

#[test]
fn activation_conv_layout_mask_band_and_soft_cap_faults_are_named() {
    // Four faults the catalogue could not express in the last measurement
    // (docs/bisect.md), each now one general wide-catalogue edit: SiLU
    // written ReLU (another activation of the same value), a square
    // kernel's height and width swapped (another conv layout of the same
    // type), a local window one key too wide (a band mask's edge moved by
    // one), the logits' soft cap left out (a fitted `c * tanh(x / c)`).
    let rows = run(&[
        "ffw_relu_for_silu",
        "sscp_kernel_hw_swapped",
        "attn_window_one_too_wide",
        "attn_softcap_missing",
    ]);
    for r in &rows {
        assert_eq!(r.outcome, Outcome::Exact, "{}", r.line());
    }
    assert!(
        rows[0].said.contains("stablehlo.maximum"),
        "{}",
        rows[0].said
    );
    assert!(rows[1].said.contains("convolution"), "{}", rows[1].said);
    assert!(rows[2].said.contains("stablehlo.and"), "{}", rows[2].said);
    assert!(
        rows[3].said.contains("stablehlo.select"),
        "{}",
        rows[3].said
    );
}

#[test]
fn the_hoisted_audio_eps_is_named_by_the_stages_other_cases() {
    // The eps constant read by both norms: 25 one-op repairs at 21 ops on
    // the failing case (full128), 14 not one function with the constant's.
    // Carried to the stage's other cases (partial77 runs the same function;
    // two_clips, boundary33 and shortest their own shapes) and judged by
    // their oracle tensors, only the constant's refit holds on all of them.
    let rows = run(&["audio_rms_eps_1e-5"]);
    let r = &rows[0];
    assert_eq!(r.outcome, Outcome::Exact, "{}", r.line());
    assert_eq!(r.said, "#20 stablehlo.add (Repair)", "{}", r.line());
}
