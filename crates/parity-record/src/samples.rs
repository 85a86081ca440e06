//! Hand-built records for tests, snapshots and docs: small, but with every
//! kind of row (pass, fail, error, skipped; op and region localisations).

use crate::bisect::*;
use crate::common::*;
use crate::compare::{CompareRecord, TensorSource};
use crate::criterion::{Check, CriterionRecord};
use crate::run::*;
use parity_compare::Criterion;

fn metrics(max_abs: f64, count: u64, mismatches: u64) -> OutputMetrics {
    OutputMetrics {
        count,
        masked_out: 0,
        max_abs,
        mean_abs: max_abs / 4.0,
        rms: max_abs / 2.0,
        rel_l2: max_abs / 10.0,
        cosine: 1.0 - max_abs / 100.0,
        max_ulp: Some((max_abs * 1e7) as u64),
        ulp_dtype: Some("f32".into()),
        ulp_p50: Some(0),
        ulp_p99: Some((max_abs * 1e6) as u64),
        ulp_histogram: vec![[0, 0, count - mismatches], [1, 2, mismatches]],
        mismatches,
        nan_mismatch: 0,
        nan_both: 0,
        equal_nan: false,
        inf_mismatch: 0,
        bitwise_mismatches: mismatches,
        padded_nonzero: None,
        first_violation: (mismatches > 0).then(|| ElementRecord {
            index: vec![0, 3],
            actual: 1.0 + max_abs,
            expected: 1.0,
        }),
        worst: vec![ElementRecord {
            index: vec![0, 3],
            actual: 1.0 + max_abs,
            expected: 1.0,
        }],
        vs_f64: None,
    }
}

fn max_abs_check(observed: f64, threshold: f64) -> CriterionRecord {
    CriterionRecord {
        criterion: Check::Tolerance(Criterion::MaxAbs(threshold)),
        passed: observed <= threshold,
        observed,
        threshold,
        min_passing: observed,
        note: None,
    }
}

fn output(name: &str, max_abs: f64, threshold: f64) -> OutputRecord {
    let passed = max_abs <= threshold;
    OutputRecord {
        name: name.into(),
        oracle: format!("{name}_oracle"),
        status: if passed { Status::Pass } else { Status::Fail },
        dtype: "f32".into(),
        shape: vec![2, 8],
        error: None,
        metrics: Some(metrics(max_abs, 16, if passed { 0 } else { 3 })),
        criteria: vec![max_abs_check(max_abs, threshold)],
        error_map: None,
        vs_target: None,
    }
}

fn stage(name: &str, mode: Mode, outputs: Vec<OutputRecord>) -> StageRecord {
    let status = if outputs.iter().all(|o| o.status == Status::Pass) {
        Status::Pass
    } else {
        Status::Fail
    };
    StageRecord {
        name: name.into(),
        target: String::new(),
        case: "b2".into(),
        mode,
        function: format!("main.{name}"),
        status,
        error: None,
        skipped_because: None,
        invoke_ms: 1.25,
        outputs,
    }
}

fn base(status: Status) -> RunRecord {
    let mut r = RunRecord::new(
        "examples/basic/stages.yaml",
        "0.1.0",
        "2026-12-01T09:00:00Z".into(),
    );
    r.status = status;
    r.compiler_revision = Some("iree-3.4.0".into());
    r.elapsed_s = 0.5;
    r.provenance = Provenance {
        modules: vec![ModuleProvenance {
            name: "main".into(),
            source: "examples/basic/model.mlir".into(),
            cache_key: Some("ab12".repeat(16)),
        }],
        oracle: Some(OracleProvenance {
            path: "examples/basic/oracle".into(),
            provenance: serde_json::json!({"made_by": "mlx", "seed": 0}),
        }),
        weight_transforms: Vec::new(),
        uploads: Vec::new(),
    };
    r
}

/// A passing run: two stages, both modes.
pub fn passing_run() -> RunRecord {
    let mut r = base(Status::Pass);
    for mode in [Mode::Isolated, Mode::Chained] {
        r.stages
            .push(stage("embed", mode, vec![output("x", 0.0, 1e-5)]));
        r.stages
            .push(stage("norm", mode, vec![output("normed", 2e-7, 1e-5)]));
    }
    r
}

