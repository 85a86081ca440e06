//! Snapshot tests of every renderer on hand-built records
//! (`parity_record::samples`), and the properties each must keep.

use super::markdown::STEP_SUMMARY_LIMIT;
use super::table::Colour;
use super::*;
use parity_record::{samples, AnyRecord, ErrorRecord, Localisation};

use super::test_support::{text, TERM};

/// `-v`: every row.
const TERM_VERBOSE: Terminal = Terminal {
    verbose: true,
    ..TERM
};

fn failing_bisected() -> parity_record::RunRecord {
    let mut run = samples::failing_run();
    run.first_divergent_op = samples::bisect_op().localisation();
    run
}

#[test]
fn terminal_snapshots() {
    insta::assert_snapshot!("terminal_passing_run", text(&TERM, samples::passing_run()));
    insta::assert_snapshot!("terminal_failing_run", text(&TERM, failing_bisected()));
    insta::assert_snapshot!(
        "terminal_failing_run_verbose",
        text(&TERM_VERBOSE, failing_bisected())
    );
    let quiet = Terminal {
        colour: Colour::Off,
        quiet: true,
        verbose: false,
    };
    insta::assert_snapshot!(
        "terminal_failing_run_quiet",
        text(&quiet, samples::failing_run())
    );
    insta::assert_snapshot!("terminal_bisect_op", text(&TERM, samples::bisect_op()));
    insta::assert_snapshot!(
        "terminal_bisect_region",
        text(&TERM, samples::bisect_region())
    );
    insta::assert_snapshot!(
        "terminal_compare_fail",
        text(&TERM, samples::compare_fail())
    );
}

#[test]
fn tokens_snapshots() {
    use parity_record::samples_tokens::{tokens_divergent, tokens_pass};
    insta::assert_snapshot!("terminal_tokens_pass", text(&TERM, tokens_pass()));
    insta::assert_snapshot!("terminal_tokens_divergent", text(&TERM, tokens_divergent()));
    insta::assert_snapshot!("json_tokens_divergent", text(&Json, tokens_divergent()));
    insta::assert_snapshot!("junit_tokens_divergent", text(&Junit, tokens_divergent()));
    insta::assert_snapshot!(
        "markdown_tokens_divergent",
        text(&Markdown::default(), tokens_divergent())
    );
    // The JSON reads back as the same record, with the same exit code.
    let json = text(&Json, tokens_divergent());
    let back = AnyRecord::parse(&json, std::path::Path::new("tokens.json")).unwrap();
    assert_eq!(back, AnyRecord::from(tokens_divergent()));
    assert_eq!(back.exit_code(), parity_record::ExitCode::Fail);
    assert_eq!(AnyRecord::from(tokens_pass()).exit_code().code(), 0);
    // The HTML page holds the aligned streams, the chart and the op.
    let html = text(&Html, tokens_divergent());
    assert!(html.contains("class=\"mismatch\""), "mismatch cells");
    assert!(html.contains("<svg") && html.contains("aria-label=\"logit gaps of case clean_a\""));
    assert!(html.contains("First divergent operation"));
}

#[test]
fn json_snapshots() {
    insta::assert_snapshot!("json_failing_run", text(&Json, failing_bisected()));
    insta::assert_snapshot!("json_bisect_region", text(&Json, samples::bisect_region()));
    insta::assert_snapshot!("json_compare_fail", text(&Json, samples::compare_fail()));
}

#[test]
fn junit_snapshots() {
    insta::assert_snapshot!("junit_passing_run", text(&Junit, samples::passing_run()));
    insta::assert_snapshot!("junit_failing_run", text(&Junit, samples::failing_run()));
    insta::assert_snapshot!("junit_bisect_op", text(&Junit, samples::bisect_op()));
    insta::assert_snapshot!("junit_compare_fail", text(&Junit, samples::compare_fail()));
}

#[test]
fn markdown_snapshots() {
    let md = Markdown::default();
    insta::assert_snapshot!("markdown_passing_run", text(&md, samples::passing_run()));
    insta::assert_snapshot!("markdown_failing_run", text(&md, failing_bisected()));
    insta::assert_snapshot!(
        "markdown_bisect_region",
        text(&md, samples::bisect_region())
    );
    insta::assert_snapshot!("markdown_compare_fail", text(&md, samples::compare_fail()));
}

