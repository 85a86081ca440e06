//! What a person reads first (issue 33): one line per stage by default,
//! headroom that reads the same way for every criterion, integers as
//! integers, locations in brief, ambiguous repairs said as such.

use super::*;
use parity_compare::Criterion;
use parity_record::{
    samples, AnyRecord, Check, CriterionRecord, Evidence, Localisation, Mode, OpMetrics,
    ReproducerCheck, ReproducerOutput, RunRecord,
};

use super::test_support::{text, TERM};

/// A pass the size of the bundled subject's: 30 stages x 5 cases x 2 modes,
/// two outputs each (600 rows), one with a cosine criterion.
fn large_pass() -> RunRecord {
    let template = samples::passing_run();
    let mut run = template.clone();
    run.stages.clear();
    for mode in [Mode::Isolated, Mode::Chained] {
        for stage in 0..30 {
            for case in 0..5 {
                let mut s = template.stages[1].clone();
                s.name = format!("stage_{stage:02}");
                s.case = format!("case_{case}");
                s.mode = mode;
                let mut cos = s.outputs[0].clone();
                cos.name = "pooled".into();
                cos.criteria = vec![cosine(0.99999 - 1e-6 * case as f64, 0.9999)];
                s.outputs.push(cos);
                run.stages.push(s);
            }
        }
    }
    run
}

fn cosine(observed: f64, min: f64) -> CriterionRecord {
    CriterionRecord {
        criterion: Check::Tolerance(Criterion::CosineMin(min)),
        passed: observed >= min,
        observed,
        threshold: min,
        min_passing: observed,
        note: None,
    }
}

#[test]
fn a_large_pass_prints_one_line_per_stage_and_v_prints_every_row() {
    let run = large_pass();
    let out = text(&TERM, run.clone());
    let rows = |t: &str, needle: &str| t.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(rows(&out, "stage_07"), 1, "{out}");
    assert_eq!(rows(&out, "│ stage_"), 30, "{out}");
    assert!(out.len() < 8 << 10, "{} bytes", out.len());
    // Its worst output: the pooled cosine of the last case, 1-cos 1.4e-5
    // against 1e-4 (0.14 of the limit), not 0.99998 / 0.9999 (above 1).
    let line = out.lines().find(|l| l.contains("stage_07")).unwrap();
    assert!(line.contains("pooled (case_4, isolated)"), "{line}");
    assert!(
        line.contains("cosine_min 1-cos 1.400e-5 / 1.000e-4"),
        "{line}"
    );
    assert!(line.contains("┆ 0.14 "), "{line}");
    assert!(line.contains("┆ 10/10 pass "), "{line}");
    assert!(out.contains("-v prints every row"), "{out}");
    assert!(out.contains("PASS: 300 stage runs, 300 pass"), "{out}");
    let verbose = text(
        &Terminal {
            verbose: true,
            ..TERM
        },
        run,
    );
    assert_eq!(
        rows(&verbose, "│ stage_07"),
        20,
        "2 outputs x 5 cases x 2 modes"
    );
    assert_eq!(rows(&verbose, "│ stage_"), 600);
}

#[test]
fn the_default_view_keeps_every_failing_and_erroring_row_in_full() {
    let out = text(&TERM, samples::failing_run());
    // One line per stage: embed, norm, proj, head.
    let stage_line = |name: &str| {
        out.lines()
            .filter(|l| l.starts_with(&format!("│ {name} ")))
            .count()
    };
    assert_eq!(stage_line("embed"), 1, "{out}");
    // norm: its line and its two failing rows, each with its failed criteria.
    assert_eq!(stage_line("norm"), 3, "{out}");
    assert_eq!(
        out.matches("max_abs 0.2500 > 1.000e-5 (passes at 0.2500)")
            .count(),
        2
    );
    assert!(out.contains("3 failing or erroring rows:"), "{out}");
    // The errored stage's message is in full; the skipped one is its own line only.
    assert!(out.contains("oracle tensor `w` is missing"), "{out}");
    assert_eq!(stage_line("head"), 1, "{out}");
    assert_eq!(
        out.lines().filter(|l| l.contains("embed")).count(),
        1,
        "{out}"
    );
}