/// A failing run: `norm` diverges (isolated and chained), with a padded-zero
/// check, a stage error (input) and a skipped dependant.
pub fn failing_run() -> RunRecord {
    let mut r = base(Status::Error);
    for mode in [Mode::Isolated, Mode::Chained] {
        r.stages
            .push(stage("embed", mode, vec![output("x", 0.0, 1e-5)]));
        let mut normed = output("normed", 0.25, 1e-5);
        normed.criteria.push(CriterionRecord {
            criterion: Check::PaddedZero,
            passed: false,
            observed: 4.0,
            threshold: 0.0,
            min_passing: 4.0,
            note: Some("4 padded elements of the production output are not exactly zero".into()),
        });
        r.stages.push(stage("norm", mode, vec![normed]));
    }
    r.stages.push(StageRecord {
        name: "proj".into(),
        target: String::new(),
        case: "b2".into(),
        mode: Mode::Isolated,
        function: "main.proj".into(),
        status: Status::Error,
        error: Some(
            ErrorRecord::input("stage `proj` (b2), argument 1: oracle tensor `w` is missing").at(
                Location {
                    stage: Some("proj".into()),
                    case: Some("b2".into()),
                    argument: Some(1),
                    tensor: Some("w".into()),
                    ..Location::default()
                },
            ),
        ),
        skipped_because: None,
        invoke_ms: 0.0,
        outputs: Vec::new(),
    });
    r.stages.push(StageRecord {
        name: "head".into(),
        target: String::new(),
        case: "b2".into(),
        mode: Mode::Chained,
        function: "main.head".into(),
        status: Status::Skipped,
        error: None,
        skipped_because: Some("upstream stage `proj` error; needs `proj.y`".into()),
        invoke_ms: 0.0,
        outputs: Vec::new(),
    });
    let div = |mode| Divergence {
        stage: "norm".into(),
        case: "b2".into(),
        output: "normed".into(),
        mode,
        target: None,
    };
    r.first_divergence = Some(div(Mode::Isolated));
    r.chained_divergence = vec![div(Mode::Chained)];
    r
}

/// A bisect record that names one operation on oracle evidence.
pub fn bisect_op() -> BisectRecord {
    let mut b = BisectRecord::new();
    b.status = Status::Fail;
    b.stage = Some("norm".into());
    b.case = Some("b2".into());
    b.function = Some("norm".into());
    b.output = Some("normed".into());
    b.strategy = Some(Strategy::Bisection);
    let vm = |value: &str, against: &str, max_abs: f64| ValueMetrics {
        value: value.into(),
        against: against.into(),
        max_abs,
        rms: max_abs / 2.0,
        max_ref: 1.0,
        ulps_at_max: max_abs * 8.4e6,
        nonfinite: 0,
    };
    b.first_divergent_op = Some(DivergentOp {
        stage: "norm".into(),
        function: "norm".into(),
        op_index: 3,
        op_name: "stablehlo.divide".into(),
        loc: "norm/scaled/div".into(),
        loc_raw: "loc(\"norm/scaled/div\")".into(),
        evidence: Evidence::Oracle,
        pair: None,
        probes: 2,
        text: "%3 = \"stablehlo.divide\"(%1, %2) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>".into(),
        operand_types: vec!["tensor<2x8xf32>".into(), "tensor<2x8xf32>".into()],
        result_types: vec!["tensor<2x8xf32>".into()],
        metrics: OpMetrics {
            inputs: vec![vm("%1", "oracle:b2/sum (passes)", 0.0), vm("%2", "constant", 0.0)],
            output: vec![vm("%3", "oracle:b2/normed", 0.25)],
        },
    });
    b.region = Some(Region {
        passing: vec!["b2/sum".into()],
        failing: "b2/normed".into(),
        ops: 1,
        op_list: vec!["#3 stablehlo.divide at norm/scaled/div".into()],
    });
    b.checkpoints = vec![
        CheckpointRecord {
            oracle: "b2/sum".into(),
            value: "%1".into(),
            op_index: Some(1),
            loc: "norm/sum".into(),
            kind: CheckpointKind::Convention,
            passed: true,
            verdict_from: VerdictSource::Probe,
            metrics: Some(vm("%1", "oracle:b2/sum", 0.0)),
        },
        CheckpointRecord {
            oracle: "b2/normed".into(),
            value: "%3".into(),
            op_index: Some(3),
            loc: "norm/scaled/div".into(),
            kind: CheckpointKind::StageOutput,
            passed: false,
            verdict_from: VerdictSource::Run,
            metrics: None,
        },
    ];
    b.probes = 2;
    b.probe_log = vec![
        "probe 1: baseline (untapped)".into(),
        "probe 2: tap %1".into(),
    ];
    b.reproducer = Some("reports/bisect".into());
    b
}