/// A record whose names and messages hold what terminals act on and what
/// XML cannot hold.
fn hostile_run() -> parity_record::RunRecord {
    let mut run = samples::failing_run();
    run.stages[1].name = "norm\u{FFFE}\x1b[2J\u{9b}31m<script>|".into();
    run.stages[4].error = Some(ErrorRecord::input(
        "oracle header key `\u{FFFF}\x00\x1b]0;pwned\x07` is not valid",
    ));
    run.errors
        .push(ErrorRecord::execution("bell\x07 and \u{FFFE}"));
    run
}

#[test]
fn junit_is_always_xml_that_a_real_parser_reads() {
    let xml = text(&Junit, hostile_run());
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(
        cases.len(),
        7,
        "one per output (4), per stage without outputs (2), per run error (1)"
    );
    let hostile = cases
        .iter()
        .find(|c| c.attribute("name").unwrap().contains("script"))
        .unwrap();
    assert_eq!(
        hostile.attribute("name").unwrap(),
        "norm\\u{fffe}\\u{1b}[2J\\u{9b}31m<script>|.normed"
    );
    let error = doc
        .descendants()
        .find(|n| n.has_tag_name("error") && n.attribute("message").unwrap().contains("header key"))
        .unwrap();
    assert!(error
        .attribute("message")
        .unwrap()
        .contains("\\u{ffff}\\u{0}\\u{1b}]0;pwned\\u{7}"));
    let failures = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .count();
    assert_eq!(failures, 2, "norm fails in both modes");
}

#[test]
fn terminal_output_escapes_what_a_terminal_would_act_on() {
    for record in [AnyRecord::Run(hostile_run()), {
        let mut b = samples::bisect_op();
        b.notes.push("note \x1b[31m red".into());
        AnyRecord::Bisect(b)
    }] {
        let out = String::from_utf8(TERM.render(&record).unwrap()).unwrap();
        assert!(
            !out.contains('\x1b') && !out.contains('\u{9b}') && !out.contains('\x07'),
            "{out}"
        );
        assert!(out.contains("\\x1b"), "{out}");
    }
    let quiet = Terminal {
        colour: Colour::Off,
        quiet: true,
        verbose: false,
    };
    let mut run = samples::failing_run();
    run.first_divergence.as_mut().unwrap().stage = "st\x1b[1Age".into();
    let out = String::from_utf8(quiet.render(&run.into()).unwrap()).unwrap();
    assert!(out.contains("st\\x1b[1Age"), "{out}");
}

#[test]
fn quiet_shows_the_error_text_of_errored_stages_and_of_the_run() {
    let quiet = Terminal {
        colour: Colour::Off,
        quiet: true,
        verbose: false,
    };
    let mut run = samples::failing_run();
    run.errors
        .push(ErrorRecord::execution("module `main`: compile failed"));
    // A stage whose message does not name it, and one whose error is on an output.
    let mut bare = run.stages[0].clone();
    bare.name = "bare".into();
    bare.status = parity_record::Status::Error;
    bare.error = Some(ErrorRecord::input("cannot read x.npy"));
    let mut on_output = run.stages[0].clone();
    on_output.name = "out_err".into();
    on_output.status = parity_record::Status::Error;
    on_output.outputs[0].error = Some(ErrorRecord::input("oracle tensor `y` is missing"));
    run.stages.extend([bare, on_output]);
    let out = text(&quiet, run);
    for line in [
        "error: module `main`: compile failed\n",
        "error (isolated): stage `proj` (b2), argument 1: oracle tensor `w` is missing\n",
        "error: stage `bare` (b2, isolated): cannot read x.npy\n",
        "error: stage `out_err` (b2, isolated): oracle tensor `y` is missing\n",
    ] {
        assert!(out.contains(line), "{line:?} not in:\n{out}");
    }
    // The summary still closes it.
    assert!(out.contains("first divergence: stage `norm`"), "{out}");
    // Past the cap, the rest are counted, not listed.
    let mut many = samples::failing_run();
    let errored = many
        .stages
        .iter()
        .find(|s| s.error.is_some())
        .unwrap()
        .clone();
    many.stages.extend(std::iter::repeat_n(errored, 30));
    let out = text(&quiet, many);
    assert!(out.contains("... and 11 more errored stage runs"), "{out}");
}

