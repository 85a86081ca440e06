//! The HTML report's overview grid and its collapsed table, in a real
//! headless Chromium (Debian's `chromium`; the test fails, it does not
//! skip, when the browser is missing). Reports come from real runs of
//! examples/basic with two cases (`first`, `second`: the same oracle
//! tensors, so the same numbers) of the correct and the faulty module.
//! Screenshots are kept under target/tmp/html-overview/.

#[path = "common/browser.rs"]
mod browser;
mod common;

use browser::{Browser, Page};
use common::{basic_copy, check_to};
use parity_record::RunRecord;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn artifacts() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-overview")
}

/// `spec` of examples/basic with two cases, run into `out`; (exit code, record).
fn run_two_cases(dir: &Path, spec: &str, out: &str) -> (i32, RunRecord) {
    let text = std::fs::read_to_string(dir.join(spec)).unwrap();
    let text = text.replacen(
        "\nstages:\n",
        "\ncases:\n  - {name: first}\n  - {name: second}\nstages:\n",
        1,
    );
    let two = format!("two-{spec}");
    std::fs::write(dir.join(&two), text).unwrap();
    let (code, stdout, stderr, _) = check_to(dir, &two, &dir.join(out), &[]);
    let json = std::fs::read_to_string(dir.join(out).join("run.json"))
        .unwrap_or_else(|e| panic!("{e}\n{stdout}\n{stderr}"));
    (code, serde_json::from_str(&json).expect("a run record"))
}

/// The worst headroom ratio of `stage` in `case` over its outputs and
/// modes, from the record (what the cell must show).
fn worst(record: &RunRecord, stage: &str, case: &str) -> f64 {
    record
        .stages
        .iter()
        .filter(|s| s.name == stage && s.case == case)
        .flat_map(|s| &s.outputs)
        .flat_map(|o| &o.criteria)
        .map(|c| c.ratio())
        .fold(0.0, f64::max)
}

/// Every grid cell: [stage, case, data-ratio, computed hue + lightness, title, text].
fn cells(b: &mut Browser, page: &Page) -> Vec<Value> {
    let v = b.eval(
        page,
        "Array.from(document.querySelectorAll('table.overview tbody tr')).flatMap(tr => \
         Array.from(tr.querySelectorAll('td')).map(td => { \
           const [r, g, bl] = getComputedStyle(td).backgroundColor.match(/\\d+(\\.\\d+)?/g).map(Number).map(x => x / 255); \
           const max = Math.max(r, g, bl), min = Math.min(r, g, bl), l = (max + min) / 2, d = max - min; \
           let h = 0; \
           if (d > 0) { h = max === r ? ((g - bl) / d) % 6 : max === g ? (bl - r) / d + 2 : (r - g) / d + 4; h *= 60; if (h < 0) h += 360; } \
           return [tr.dataset.stage, td.dataset.case, td.dataset.ratio, h + l * 100, td.title, td.textContent]; }))",
    );
    v.as_array().expect("cells").clone()
}

fn load(html: &Path, shot: &str) -> (Browser, Page) {
    let mut b = Browser::launch();
    let page = b.open(html);
    b.screenshot(&page, &artifacts().join(shot));
    let errors = b.errors(&page);
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    (b, page)
}