#[test]
fn cosine_is_shown_as_headroom_in_every_table() {
    let mut run = samples::failing_run();
    for s in [1, 3] {
        run.stages[s].outputs[0].criteria = vec![cosine(0.99, 0.9999)];
    }
    let term = text(&TERM, run.clone());
    // A failed lower bound reads true, and its ratio is above 1.
    assert!(
        term.contains("cosine_min 0.9900 < 0.9999 (passes at 0.9900)"),
        "{term}"
    );
    assert!(!term.contains("0.9900 > 0.9999"), "{term}");
    let norm = term.lines().find(|l| l.starts_with("│ norm ")).unwrap();
    assert!(
        norm.contains("cosine_min 1-cos 0.0100 / 1.000e-4 "),
        "{norm}"
    );
    assert!(norm.ends_with("┆ 100     │"), "{norm}");
    let md = text(&Markdown::default(), run.clone());
    assert!(md.contains("cosine\\_min 0.9900 &lt; 0.9999"), "{md}");
    assert!(
        md.contains("| cosine\\_min 1-cos 0.0100 / 1.000e-4 | 100 |"),
        "{md}"
    );
    run.stages[0].outputs[0].metrics.as_mut().unwrap().cosine = 0.9999999;
    let html = text(&Html, run);
    assert!(
        html.contains(">0.9999999</td>"),
        "the cosine column: {html}"
    );
    assert!(
        html.contains("cosine_min 1-cos 0.0100 / 1.000e-4 (100x limit), passes at 0.9900"),
        "{html}"
    );
}

#[test]
fn integers_print_as_integers() {
    assert_eq!(table::num(512.0), "512");
    assert_eq!(table::num(4.0), "4");
    assert_eq!(table::num(2.1e6), "2100000");
    // Every f32 ULP distance is below 2^32.
    assert_eq!(table::num(2129499398.0), "2129499398");
    assert_eq!(table::num(1e12), "1.000e12");
    assert_eq!(table::num(0.25), "0.2500");
    assert_eq!(table::num(1.5e-5), "1.500e-5");
    let term = text(&TERM, samples::failing_run());
    assert!(term.contains("padded_zero 4 > 0 (passes at 4;"), "{term}");
    let mut b = samples::bisect_op();
    if let Some(op) = b.first_divergent_op.as_mut() {
        op.metrics.output[0].ulps_at_max = 512.0;
    }
    let bisect = text(&TERM, b.clone());
    assert!(bisect.contains("(512 ULP at max)"), "{bisect}");
    let html = text(&Html, b);
    assert!(
        html.contains("<td>512</td>") && !html.contains("512.0000"),
        "{html}"
    );
}

#[test]
fn repair_evidence_has_no_empty_metrics_table() {
    let mut b = samples::bisect_ambiguous();
    let mut op = samples::bisect_op().first_divergent_op.unwrap();
    op.evidence = Evidence::Repair;
    op.metrics = OpMetrics {
        inputs: Vec::new(),
        output: Vec::new(),
    };
    b.first_divergent_op = Some(op);
    if let Some(r) = b.repair.as_mut() {
        r.claimed = Some(1);
    }
    let html = text(&Html, b);
    assert!(html.contains("evidence: <b>repair</b>"), "{html}");
    assert!(
        !html.contains("<th>ULPs at max</th></tr></thead><tbody></tbody>"),
        "{html}"
    );
    assert!(!html.contains("<th>max |ref|</th>"), "{html}");
}

#[test]
fn the_reproducer_line_says_the_nan_count_first() {
    let mut b = samples::bisect_op();
    b.reproducer_check = Some(ReproducerCheck {
        reproduces: true,
        outputs: vec![ReproducerOutput {
            max_abs: 0.0,
            threshold: 3.0517578125e-5,
            nonfinite: 1920,
        }],
    });
    let out = text(&TERM, b);
    assert!(
        out.contains(
            "reproducer run by bisect: fails as expected (1920 elements NaN/Inf where the \
             expected value differs; max_abs over the finite rest 0.000e0 <= 3.052e-5)"
        ),
        "{out}"
    );
    assert!(!out.contains("0.000e0 > 3.052e-5"), "{out}");
}

/// What JAX writes into an op's location: its scope name over the whole
/// Python traceback (here 10 frames, about 2 KB).
fn traceback_loc() -> String {
    let mut chain = "\"<module>\"(\"/home/u/train.py\":12:6 to :119)".to_string();
    for i in (0..14).rev() {
        chain = format!(
            "callsite(\"Layer{i}.__call__\"(\"/home/u/.venv/lib/python3.11/site-packages/keras/src/layers/layer_{i}.py\":{}:20 to :61) at {chain})",
            100 + i
        );
    }
    format!("loc(\"jit(serve)/functional/dense/dot_general\"({chain}))")
}