#[test]
fn markdown_stays_under_its_budget_and_says_what_it_left_out() {
    let mut run = samples::failing_run();
    let failing = run.stages[1].clone();
    for i in 0..5000 {
        let mut s = failing.clone();
        s.name = format!("stage_{i}");
        run.stages.push(s);
    }
    let md = Markdown { budget: 64 << 10 };
    let out = text(&md, run.clone());
    assert!(out.len() <= 64 << 10, "{}", out.len());
    assert!(
        out.contains("rows left out to stay under 65536 bytes"),
        "{}",
        &out[out.len() - 300..]
    );
    assert!(
        out.contains("**First divergence:** stage norm"),
        "the verdict is never cut"
    );
    let full = text(&Markdown::default(), run);
    assert!(full.len() < STEP_SUMMARY_LIMIT);
    let hostile = text(&Markdown::default(), hostile_run());
    assert!(
        hostile.contains("&lt;script&gt;\\|") && !hostile.contains('\x1b'),
        "{hostile}"
    );
}

#[test]
fn a_region_localisation_is_never_shown_as_an_op() {
    let mut run = samples::failing_run();
    run.first_divergent_op = samples::bisect_region().localisation();
    assert!(matches!(
        run.first_divergent_op,
        Some(Localisation::Region(_))
    ));
    let out = text(&TERM, run.clone());
    assert!(
        out.contains("localised to: a region of 3 operations"),
        "{out}"
    );
    assert!(!out.contains("stablehlo.divide at"), "{out}");
    let md = text(&Markdown::default(), run);
    assert!(
        md.contains("a region of 3 operations ending at b2/normed"),
        "{md}"
    );
}

#[test]
fn baseline_renderers() {
    let b = samples::baseline_regression();
    assert_eq!(b.status, parity_record::Status::Fail);
    let regressed: Vec<_> = b
        .regressions()
        .map(|(o, m)| format!("{} {}", o.label(), m.metric.name()))
        .collect();
    assert_eq!(
        regressed,
        [
            "norm/normed (b2, isolated) max_abs",
            "norm/normed (b2, isolated) max_ulp"
        ]
    );
    assert_eq!(b.only_in_run, ["head/logits (b2, isolated)"]);
    insta::assert_snapshot!("terminal_baseline", text(&TERM, b.clone()));
    insta::assert_snapshot!("markdown_baseline", text(&Markdown::default(), b.clone()));
    insta::assert_snapshot!("junit_baseline", text(&Junit, b.clone()));
    insta::assert_snapshot!("json_baseline", text(&Json, b.clone()));
    let mut html = String::new();
    super::baseline::html(&mut html, &b);
    insta::assert_snapshot!("html_baseline_section", html.replace("<tr", "\n<tr"));
    let page = text(&Html, b.clone());
    assert!(page.contains("<section class=\"baseline\">"), "{page}");
    // The JSON reads back (serde_json's default float parsing may move a limit by 1 ulp).
    let back = AnyRecord::parse(&text(&Json, b.clone()), std::path::Path::new("b.json")).unwrap();
    let AnyRecord::Baseline(back) = back else {
        panic!("not a baseline record")
    };
    assert_eq!(back.status, b.status);
    assert_eq!(back.regressions().count(), 2);
    assert_eq!(back.only_in_run, b.only_in_run);
}

#[test]
fn every_metric_a_spec_accepts_is_one_the_ratchet_knows() {
    let names: Vec<_> = parity_record::Metric::ALL
        .iter()
        .map(|m| m.name())
        .collect();
    assert_eq!(names, parity_spec::BASELINE_METRICS);
}

