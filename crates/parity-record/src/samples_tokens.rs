//! Hand-built tokens records for tests and snapshots: a passing run, and a
//! failing one with a near tie, a divergent token, its layer and its op.

use crate::common::{Mode, Status};
use crate::run::Divergence;
use crate::samples::{bisect_op, passing_run};
use crate::tokens::*;

fn steps(oracle: &[i64], production: &[i64], delta: &[f64]) -> Vec<StepMetrics> {
    oracle
        .iter()
        .zip(production)
        .zip(delta)
        .enumerate()
        .map(|(s, ((&o, &p), &d))| StepMetrics {
            step: s,
            oracle_token: o,
            production_token: p,
            top1_agree: o == p,
            kl: d * d / 2.0,
            delta_p: -d / 4.0,
            max_abs_delta_logit: d,
            oracle_gap: 0.5 + s as f64 / 10.0,
            production_gap: 0.5 + s as f64 / 10.0 - d,
            logits_pass: Some(d < 1e-4),
            failed_criteria: Vec::new(),
        })
        .collect()
}

fn token(case: &str, step: usize, p: i64, o: i64, verdict: TokenVerdict) -> DivergentToken {
    let logits = |a: i64, b: i64, top: f64, gap: f64| {
        vec![
            TokenLogit {
                token: a,
                logit: top,
            },
            TokenLogit {
                token: b,
                logit: top - gap,
            },
            TokenLogit {
                token: 3,
                logit: top - 2.0,
            },
        ]
    };
    let near = verdict == TokenVerdict::NearTie;
    let gap = if near { 2.0e-6 } else { 0.75 };
    DivergentToken {
        case: case.into(),
        step,
        position: 4 + step - 1,
        mode: TokenMode::TeacherForced,
        production_token: p,
        oracle_token: o,
        production_gap_ulp: if near { 2 } else { 786432 },
        oracle_gap_ulp: if near { 1 } else { 1048576 },
        ulp_dtype: "f32".into(),
        production_margin: gap,
        oracle_margin: gap,
        noise: Some(3.0e-6),
        noise_steps: Vec::new(),
        noise_source: Some(NoiseSource::Truth),
        rule: Some(VerdictRule::Truth),
        truth_gap: Some(gap / 2.0),
        truth_margin: Some(if near { -1.0e-7 } else { gap }),
        truth_token: Some(if near { p } else { o }),
        production_top_k: logits(p, o, 6.5, gap),
        oracle_top_k: logits(o, p, 6.5, gap),
        verdict,
        counted: !near,
    }
}

fn case(
    name: &str,
    oracle: Vec<i64>,
    greedy: Vec<i64>,
    forced: Vec<i64>,
    delta: &[f64],
) -> TokenCaseRecord {
    let steps = steps(&oracle, &forced, delta);
    TokenCaseRecord {
        case: name.into(),
        target: None,
        status: Status::Pass,
        prompt_length: 4,
        oracle_tokens: oracle,
        greedy_tokens: greedy,
        teacher_forced_tokens: forced,
        summary: None,
        steps,
        first_divergent_token: None,
        later_mismatches: Vec::new(),
        reference_noise: None,
        logits_gate: None,
        errors: Vec::new(),
    }
}

fn record(cases: Vec<TokenCaseRecord>) -> TokensRecord {
    let mut r = TokensRecord::new(
        "examples/tokens/stages.yaml",
        "0.1.0",
        "2026-12-01T12:00:00Z".into(),
    );
    r.modes = vec![TokenMode::Greedy, TokenMode::TeacherForced];
    r.elapsed_s = 1.5;
    r.compiler_revision = Some("3.13.0".into());
    r.cases = cases;
    r
}

/// Every token matches in both modes.
pub fn tokens_pass() -> TokensRecord {
    let t = vec![19, 13, 13, 25, 0, 0];
    let mut c = case(
        "clean_a",
        t.clone(),
        t.clone(),
        t,
        &[1e-6, 2e-6, 1e-6, 3e-6, 2e-6, 1e-6],
    );
    c.summary = Some(TeacherForcedSummary {
        steps: 6,
        top1_agreement: 1.0,
        mean_kl: 1e-12,
        max_kl: 4.5e-12,
        rms_delta_p: 2e-7,
        max_abs_delta_p: 7e-7,
        max_abs_delta_logit: 3e-6,
    });
    record(vec![c])
}

