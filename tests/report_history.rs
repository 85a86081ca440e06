//! `parity report --history DIR` over run records made by real runs of
//! examples/basic: `stages.yaml` with the correct module, then the same spec
//! path with the faulty module (its errors grow), then the correct module
//! again. The page is checked in a real headless Chromium (Debian's
//! `chromium`; the test fails, it does not skip, when the browser is
//! missing); screenshots are kept under target/tmp/report-history/.

#[path = "common/browser.rs"]
mod browser;
mod common;

use browser::Browser;
use common::{basic_copy, check_to, parity};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn artifacts() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-history")
}

/// Runs `parity check stages.yaml` in `dir` with the module `module` and
/// saves its run.json as `hist/<name>.json`.
fn save_run(dir: &Path, module: &str, name: &str) -> i32 {
    let spec = std::fs::read_to_string(dir.join("stages-faulty.yaml")).unwrap();
    let spec = spec.replace("{mlir: model_faulty.mlir}", &format!("{{mlir: {module}}}"));
    std::fs::write(dir.join("stages.yaml"), spec).unwrap();
    let out = dir.join("runs").join(name);
    let (code, stdout, stderr, _) = check_to(dir, "stages.yaml", &out, &["-q"]);
    assert!(code == 0 || code == 1, "{stdout}\n{stderr}");
    std::fs::create_dir_all(dir.join("hist")).unwrap();
    std::fs::copy(
        out.join("run.json"),
        dir.join("hist").join(format!("{name}.json")),
    )
    .unwrap();
    code
}