#[test]
fn serving_and_fuzz_snapshots() {
    use parity_record::samples_more::{fuzz_violation, serving_leak};
    for (name, r) in [
        ("serving", AnyRecord::from(serving_leak())),
        ("fuzz", AnyRecord::from(fuzz_violation())),
    ] {
        insta::assert_snapshot!(format!("terminal_{name}"), text(&TERM, r.clone()));
        insta::assert_snapshot!(format!("json_{name}"), text(&Json, r.clone()));
        insta::assert_snapshot!(format!("junit_{name}"), text(&Junit, r.clone()));
        insta::assert_snapshot!(
            format!("markdown_{name}"),
            text(&Markdown::default(), r.clone())
        );
        // The JSON reads back as the same record with the same exit code.
        let back =
            AnyRecord::parse(&text(&Json, r.clone()), std::path::Path::new("r.json")).unwrap();
        assert_eq!(back, r);
    }
    // Both fail: a leak and a violation are parity failures, but the
    // refusal at admission is an input error and wins (exit 2).
    assert_eq!(AnyRecord::from(serving_leak()).exit_code().code(), 2);
    assert_eq!(AnyRecord::from(fuzz_violation()).exit_code().code(), 1);
    let html = text(&Html, fuzz_violation());
    assert!(html.contains("audio_encode_c1_b32") && html.contains("projected_audio"));
    let html = text(&Html, serving_leak());
    assert!(html.contains("batch_invariance") && html.contains("second"));
}

#[test]
fn the_html_bisect_section_shows_the_confirmation_of_the_shadow() {
    let html = text(&Html, samples::bisect_region());
    assert!(
        html.contains("Confirmation of the shadow's candidates"),
        "confirmation heading"
    );
    assert!(html.contains("none holds, no operation named from the shadow"));
    assert!(html.contains("<td>#2</td><td>stablehlo.sqrt</td><td>norm/sqrt</td>"));
    let mut confirmed = samples::bisect_region();
    if let Some(c) = confirmed.confirmation.as_mut() {
        c.candidates[0].holds = true;
        c.confirmed = Some(2);
    }
    assert!(text(&Html, confirmed).contains("confirmed: #2"));
}

#[test]
fn the_html_bisect_section_lists_ambiguous_repairs_and_their_equivalence() {
    let html = text(&Html, samples::bisect_ambiguous());
    assert!(html.contains("<h3>Repair search</h3>"), "heading");
    assert!(
        html.contains("compute one function on 3 perturbed inputs"),
        "the equivalence verdict"
    );
    assert!(html.contains(
        "<tr><td>#1</td><td>stablehlo.tanh</td><td>act/tanh</td><td>negated</td><td>1</td><td>yes</td></tr>"
    ));
    let mut split = samples::bisect_ambiguous();
    if let Some(eq) = split.repair.as_mut().and_then(|r| r.equivalence.as_mut()) {
        (eq.agree, eq.differ) = (vec![0], vec![1]);
    }
    let html = text(&Html, split);
    assert!(html.contains("1 of them differ from the first on 3 perturbed inputs"));
    assert!(html.contains("<td>negated</td><td>1</td><td>no</td>"));
}

#[test]
fn the_cross_case_check_is_rendered_with_the_repairs_it_dropped() {
    let b = samples::bisect_ambiguous();
    let html = text(&Html, b.clone());
    assert!(html.contains("<h3>Cross-case check</h3>"), "{html}");
    assert!(
        html.contains(
            "<tr><td>#2</td><td>stablehlo.multiply</td><td>act/mul</td><td>its result times \
             2.0000e0 (a missing scale)</td><td>1</td><td>other</td><td>812</td></tr>"
        ),
        "{html}"
    );
    // Each case not used is an item of its own, and the summary does not
    // repeat the dropped table's rows.
    assert!(
        html.contains("<p>Cases not used:</p><ul class=\"small\"><li>short: another function"),
        "{html}"
    );
    assert!(
        html.contains("judged on case other against its own oracle tensors: 1 fails there and is dropped.</p>"),
        "{html}"
    );
    let md = text(&Markdown::default(), b.clone());
    assert!(
        md.contains("Repair search, cross-case check: the repairs, each with its value as fitted"),
        "{md}"
    );
    assert!(md.contains("1 fails there and is dropped"), "{md}");
    // Without the check, none of it.
    let mut none = b;
    if let Some(r) = none.repair.as_mut() {
        r.cross_case = None;
    }
    assert!(!text(&Html, none.clone()).contains("Cross-case check"));
    assert!(!text(&Markdown::default(), none).contains("cross-case check"));
}

#[test]
fn the_markdown_summary_says_a_bisect_is_ambiguous_and_why() {
    let md = text(&Markdown::default(), samples::bisect_ambiguous());
    assert!(
        md.contains(
            "Repair search: ambiguous between 2 edits at \\#0 stablehlo.negate, \\#1 stablehlo.tanh; \
             they compute one function on 3 perturbed inputs"
        ),
        "{md}"
    );
}