/// A near tie in one case (not counted), a divergent token in another with
/// its layer (from the step's stage run) and op (from bisect).
pub fn tokens_divergent() -> TokensRecord {
    let mut near = case(
        "near_tie",
        vec![6, 30, 31, 30, 30],
        vec![6, 30, 30, 31, 30],
        vec![6, 30, 30, 30, 30],
        &[1e-6, 3e-6, 2e-6, 1e-6, 1e-6],
    );
    near.first_divergent_token = Some(token("near_tie", 2, 30, 31, TokenVerdict::NearTie));
    let mut fault = case(
        "clean_a",
        vec![19, 13, 13, 25, 0, 0, 0],
        vec![19, 13, 13, 25, 25, 25, 25],
        vec![19, 13, 13, 25, 25, 0, 0],
        &[1e-6, 2e-6, 1e-6, 3e-6, 2.1, 0.4, 0.3],
    );
    fault.status = Status::Fail;
    fault.first_divergent_token = Some(token("clean_a", 4, 25, 0, TokenVerdict::Divergent));
    let mut r = record(vec![near, fault]);
    r.status = Status::Fail;
    r.first_divergent_token = r.cases[0].first_divergent_token.clone();
    let layer = Divergence {
        stage: "layer_1".into(),
        case: "clean_a.s04".into(),
        output: "hidden".into(),
        mode: Mode::Isolated,
        target: None,
    };
    let mut run = passing_run();
    run.status = Status::Fail;
    run.first_divergence = Some(layer.clone());
    r.localisation = Some(StepLocalisation {
        case: "clean_a".into(),
        step: 4,
        step_case: "clean_a.s04".into(),
        chained_divergence: vec![layer.clone()],
        run: Box::new(run),
    });
    r.first_divergent_layer = Some(layer);
    r.first_divergent_op = bisect_op().localisation();
    r.layer_vs_f64 = Some(crate::LayerVsF64 {
        stage: "layer_1".into(),
        output: "layer_1_output".into(),
        truth: "clean_a.s04/layer_1_output@f64".into(),
        production_vs_truth: 2.5e-6,
        oracle_vs_truth: 0.47,
        wrong: crate::WrongSide::Oracle,
    });
    r.notes.push("sample note".into());
    r.findings = vec![
        TokenFinding {
            case: "clean_a".into(),
            step: 4,
            verdict: TokenVerdict::Divergent,
            logits_gate: false,
            localisation: r.localisation.clone(),
            first_divergent_layer: r.first_divergent_layer.clone(),
            first_divergent_op: r.first_divergent_op.clone(),
            layer_vs_f64: r.layer_vs_f64.clone(),
            notes: vec!["sample note".into()],
            chain_check: Some(crate::ChainCheck {
                call: "decode".into(),
                bit_identical: true,
                max_abs: Some(0.0),
                ulps: Some(0),
                detail: "the chain's `head.logits`, run chained on decode's own inputs of step 4, against decode's logits".into(),
                inputs: vec!["`clean_a.s04/k_all` <- decode's state `k_cache`".into()],
            }),
        },
        TokenFinding {
            case: "clean_a".into(),
            step: 0,
            verdict: TokenVerdict::Divergent,
            logits_gate: false,
            localisation: None,
            first_divergent_layer: None,
            first_divergent_op: None,
            layer_vs_f64: None,
            notes: vec!["step 0 of case `clean_a` not localised: the spec has no `tokens.step_stages.prefill` chain".into()],
            chain_check: None,
        },
    ];
    r
}

/// [`tokens_divergent`] whose step chain is not the decode function: its
/// localisation is labelled not trusted.
pub fn tokens_untrusted() -> TokensRecord {
    let mut r = tokens_divergent();
    r.findings.truncate(1);
    r.findings[0].chain_check = Some(crate::ChainCheck {
        call: "decode".into(),
        bit_identical: false,
        max_abs: Some(0.8125),
        ulps: Some(6_815_744),
        detail: "the chain's `head.logits`, run chained on decode's own inputs of step 4, against decode's logits".into(),
        inputs: vec!["`clean_a.s04/k_all` <- decode's state `k_cache`".into()],
    });
    r
}

/// `parity tokens --target cpu,vulkan`: `clean_a` passes on cpu and flips
/// at step 3 on vulkan (backend-specific); `fault` flips the same way on
/// both (port); `near_tie` passes on both.
pub fn tokens_targets() -> TokensRecord {
    let t = vec![19, 13, 13, 25, 0];
    let on = |mut c: TokenCaseRecord, target: &str| {
        c.target = Some(target.into());
        c
    };
    let clean = || case("clean_a", t.clone(), t.clone(), t.clone(), &[1e-6; 5]);
    let mut flipped = case(
        "clean_a",
        t.clone(),
        vec![19, 13, 13, 7, 7],
        vec![19, 13, 13, 7, 0],
        &[1e-6, 1e-6, 1e-6, 3.5, 1e-6],
    );
    flipped.status = Status::Fail;
    flipped.first_divergent_token = Some(token("clean_a", 3, 7, 25, TokenVerdict::Divergent));
    let fault = || {
        let mut c = case(
            "fault",
            t.clone(),
            vec![19, 4, 4, 4, 4],
            vec![19, 4, 13, 25, 0],
            &[1e-6, 2.0, 1e-6, 1e-6, 1e-6],
        );
        c.status = Status::Fail;
        c.first_divergent_token = Some(token("fault", 1, 4, 13, TokenVerdict::Divergent));
        c
    };
    let near = || case("near_tie", t.clone(), t.clone(), t.clone(), &[1e-6; 5]);
    let mut r = record(vec![
        on(clean(), "cpu"),
        on(fault(), "cpu"),
        on(near(), "cpu"),
        on(flipped, "vulkan"),
        on(fault(), "vulkan"),
        on(near(), "vulkan"),
    ]);
    r.status = Status::Fail;
    r.targets = vec!["cpu".into(), "vulkan".into()];
    r.first_divergent_token = r.cases[1].first_divergent_token.clone();
    r.divergence_target = Some("cpu".into());
    r.triangulation = crate::tokens_targets::triangulate_tokens(&r);
    r
}