#[test]
fn a_traceback_location_is_shown_in_brief_and_kept_whole_in_json_and_html() {
    let raw = traceback_loc();
    assert!(raw.len() > 1500, "{}", raw.len());
    let mut b = samples::bisect_op();
    if let Some(op) = b.first_divergent_op.as_mut() {
        op.loc = "dense/dot_general".into();
        op.loc_raw = raw.clone();
        op.text = format!("{} {raw}", op.text);
    }
    let brief = "functional/dense/dot_general (Layer0.__call__ at \
                 /home/u/.venv/lib/python3.11/site-packages/keras/src/layers/layer_0.py:100:20)";
    let mut run = samples::failing_run();
    run.first_divergent_op = b.localisation();
    let term = text(&TERM, run.clone());
    assert!(
        term.contains(&format!(
            "localised to: #3 stablehlo.divide at {brief} (oracle"
        )),
        "{term}"
    );
    assert!(!term.contains("callsite"), "{term}");
    let bisect = text(&TERM, b.clone());
    assert!(
        bisect.contains(&format!("#3 stablehlo.divide at {brief}")),
        "{bisect}"
    );
    assert!(!bisect.contains("callsite"), "{bisect}");
    let md = text(&Markdown::default(), run.clone());
    assert!(!md.contains("callsite"), "{md}");
    // JSON keeps the whole chain; HTML shows it behind a disclosure only.
    assert!(text(&Json, run).contains("Layer8.__call__"));
    let html = text(&Html, b);
    let details = html
        .find("<details class=\"loc-raw\">")
        .expect("a disclosure");
    let first = html.find("Layer8.__call__").unwrap();
    assert!(first > details, "the chain is only inside the disclosure");
    assert_eq!(html.matches("Layer8.__call__").count(), 1, "{html}");
}

#[test]
fn an_ambiguous_repair_is_said_in_the_summary_line() {
    let mut b = samples::bisect_ambiguous();
    let mut run = samples::failing_run();
    run.first_divergent_op = b.localisation();
    let Some(Localisation::Region(r)) = &run.first_divergent_op else {
        panic!("a region");
    };
    assert!(
        r.repair.is_some(),
        "the run record carries the repair search"
    );
    let line = "ambiguous: 2 equivalent one-op repairs, at #0, #1; an oracle tensor between \
                #0 and #1 would decide";
    let term = text(&TERM, run.clone());
    assert!(term.contains(&format!("localised to: {line}\n")), "{term}");
    assert!(!term.contains("no evidence narrows it further"), "{term}");
    let md = text(&Markdown::default(), run.clone());
    assert!(
        md.contains("**Localised to** ambiguous: 2 equivalent one-op"),
        "{md}"
    );
    // The record reads back with it.
    let json = text(&Json, run.clone());
    let back = AnyRecord::parse(&json, std::path::Path::new("run.json")).unwrap();
    assert_eq!(back, AnyRecord::Run(run));
    assert!(text(&TERM, b.clone()).contains(&format!("result: {line}\n")));
    assert!(text(&Html, b.clone()).contains(&format!("<p class=\"ambiguous\"><b>{line}</b></p>")));
    // Repairs that are not one function say so, and what else would decide.
    if let Some(eq) = b.repair.as_mut().and_then(|r| r.equivalence.as_mut()) {
        (eq.agree, eq.differ) = (vec![0], vec![1]);
    }
    // The sample's other case judged them already (cross_case): said so,
    // and the cross-case check's own line with the repair it dropped.
    let out = text(&TERM, b.clone());
    assert!(
        out.contains(
            "ambiguous: 2 one-op repairs, at #0, #1; 1 of them differ from the first on 3 \
             perturbed inputs, but the stage's other cases (other) do not separate them; an \
             oracle tensor between #0 and #1 would decide"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "cross-case check: the repairs, each with its value as fitted on the failing case, \
             judged on case other against its own oracle tensors: 1 fails there and is \
             dropped: #2 stablehlo.multiply at act/mul (its result times 2.0000e0 (a missing \
             scale): 812.0 ULP on other); cases not used: short: another function"
        ),
        "{out}"
    );
    if let Some(r) = b.repair.as_mut() {
        r.cross_case = None;
    }
    let out = text(&TERM, b);
    assert!(
        out.contains(
            "ambiguous: 2 one-op repairs, at #0, #1; 1 of them differ from the first on 3 \
             perturbed inputs, so another case's oracle tensors, or an oracle tensor between \
             #0 and #1, would decide"
        ),
        "{out}"
    );
    assert!(!out.contains("cross-case check"), "{out}");
}

#[test]
fn a_short_location_has_no_disclosure() {
    // `loc("norm/scaled/div")`: the brief is the whole location.
    let html = text(&Html, samples::bisect_op());
    assert!(
        html.contains("at <code class=\"loc\">norm/scaled/div</code>"),
        "{html}"
    );
    assert!(!html.contains("<details class=\"loc-raw\">"), "{html}");
}
