//! Scenario parsing: positioned errors, defaults, and no panic on any text.

use crate::{Cancel, RequestInput, Scenario, ScenarioSource, SERVING_CONTEXT};
use proptest::prelude::*;
use std::path::Path;

fn dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("stages.yaml"), "x").unwrap();
    std::fs::write(d.path().join("m.mlir"), "x").unwrap();
    d
}

fn parse(d: &Path, requests: &str) -> Result<Scenario, String> {
    let text =
        format!("version: 1\nspec: stages.yaml\nmodule: m.mlir\nslots: 2\nrequests:\n{requests}");
    Scenario::parse_str(&text, d.join("s-scenario.yaml")).map_err(|e| e.to_string())
}

#[test]
fn a_valid_scenario_has_its_defaults_and_requests() {
    let d = dir();
    let s = parse(
        d.path(),
        "  - {id: a, case: full128, max_new_tokens: 4, arrive: 0, cancel_at: 2}\n  - {id: b, all_padded: full128, max_new_tokens: 1, arrive: 3, cancel_after: 1}\n",
    )
    .unwrap();
    assert_eq!((s.slots, s.context, s.max_steps), (2, SERVING_CONTEXT, 512));
    assert_eq!(s.requests[0].input, RequestInput::Case("full128".into()));
    assert_eq!(s.requests[0].cancel, Some(Cancel::AtStep(2)));
    assert_eq!(
        s.requests[1].input,
        RequestInput::AllPadded("full128".into())
    );
    assert_eq!(s.requests[1].cancel, Some(Cancel::AfterTokens(1)));
    assert_eq!(
        (s.requests[1].location.line, s.requests[1].location.col),
        (7, 5)
    );
}

#[test]
fn bad_requests_are_refused_with_file_line_col_and_the_request() {
    let d = dir();
    for (req, want) in [
        ("  - {id: a, case: x, max_new_tokens: 0, arrive: 0}\n", "s-scenario.yaml:6:"),
        ("  - {id: a, case: x, max_new_tokens: 2, arrive: 3, cancel_at: 3}\n", "`cancel_at` 3 must be after `arrive` 3"),
        ("  - {id: a, case: x, all_padded: x, max_new_tokens: 2, arrive: 0}\n", "exactly one of `case`"),
        ("  - {id: a, case: x, max_new_tokens: 2, arrive: 0, colour: red}\n", "colour"),
        ("  - {id: a, case: x, max_new_tokens: 2, arrive: 0}\n  - {id: a, case: y, max_new_tokens: 2, arrive: 0}\n", "duplicate request id `a`"),
    ] {
        let e = parse(d.path(), req).unwrap_err();
        assert!(e.contains(want), "{req}: {e}");
        assert!(e.contains("s-scenario.yaml:"), "{e}");
    }
    let e = Scenario::parse_str(
        "version: 1\nspec: nope.yaml\nmodule: m.mlir\nslots: 2\nrequests: []\n",
        d.path().join("s.yaml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("s.yaml:2:7") && e.contains("nope.yaml") && e.contains("does not exist"),
        "{e}"
    );
}

#[test]
fn an_oracle_only_scenario_names_a_store_and_excludes_spec_and_module() {
    let d = dir();
    std::fs::create_dir(d.path().join("oracle")).unwrap();
    std::fs::write(d.path().join("tokenizer.json"), "{}").unwrap();
    let req = "requests:\n  - {id: a, case: short, max_new_tokens: 4, arrive: 0}\n";
    let s = Scenario::parse_str(
        &format!("version: 1\noracle: oracle\ntokenizer: tokenizer.json\nslots: 2\n{req}"),
        d.path().join("s.yaml"),
    )
    .unwrap();
    assert_eq!(s.source, ScenarioSource::Oracle(d.path().join("oracle")));
    assert_eq!(s.tokenizer, Some(d.path().join("tokenizer.json")));
    for (top, want) in [
        (
            "oracle: oracle\nspec: stages.yaml\n",
            "s.yaml:2:9: `oracle` (a black-box-only scenario) excludes `spec`, `module` and `vmfb`",
        ),
        ("oracle: stages.yaml\n", "s.yaml:2:9: `oracle`: directory"),
        (
            "oracle: oracle\ntokenizer: nope.json\n",
            "s.yaml:3:12: `tokenizer`: file",
        ),
        ("module: m.mlir\n", "`spec`"),
    ] {
        let e = Scenario::parse_str(
            &format!("version: 1\n{top}slots: 2\n{req}"),
            d.path().join("s.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(want), "{top}: {e}");
    }
}

#[test]
fn vmfb_names_a_prebuilt_serving_module_per_target_and_module_becomes_optional() {
    let d = dir();
    std::fs::write(d.path().join("s.cpu.vmfb"), "x").unwrap();
    std::fs::write(d.path().join("s.gpu.vmfb"), "x").unwrap();
    let req = "requests:\n  - {id: a, case: short, max_new_tokens: 4, arrive: 0}\n";
    let load = |top: &str| {
        Scenario::parse_str(
            &format!("version: 1\nspec: stages.yaml\n{top}slots: 2\n{req}"),
            d.path().join("s.yaml"),
        )
        .map_err(|e| e.to_string())
    };
    let s = load("vmfb:\n  cpu: s.cpu.vmfb\n  gpu: s.gpu.vmfb\n").unwrap();
    let ScenarioSource::Production {
        module, prebuilt, ..
    } = &s.source
    else {
        panic!("{:?}", s.source)
    };
    assert_eq!(module, &None);
    let names: Vec<&str> = prebuilt.keys().map(String::as_str).collect();
    assert_eq!(names, ["cpu", "gpu"]);
    assert_eq!(prebuilt["gpu"].path, d.path().join("s.gpu.vmfb"));
    assert_eq!(
        (prebuilt["gpu"].location.line, prebuilt["gpu"].location.col),
        (5, 3)
    );
    let s = load("module: m.mlir\nvmfb: {gpu: s.gpu.vmfb}\n").unwrap();
    let ScenarioSource::Production {
        module, prebuilt, ..
    } = &s.source
    else {
        panic!("{:?}", s.source)
    };
    assert_eq!(module.as_deref(), Some(d.path().join("m.mlir").as_path()));
    assert_eq!(prebuilt.len(), 1);
    for (top, want) in [
        ("vmfb: {gpu: nope.vmfb}\n", "s.yaml:3:13: `vmfb.gpu`: file"),
        ("vmfb: {}\n", "s.yaml:3:7: `vmfb:` is empty"),
        ("vmfb: [s.gpu.vmfb]\n", "s.yaml:3:7:"),
        ("", "`module`"),
    ] {
        let e = load(top).unwrap_err();
        assert!(e.contains(want), "{top}: {e}");
    }
}

proptest! {
    #[test]
    fn any_text_parses_or_errors_without_panicking(text in "\\PC{0,200}") {
        let _ = Scenario::parse_str(&text, Path::new("/nonexistent/s.yaml"));
    }
}