/// A bisect record that stops at a region (no evidence inside it).
pub fn bisect_region() -> BisectRecord {
    let mut b = bisect_op();
    b.first_divergent_op = None;
    b.region = Some(Region {
        passing: vec![],
        failing: "b2/normed".into(),
        ops: 3,
        op_list: vec![
            "#1 stablehlo.reduce at norm/sum".into(),
            "#2 stablehlo.sqrt at norm/sqrt".into(),
            "#3 stablehlo.divide at norm/scaled/div".into(),
        ],
    });
    b.shadow = vec![ShadowRow {
        op_index: 1,
        op_name: "stablehlo.reduce".into(),
        loc: "norm/sum".into(),
        result_type: "tensor<2xf32>".into(),
        accumulated_ulps: 0.5,
        local_ulps: Some(0.5),
        flagged: false,
    }];
    // The shadow flagged the sqrt; with its result from the shadow the end
    // still misses the oracle, so it is not named.
    let end = |ulps_at_max: f64| ValueMetrics {
        value: "%3".into(),
        against: "oracle:b2/normed".into(),
        max_abs: 0.25,
        rms: 0.125,
        max_ref: 1.0,
        ulps_at_max,
        nonfinite: 0,
    };
    b.confirmation = Some(Confirmation {
        budget_ulps: 64.0,
        before: end(2.1e6),
        candidates: vec![ConfirmationCandidate {
            op_index: 2,
            op_name: "stablehlo.sqrt".into(),
            loc: "norm/sqrt".into(),
            local_ulps: 131072.0,
            after: end(2.1e6),
            holds: false,
        }],
        confirmed: None,
        untried: 0,
    });
    b.notes = vec!["localised to a region of 3 operations between the stage inputs (pass) and b2/normed (fail)".into()];
    b
}

/// A bisect record whose repair search found equivalent fixes on two
/// operations (ambiguous: no op named).
pub fn bisect_ambiguous() -> BisectRecord {
    let mut b = bisect_region();
    b.confirmation = None;
    let candidate = |op_index: usize, op_name: &str, loc: &str, edit: &str| RepairCandidate {
        op_index,
        op_name: op_name.into(),
        loc: loc.into(),
        edit: edit.into(),
        ulps: 1.0,
    };
    b.repair = Some(RepairSearch {
        tried: 10,
        wide: false,
        cut: 0,
        judged_by: "within output `y`'s tolerance (1 criteria, vs_f64 left out)".into(),
        candidates: vec![
            candidate(
                0,
                "stablehlo.negate",
                "act/neg",
                "bypassed: operand 0 (%arg0) used instead of its result",
            ),
            candidate(1, "stablehlo.tanh", "act/tanh", "negated"),
        ],
        claimed: None,
        equivalence: Some(Equivalence {
            inputs: 3,
            agree: vec![0, 1],
            differ: vec![],
            unedited_differs: true,
        }),
        cross_case: Some(CrossCase {
            cases: vec!["other".into()],
            skipped: vec![
                "short: another function (`f_b32`); edits are not carried across \
                           functions"
                    .into(),
            ],
            dropped: vec![DroppedRepair {
                candidate: candidate(
                    2,
                    "stablehlo.multiply",
                    "act/mul",
                    "its result times 2.0000e0 (a missing scale)",
                ),
                case: "other".into(),
                ulps: 812.0,
            }],
            uncarried: Vec::new(),
        }),
    });
    b
}

/// A failing `parity compare`.
pub fn compare_fail() -> CompareRecord {
    let source = |file: &str| TensorSource {
        file: file.into(),
        key: None,
        dtype: Some("f32".into()),
        shape: Some(vec![2, 8]),
    };
    let mut c = CompareRecord::new(source("actual.npy"), source("expected.npy"));
    c.status = Status::Fail;
    c.metrics = Some(metrics(0.25, 16, 3));
    c.criteria = vec![CriterionRecord {
        criterion: Check::Tolerance(Criterion::Allclose {
            atol: 1e-5,
            rtol: 1.3e-6,
            max_fraction: 0.0,
        }),
        passed: false,
        observed: 3.0 / 16.0,
        threshold: 0.0,
        min_passing: 3.0 / 16.0,
        note: None,
    }];
    c
}

/// A baseline comparison: `norm.normed` (isolated) grew from 2e-7 to 5e-7
/// max_abs (still inside its 1e-5 tolerance: a ratchet regression), its
/// chained twin shrank, and one output exists only in the run.
pub fn baseline_regression() -> crate::baseline::BaselineRecord {
    let base = passing_run();
    let mut run = passing_run();
    for s in run.stages.iter_mut().filter(|s| s.name == "norm") {
        if let Some(m) = s.outputs[0].metrics.as_mut() {
            match s.mode {
                Mode::Isolated => {
                    m.max_abs = 5e-7;
                    m.max_ulp = m.max_ulp.map(|u| u + 1);
                }
                Mode::Chained => m.max_abs = 1e-7,
            }
        }
    }
    run.stages.push(stage(
        "head",
        Mode::Isolated,
        vec![output("logits", 0.0, 1e-5)],
    ));
    crate::baseline::BaselineRecord::compare(
        &run,
        "reports/run.json",
        &base,
        "baseline/run.json",
        crate::baseline::Band {
            rel: 0.1,
            abs: 1e-9,
        },
        &crate::baseline::Metric::DEFAULT,
    )
    .expect("the sample runs share their outputs")
}