#[test]
fn the_overview_grid_has_a_cell_per_stage_and_case_marks_the_first_divergence_and_colours_by_ratio()
{
    let dir = basic_copy();
    let (code, fail) = run_two_cases(dir.path(), "stages-faulty.yaml", "fail");
    assert_eq!(code, 1);
    let (code, pass) = run_two_cases(dir.path(), "stages.yaml", "pass");
    assert_eq!(code, 0);
    let stages = [
        "layer_norm",
        "strided_conv",
        "scores",
        "masked_softmax",
        "attend",
        "proj_bf16",
    ];
    let mut all = Vec::new();
    for (record, out) in [(&fail, "fail"), (&pass, "pass")] {
        let (mut b, page) = load(
            &dir.path().join(out).join("report.html"),
            &format!("{out}.png"),
        );
        // Overview first, then error against depth, then the table.
        let order = b.eval(
            &page,
            "Array.from(document.querySelectorAll('section.run h2')).map(h => h.textContent).slice(0, 3)",
        );
        assert_eq!(
            order,
            json!([
                "Overview: headroom by stage and case",
                "Error against pipeline depth",
                "Every stage output and mode"
            ])
        );
        let heads = b.eval(
            &page,
            "Array.from(document.querySelectorAll('table.overview thead th')).map(t => t.textContent)",
        );
        assert_eq!(heads, json!(["stage", "first", "second"]));
        let cells = cells(&mut b, &page);
        assert_eq!(cells.len(), stages.len() * 2, "one cell per stage and case");
        for (k, c) in cells.iter().enumerate() {
            let (stage, case) = (stages[k / 2], ["first", "second"][k % 2]);
            assert_eq!(
                (c[0].as_str(), c[1].as_str()),
                (Some(stage), Some(case)),
                "{c}"
            );
            let shown: f64 = c[2]
                .as_str()
                .and_then(|r| {
                    if r == "inf" {
                        Some(f64::INFINITY)
                    } else {
                        r.parse().ok()
                    }
                })
                .unwrap_or_else(|| panic!("{c}"));
            let want = worst(record, stage, case);
            assert!(
                shown == want || (shown - want).abs() <= 1e-12 * want,
                "{stage}/{case}: {shown} != {want}"
            );
            // The value on hover.
            let title = c[4].as_str().unwrap();
            assert!(
                title.contains(&format!("{stage} in case {case}")),
                "{title}"
            );
            assert!(title.contains("x limit"), "{title}");
            all.push((shown, c[3].as_f64().unwrap(), stage));
        }
        let marked = b.eval(
            &page,
            "Array.from(document.querySelectorAll('table.overview td[data-first-divergence]')).map(td => \
             [td.closest('tr').dataset.stage, td.dataset.case, td.textContent.startsWith('\u{2691}')])",
        );
        if out == "fail" {
            assert_eq!(marked, json!([["layer_norm", "first", true]]));
        } else {
            assert_eq!(marked, json!([]));
        }
        collapsed_table(&mut b, &page, record);
    }
    // The colours order by ratio: hue + lightness falls as the ratio grows
    // (green, amber, red, darker red), over the passing and failing cells.
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    for w in all.windows(2) {
        assert!(
            w[0].1 >= w[1].1 - 0.6,
            "{} (ratio {}) is coloured worse than {} (ratio {}): {} < {}",
            w[0].2,
            w[0].0,
            w[1].2,
            w[1].0,
            w[0].1,
            w[1].1
        );
    }
    let (low, high) = (all.first().unwrap(), all.last().unwrap());
    assert!(low.0 < 1e-6 && high.0 > 1.0, "{low:?} {high:?}");
    assert!(
        low.1 > high.1 + 100.0,
        "far apart in colour: {low:?} {high:?}"
    );
}

/// The table: one row per stage until a stage is expanded; a filter or a
/// sort shows every matching row; "one row per stage" puts it back.
fn collapsed_table(b: &mut Browser, page: &Page, record: &RunRecord) {
    let visible = |b: &mut Browser, sel: &str| {
        b.eval(
            page,
            &format!(
                "Array.from(document.querySelectorAll('table.results tbody {sel}')).filter(r => !r.hidden).length"
            ),
        )
    };
    let rows: usize = record.stages.iter().map(|s| s.outputs.len().max(1)).sum();
    assert_eq!(visible(b, "tr.stage-sum"), json!(6));
    assert_eq!(visible(b, "tr.out"), json!(0), "collapsed on load");
    // masked_softmax has two outputs: 2 x 2 cases x 2 modes rows.
    b.click(page, "tr.stage-sum[data-group='3'] button.toggle");
    let shown = b.eval(
        page,
        "Array.from(document.querySelectorAll('table.results tbody tr.out')).filter(r => !r.hidden).map(r => r.cells[1].dataset.v)",
    );
    assert_eq!(shown, json!(vec!["masked_softmax"; 8]));
    b.click(page, "tr.stage-sum[data-group='3'] td:nth-child(3)");
    assert_eq!(
        visible(b, "tr.out"),
        json!(0),
        "a second click collapses it"
    );
    // A filter shows the matching rows, as one flat list.
    b.eval(
        page,
        "(() => { const t = document.querySelector('.filter-text'); t.value = 'chained'; \
         t.dispatchEvent(new Event('input')); })()",
    );
    assert_eq!(visible(b, "tr.stage-sum"), json!(0));
    assert_eq!(visible(b, "tr.out"), json!(rows / 2));
    b.click(page, "button.regroup");
    assert_eq!(visible(b, "tr.stage-sum"), json!(6));
    assert_eq!(visible(b, "tr.out"), json!(0));
    // A sort flattens too; every row shows, sorted.
    b.click(page, "table.results th:nth-child(8)");
    assert_eq!(visible(b, "tr.out"), json!(rows));
    assert_eq!(visible(b, "tr.stage-sum"), json!(0));
    b.click(page, "button.regroup");
    let first = b.eval(
        page,
        "document.querySelector('table.results tbody tr').classList.contains('stage-sum')",
    );
    assert_eq!(first, json!(true), "the stage order is back");
    b.click(page, "button.expand-all");
    assert_eq!(visible(b, "tr.out"), json!(rows));
    let errors = b.errors(page);
    assert!(
        errors.is_empty(),
        "console errors after interaction: {errors:#?}"
    );
}