fn history(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = parity(cwd, args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn three_saved_runs_one_of_which_grew_are_drawn_and_flagged() {
    let dir = basic_copy();
    let d = dir.path();
    assert_eq!(save_run(d, "model.mlir", "1"), 0);
    assert_eq!(save_run(d, "model_faulty.mlir", "2"), 1);
    assert_eq!(save_run(d, "model.mlir", "3"), 0);

    let (code, stdout, stderr) = history(
        d,
        &[
            "report",
            "--history",
            "hist",
            "--html",
            "h.html",
            "--json",
            "h.json",
            "--markdown",
            "h.md",
        ],
    );
    // The newest run is back at the first one's level: the growth is flagged, not failed.
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("HISTORY PASS: no stage's error grew in the newest run (#3, 3); 6 earlier growths flagged"),
        "{stdout}"
    );
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("h.json")).unwrap()).unwrap();
    assert_eq!(record["schema"], "parity.history/1");
    let labels: Vec<_> = record["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].clone())
        .collect();
    assert_eq!(labels, [json!("1"), json!("2"), json!("3")]);
    let stages = record["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 6);
    for s in stages {
        let runs: Vec<_> = s["growth"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["run"].clone())
            .collect();
        assert_eq!(
            runs,
            [json!(1)],
            "{}: grew in the faulty run only",
            s["stage"]
        );
    }
    let md = std::fs::read_to_string(d.join("h.md")).unwrap();
    assert!(
        md.contains("| layer\\_norm | 0.31 | **194224 ↑** | 0.31 |"),
        "{md}"
    );

    // The page: one chart per stage, one point per run, the growth ringed at run 2.
    let mut b = Browser::launch();
    let page = b.open(&d.join("h.html"));
    b.screenshot(&page, &artifacts().join("history.png"));
    let rows = b.eval(
        &page,
        "Array.from(document.querySelectorAll('tr.stage-history')).map(tr => [tr.dataset.stage, \
         tr.querySelectorAll('svg.spark circle.pt').length, \
         Array.from(tr.querySelectorAll('circle.grew')).map(c => Number(c.dataset.run)), \
         Array.from(tr.querySelectorAll('circle.pt')).map(c => Number(c.dataset.ratio))])",
    );
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 6, "one row per stage");
    for (row, s) in rows.iter().zip(stages) {
        assert_eq!(row[0], s["stage"]);
        assert_eq!(row[1], json!(3), "a point per run: {row}");
        assert_eq!(row[2], json!([1]), "the growth is on run 2: {row}");
        let want: Vec<f64> = s["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| match &p["ratio"] {
                Value::String(t) if t == "inf" => f64::MAX,
                r => r.as_f64().unwrap(),
            })
            .collect();
        let got: Vec<f64> = row[3]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap_or(f64::MAX))
            .collect();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-9 * w.abs()
                    || (*w == f64::MAX && (*g == f64::MAX || g.is_infinite())),
                "{g} vs {w}"
            );
        }
        // The growth run is above the limit, the others below it.
        assert!(want[1] > 1.0 && want[0] < 1.0 && want[2] < 1.0, "{want:?}");
    }
    let title = b.eval(
        &page,
        "document.querySelector('tr.stage-history circle.grew title').textContent",
    );
    assert!(
        title.as_str().unwrap().starts_with(
            "#2 (2): 194224 x limit, max_ulp of normed (default, isolated), fail; grew: "
        ),
        "{title}"
    );
    let errors = b.errors(&page);
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    drop(b);

    // Without the third run, the newest run grew: exit 1, one failing JUnit case per stage.
    std::fs::create_dir(d.join("two")).unwrap();
    for n in ["1", "2"] {
        std::fs::copy(
            d.join(format!("hist/{n}.json")),
            d.join(format!("two/{n}.json")),
        )
        .unwrap();
    }
    let (code, stdout, _) = history(d, &["report", "--history", "two", "--junit", "two.xml"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains(
            "HISTORY FAIL: 6 stages grew in the newest run (#2, 2): layer_norm, strided_conv"
        ),
        "{stdout}"
    );
    let junit = std::fs::read_to_string(d.join("two.xml")).unwrap();
    assert_eq!(junit.matches("<failure").count(), 6, "{junit}");

    // The saved history re-renders with its own exit code, byte for byte.
    let (code, _, stderr) = history(d, &["report", "h.json", "--json", "again.json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(d.join("again.json")).unwrap(),
        std::fs::read_to_string(d.join("h.json")).unwrap()
    );
    // `--html -`: the page on stdout, in place of the text.
    let (code, stdout, _) = history(d, &["report", "--history", "hist", "--html", "-"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("<!DOCTYPE html>") && !stdout.contains('┌'));
    // The saved history as a page has the same history section as the
    // directory's page (it was an empty page before the records were sorted
    // by kind in the report layer).
    let (code, saved, _) = history(d, &["report", "h.json", "--html", "-"]);
    assert_eq!(code, 0);
    let section = |page: &str| page.matches("class=\"history").count();
    assert!(section(&stdout) > 0, "{stdout}");
    assert_eq!(section(&saved), section(&stdout), "{saved}");

    bad_directories(d);
}

/// An empty directory, a record of another kind, a damaged file and a run of
/// another spec.
fn bad_directories(d: &Path) {
    std::fs::create_dir(d.join("empty")).unwrap();
    let (code, _, stderr) = history(d, &["report", "--history", "empty"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--history empty: no run records in the directory"),
        "{stderr}"
    );

    let (code, _, stderr) = history(d, &["report", "--history", "missing"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--history missing: cannot read the directory"),
        "{stderr}"
    );

    // A baseline record saved among the runs: refused, by name.
    let (code, _, stderr) = history(
        d,
        &[
            "report",
            "hist/3.json",
            "--baseline",
            "hist/1.json",
            "--baseline-json",
            "base.json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    std::fs::copy(d.join("base.json"), d.join("hist/base.json")).unwrap();
    let (code, _, stderr) = history(d, &["report", "--history", "hist"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("hist/base.json: a parity.baseline/1 record, not a run record"),
        "{stderr}"
    );
    std::fs::write(
        d.join("hist/base.json"),
        "{\"schema\": \"parity.run-record/2\"",
    )
    .unwrap();
    let (code, _, stderr) = history(d, &["report", "--history", "hist"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("hist/base.json: not a readable parity record"),
        "{stderr}"
    );
    std::fs::remove_file(d.join("hist/base.json")).unwrap();

    // A run of another spec (the first run's record, its spec renamed) is
    // skipped, with a message; the history goes on.
    let first = std::fs::read_to_string(d.join("hist/1.json")).unwrap();
    let other = first.replacen("\"spec\": \"stages.yaml\"", "\"spec\": \"other.yaml\"", 1);
    assert_ne!(first, other);
    std::fs::write(d.join("hist/0-other.json"), other).unwrap();
    let (code, stdout, stderr) = history(d, &["report", "--history", "hist", "--json", "h2.json"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("parity: warning: --history: skipped hist/0-other.json: a run of other.yaml, not of stages.yaml"),
        "{stderr}"
    );
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("h2.json")).unwrap()).unwrap();
    assert_eq!(record["runs"].as_array().unwrap().len(), 3);
}
