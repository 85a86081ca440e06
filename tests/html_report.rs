//! The HTML report in a real headless Chromium (Debian's `chromium`; the
//! test fails, it does not skip, when the browser is missing). Reports come
//! from real runs of examples/basic (passing, faulty with --bisect, and a
//! stage named `<script>alert(1)</script>`); screenshots are kept under
//! target/tmp/html-report/.

#[path = "common/browser.rs"]
mod browser;
mod common;

use browser::Browser;
use common::{basic_copy, check_to, parity};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const HOSTILE: &str = "<script>alert(1)</script>";

fn artifacts() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-report")
}

/// Table rows the page must have: one per stage output and mode (one for a
/// stage without outputs).
fn expected_rows(record: &Value) -> usize {
    record["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["outputs"].as_array().map_or(0, Vec::len).max(1))
        .sum()
}

/// Loads `html` and checks what every report must satisfy; returns the
/// browser and page for more checks.
fn load(html: &Path, record: &Value, shot: &str) -> (Browser, browser::Page) {
    let mut b = Browser::launch();
    let page = b.open(html);
    let rows = b.eval(
        &page,
        "document.querySelectorAll('table.results tbody tr.out').length",
    );
    assert_eq!(
        rows,
        json!(expected_rows(record)),
        "one row per stage output and mode"
    );
    // Nothing is fetched: every resource is inline.
    let external = b.eval(
        &page,
        "Array.from(document.querySelectorAll('[src],link[href]')).filter(e => \
         !(e.getAttribute('src') || e.getAttribute('href')).startsWith('data:')).length",
    );
    assert_eq!(external, json!(0), "no external resources");
    b.screenshot(&page, &artifacts().join(shot));
    let errors = b.errors(&page);
    assert!(
        errors.is_empty(),
        "console errors in {}: {errors:#?}",
        html.display()
    );
    (b, page)
}

/// The values of column `col` (1-based) as numbers, rows in page order.
fn column(b: &mut Browser, page: &browser::Page, col: usize) -> Vec<f64> {
    let v = b.eval(
        page,
        &format!(
            "Array.from(document.querySelectorAll('table.results tbody tr.out')).map(r => \
             r.cells[{}] ? r.cells[{}].getAttribute('data-v') : '')",
            col - 1,
            col - 1
        ),
    );
    v.as_array()
        .expect("array")
        .iter()
        .filter_map(|x| x.as_str()?.parse::<f64>().ok())
        .collect()
}

#[test]
fn failing_and_passing_runs_render_in_chromium_with_marker_sorting_and_no_errors() {
    let dir = basic_copy();
    let (fail_dir, pass_dir) = (dir.path().join("fail"), dir.path().join("pass"));
    let (code, stdout, stderr, fail) =
        check_to(dir.path(), "stages-faulty.yaml", &fail_dir, &["--bisect"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let fail = fail.expect("run.json");
    let default_html = fail_dir.join("report.html");
    assert!(
        default_html.is_file(),
        "parity check writes report.html by default"
    );
    assert!(
        fail_dir.join("bisect.html").is_file(),
        "bisect writes bisect.html"
    );

    // `parity report` renders the run and the bisect record together.
    let html = dir.path().join("combined.html");
    let out = parity(
        dir.path(),
        &[
            "report",
            fail_dir.join("run.json").to_str().unwrap(),
            fail_dir.join("bisect.json").to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "report exits with the records' code"
    );
    let (mut b, page) = load(&html, &fail, "faulty.png");
    let markers = b.eval(
        &page,
        "document.querySelectorAll('tr[data-first-divergence]').length",
    );
    assert_eq!(markers, json!(1), "exactly one first-divergence row");
    let marked = b.eval(
        &page,
        "(() => { const r = document.querySelector('tr[data-first-divergence]'); \
         return [r.cells[1].getAttribute('data-v'), r.cells[2].textContent, r.cells[4].textContent]; })()",
    );
    assert_eq!(marked, json!(["layer_norm", "normed", "isolated"]));
    let svg_marker = b.eval(
        &page,
        "Array.from(document.querySelectorAll('.chart svg text')).some(t => t.textContent.trim() === 'first divergence')",
    );
    assert_eq!(
        svg_marker,
        json!(true),
        "the depth chart marks the first divergence"
    );
    // The heatmap of the failing tensor, with the padded region shaded.
    let heat = b.eval(
        &page,
        "[document.querySelectorAll('svg.heat').length, \
          document.querySelectorAll('svg.heat rect[fill^=\"url(#pad\"]').length]",
    );
    assert!(heat[0].as_u64().unwrap() >= 1, "a heatmap: {heat}");
    assert!(
        heat[1].as_u64().unwrap() >= 1,
        "padded cells shaded: {heat}"
    );
    // The bisect section names the region and gives the reproducer's commands.
    let text = b.eval(&page, "document.body.innerText");
    let text = text.as_str().unwrap();
    assert!(
        text.contains("Region: 15 operations"),
        "bisect region shown"
    );
    assert!(text.contains("/run.sh"), "reproducer command shown");

    // Sorting: a real click on "max |err|" sorts ascending, a second descending.
    let before = column(&mut b, &page, 8);
    b.click(&page, "table.results th:nth-child(8)");
    let asc = column(&mut b, &page, 8);
    assert!(asc.windows(2).all(|w| w[0] <= w[1]), "ascending: {asc:?}");
    assert_ne!(before, asc, "the click reordered the rows");
    b.click(&page, "table.results th:nth-child(8)");
    let desc = column(&mut b, &page, 8);
    assert!(
        desc.windows(2).all(|w| w[0] >= w[1]),
        "descending: {desc:?}"
    );
    // Filtering by status hides the passing rows.
    b.eval(
        &page,
        "(() => { const s = document.querySelector('.filter-status'); s.value = 'fail'; \
         s.dispatchEvent(new Event('change')); })()",
    );
    let visible = b.eval(
        &page,
        "Array.from(document.querySelectorAll('table.results tbody tr')).filter(r => !r.hidden).map(r => r.dataset.status)",
    );
    assert_eq!(visible.as_array().unwrap().len(), 7, "{visible}");
    assert!(visible.as_array().unwrap().iter().all(|s| s == "fail"));
    let errors = b.errors(&page);
    assert!(
        errors.is_empty(),
        "console errors after interaction: {errors:#?}"
    );
    drop(b);
    node_data_of_the_faulty_bisect(dir.path(), &fail_dir);

    let (code, stdout, stderr, pass) = check_to(dir.path(), "stages.yaml", &pass_dir, &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (mut b, page) = load(
        &pass_dir.join("report.html"),
        &pass.expect("run.json"),
        "passing.png",
    );
    let markers = b.eval(
        &page,
        "document.querySelectorAll('[data-first-divergence]').length + \
         Array.from(document.querySelectorAll('svg text')).filter(t => t.textContent.trim() === 'first divergence').length",
    );
    assert_eq!(
        markers,
        json!(0),
        "no first-divergence marker on a passing run"
    );
    let verdict = b.eval(
        &page,
        "document.querySelector('.verdict .badge').textContent",
    );
    assert_eq!(verdict, json!("PASS"));
}

/// Model Explorer node data of the faulty layer_norm's bisect: keyed by the
/// explorer's node ids (every op numbered in program order, the two ops of
/// each `stablehlo.reduce` body included), valued by the shadow's ULPs.
fn node_data_of_the_faulty_bisect(cwd: &Path, fail_dir: &Path) {
    let bisect: Value =
        serde_json::from_str(&std::fs::read_to_string(fail_dir.join("bisect.json")).unwrap())
            .unwrap();
    // Ops #0-#3 constants, #4 reduce (+2 nested), #5-#8, #9 reduce (+2), #10-#18.
    let want: Vec<String> = (0..19usize)
        .map(|k| {
            (k + if k > 9 {
                4
            } else if k > 4 {
                2
            } else {
                0
            })
            .to_string()
        })
        .collect();
    assert_eq!(bisect["node_ids"], json!(want));
    let written = fail_dir.join("bisect.node-data.json");
    let data: Value = serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).unwrap();
    let graph = &data["layer_norm"];
    let results = graph["results"]
        .as_object()
        .expect("results keyed by node id");
    let shadow = bisect["shadow"].as_array().unwrap();
    assert_eq!(
        results.len(),
        shadow.len(),
        "one value per op of the region"
    );
    for row in shadow {
        let op = row["op_index"].as_u64().unwrap() as usize;
        let node = &results[&want[op]];
        assert_eq!(
            node["value"], row["accumulated_ulps"],
            "op #{op} -> node {}",
            want[op]
        );
    }
    assert!(
        !results.contains_key("0"),
        "constants outside the region carry no value"
    );
    assert_eq!(results["4"]["value"], shadow[0]["accumulated_ulps"]);
    assert!(graph["thresholds"].as_array().unwrap().len() >= 2);
    // `parity report --node-data` renders the same file from the record.
    let again = cwd.join("again.node-data.json");
    let out = parity(
        cwd,
        &[
            "report",
            fail_dir.join("bisect.json").to_str().unwrap(),
            "--node-data",
            again.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(&again).unwrap(),
        std::fs::read_to_string(&written).unwrap()
    );

    // Of the run record: the op producing each stage output (layer_norm's
    // result is its last op, #18 = node 22), valued by that output's worst
    // max ULP over cases and modes, red because it failed.
    let run_json = fail_dir.join("run.json");
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    let worst = run["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == "layer_norm")
        .map(|s| s["outputs"][0]["metrics"]["max_ulp"].as_u64().unwrap())
        .max()
        .unwrap();
    let path = cwd.join("run.node-data.json");
    let out = parity(
        cwd,
        &[
            "report",
            run_json.to_str().unwrap(),
            "--node-data",
            path.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let data: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let results = data["layer_norm"]["results"].as_object().unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results["22"]["value"], json!(worst as f64));
    assert_eq!(results["22"]["bgColor"], "#e53935");
}

#[test]
fn a_stage_named_like_a_script_stays_inert_text_in_html_attributes_json_and_svg() {
    let dir = basic_copy();
    let spec = std::fs::read_to_string(dir.path().join("stages-faulty.yaml")).unwrap();
    let quoted = format!("\"{HOSTILE}\"");
    let spec = spec
        .replace("- name: layer_norm", &format!("- name: {quoted}"))
        .replace(
            "stage: layer_norm.normed",
            &format!("stage: \"{HOSTILE}.normed\""),
        );
    std::fs::write(dir.path().join("hostile.yaml"), spec).unwrap();
    let out_dir = dir.path().join("out");
    let (code, stdout, stderr, record) = check_to(dir.path(), "hostile.yaml", &out_dir, &[]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let record = record.expect("run.json");
    assert_eq!(record["first_divergence"]["stage"], HOSTILE);
    let (mut b, page) = load(&out_dir.join("report.html"), &record, "hostile.png");
    assert!(
        b.dialogs(&page).is_empty(),
        "an alert opened: {:?}",
        b.dialogs(&page)
    );
    let scripts = b.eval(
        &page,
        "document.querySelectorAll('script:not([type])').length",
    );
    assert_eq!(scripts, json!(1), "only the page's own script");
    let checks = b.eval(
        &page,
        &format!(
            "(() => {{ const h = {h}; return {{
              text: document.body.innerText.includes(h),
              cell: document.querySelector('tr[data-first-divergence]').cells[1].getAttribute('data-v') === h,
              json: JSON.parse(document.querySelector('.parity-data').textContent).first_divergence.stage === h,
              svg: Array.from(document.querySelectorAll('.chart svg text')).some(t => t.textContent.trim().startsWith('<script>')),
              title: document.title.includes('hostile.yaml'),
            }}; }})()",
            h = serde_json::to_string(HOSTILE).unwrap()
        ),
    );
    assert_eq!(
        checks,
        json!({ "text": true, "cell": true, "json": true, "svg": true, "title": true }),
        "the name is shown as text in every context"
    );
}
