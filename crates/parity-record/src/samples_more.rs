//! Hand-built serving and fuzz records for tests and snapshots: a serving
//! scenario where a reused slot leaks (one request passes, one is refused at
//! admission, one fails batch invariance at a step and slot), and a fuzz run
//! with one violation shrunk to its minimal case and a silent control.

use crate::common::{ErrorRecord, Status};
use crate::fuzz::*;
use crate::serving::*;

fn request(id: &str, slot: Option<u32>, status: Status) -> ServingRequestRecord {
    ServingRequestRecord {
        id: id.into(),
        case: "text_short".into(),
        kind: "text".into(),
        status,
        arrive: 0,
        slot,
        admitted_step: slot.map(|_| 0),
        cancelled_step: None,
        finished_step: slot.map(|_| 3),
        tokens: vec![13, 29, 27],
        oracle_tokens: vec![13, 29, 27],
        solo_tokens: vec![13, 29, 27],
        logprobs: Vec::new(),
        finish: None,
        bitwise_logits: Some(true),
        effective_length: Some(10),
        solo_effective_length: Some(10),
        dense_ple_sha256: None,
        reused_slot: false,
        refused: None,
        error: None,
        verdicts: Vec::new(),
        target: None,
    }
}

/// A leak-kv scenario: `first` passes, `long` is refused at admission,
/// `second` reuses slot 0 and diverges from its solo run at step 5.
pub fn serving_leak() -> ServingRecord {
    let mut s = ServingRecord::new(
        "subject/gemma3n/serving/leak-kv-scenario.yaml".into(),
        "in-process".into(),
        "0.1.0",
        "2026-12-01T19:00:00Z".into(),
    );
    s.module = "serving_leak_kv".into();
    s.slots = 2;
    s.context = 64;
    s.steps = 8;
    s.elapsed_s = 1.5;
    let first = request("first", Some(0), Status::Pass);
    let mut long = request("long", None, Status::Error);
    long.tokens.clear();
    long.solo_tokens.clear();
    long.bitwise_logits = None;
    long.effective_length = None;
    long.solo_effective_length = None;
    long.refused = Some("prompt 10 + max_new_tokens 60 = 70 exceeds the context of 64".into());
    let mut second = request("second", Some(0), Status::Fail);
    second.arrive = 4;
    second.admitted_step = Some(4);
    second.finished_step = Some(7);
    second.reused_slot = true;
    second.tokens = vec![13, 29, 40];
    second.bitwise_logits = Some(false);
    second.effective_length = Some(21);
    second.verdicts = vec![ServingVerdict {
        check: "batch_invariance".into(),
        status: Status::Fail,
        message: "effective length 21, alone 10: state survived the reuse of slot 0".into(),
        step: Some(5),
        slot: Some(0),
        divergent_token: None,
    }];
    s.requests = vec![first, long, second];
    s.errors = vec![ErrorRecord::input(
        "request `long`: refused at admission: prompt 10 + max_new_tokens 60 = 70 exceeds the context of 64",
    )];
    s.status = s.derived_status();
    s
}

/// A fuzz run on a prefix-mask encoder: pad-content violated (shrunk to
/// one valid frame), bucket invariance held, and a negative control that
/// did not fire.
pub fn fuzz_violation() -> FuzzRecord {
    let mut f = FuzzRecord::new(
        "subject/gemma3n/fuzz.yaml",
        "0.1.0",
        "2026-12-01T19:00:00Z".into(),
    );
    f.seed = 7;
    f.cases = 32;
    f.elapsed_s = 2.25;
    f.replayed = vec![ReplayRecord {
        invariant: "pad_content".into(),
        seed: 12_345,
        still_fails: true,
        target: None,
    }];
    let control = |fired, max_diff| {
        Some(ControlRecord {
            description: "garbage written into a valid frame".into(),
            fired,
            max_diff,
        })
    };
    f.invariants = vec![
        InvariantRecord {
            name: "pad_content".into(),
            status: Status::Fail,
            description: "garbage, ±Inf or NaN in padded frames leave valid outputs unchanged"
                .into(),
            tolerance: "bit for bit".into(),
            cases_run: 16,
            cases_failed: 16,
            max_diff: Some(0.5),
            control: control(true, 3.25),
            note: None,
            target: None,
            vs_first: None,
        },
        InvariantRecord {
            name: "bucket".into(),
            status: Status::Pass,
            description: "the same clip in a 32- or 64-frame bucket gives the same valid outputs"
                .into(),
            tolerance: "bit for bit".into(),
            cases_run: 16,
            cases_failed: 0,
            max_diff: Some(0.0),
            control: control(false, 0.0),
            note: Some("the control did not fire: this check cannot fail as run".into()),
            target: None,
            vs_first: None,
        },
    ];
    f.violations = vec![Violation {
        invariant: "pad_content".into(),
        seed: 12_345,
        shrink_steps: 37,
        case: MinimalCase {
            function: "audio_encode_c1_b32".into(),
            clips: 1,
            bucket: 32,
            valid: vec![1],
            valid_frames: vec!["0..1".into()],
            sources: vec!["full128 frames 0..1".into()],
            change: "padded frame 1 = 1.0 on every feature".into(),
        },
        moved: MovedElement {
            output: "projected_audio".into(),
            index: vec![0, 0, 3],
            expected: 0.125,
            actual: 0.625,
            max_diff: 0.5,
            differing: 48,
        },
        summary: "padded frame 1 = 1.0 moves projected_audio[0,0,3] from 0.125 to 0.625".into(),
        target: None,
    }];
    f.status = f.derived_status();
    f
}

/// The violation run of [`fuzz_violation`] over two targets (`--target
/// cpu,vulkan`): `pad_content` violated on vulkan only (backend-specific),
/// `bucket` kept on both but vulkan's outputs 0.25 from cpu's (undetermined).
pub fn fuzz_targets() -> FuzzRecord {
    let one = fuzz_violation();
    let mut f = one.clone();
    f.targets = vec!["cpu".into(), "vulkan".into()];
    f.replayed.clear();
    f.invariants.clear();
    f.violations.clear();
    for t in ["cpu", "vulkan"] {
        for i in &one.invariants {
            let mut i = i.clone();
            i.target = Some(t.into());
            i.control = i.control.map(|mut c| {
                (c.fired, c.max_diff) = (true, 1.5);
                c
            });
            i.note = None;
            if i.name == "pad_content" && t == "cpu" {
                (i.status, i.cases_failed, i.max_diff) = (Status::Pass, 0, Some(0.0));
            }
            if t == "vulkan" {
                let apart = i.name == "bucket";
                i.vs_first = Some(crate::FuzzCross {
                    target: "cpu".into(),
                    status: if apart { Status::Fail } else { Status::Pass },
                    cases: 16,
                    max_diff: if apart { 0.25 } else { 0.0 },
                    seed: apart.then_some(99),
                    moved: apart.then(|| MovedElement {
                        output: "projected_audio".into(),
                        index: vec![0, 1, 2],
                        expected: 0.5,
                        actual: 0.75,
                        max_diff: 0.25,
                        differing: 3,
                    }),
                });
            }
            f.invariants.push(i);
        }
    }
    f.violations = one
        .violations
        .into_iter()
        .map(|mut v| {
            v.target = Some("vulkan".into());
            v
        })
        .collect();
    f.triangulation = crate::triangulate_fuzz(&f);
    f.status = f.derived_status();
    f
}
