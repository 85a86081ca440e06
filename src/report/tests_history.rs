//! The history renderers and the run page's overview and collapsed table,
//! on hand-built records.

use super::*;
use parity_record::{samples, AnyRecord, Band, HistoryRecord, Metric, SavedRun};

use super::test_support::{text, TERM};

/// `n` passing runs, one a day; `norm`'s errors scaled by `scale(i)`.
fn history(n: usize, scale: impl Fn(usize) -> f64) -> AnyRecord {
    let saved = (0..n)
        .map(|i| {
            let mut record = samples::passing_run();
            record.started = format!("2026-12-{:02}T09:00:00Z", i + 1);
            for s in record.stages.iter_mut().filter(|s| s.name == "norm") {
                for o in &mut s.outputs {
                    if let Some(m) = &mut o.metrics {
                        m.max_abs *= scale(i);
                        m.rms *= scale(i);
                    }
                    for c in &mut o.criteria {
                        c.observed *= scale(i);
                    }
                }
            }
            SavedRun {
                file: format!("history/{}.json", 100 + i),
                label: format!("{}", 100 + i),
                record,
            }
        })
        .collect();
    let h = HistoryRecord::build("history", saved, Band::default(), &Metric::DEFAULT).unwrap();
    AnyRecord::History(Box::new(h))
}

#[test]
fn history_text_shows_each_stage_per_run_and_flags_the_growth() {
    let grew_in_the_middle = history(3, |i| if i == 1 { 4.0 } else { 1.0 });
    insta::assert_snapshot!("terminal_history", text(&TERM, grew_in_the_middle.clone()));
    assert_eq!(
        grew_in_the_middle.exit_code(),
        parity_record::ExitCode::Pass
    );
    let md = text(&Markdown::default(), grew_in_the_middle);
    assert!(md.contains("| norm | 0.02 | **0.08 ↑** | 0.02 |"), "{md}");
    // Growth in the newest run fails it, and its JUnit case.
    let grew_last = history(3, |i| if i == 2 { 4.0 } else { 1.0 });
    assert_eq!(grew_last.exit_code(), parity_record::ExitCode::Fail);
    let t = text(&TERM, grew_last.clone());
    assert!(
        t.ends_with("HISTORY FAIL: 1 stage grew in the newest run (#3, 102): norm\n"),
        "{t}"
    );
    let junit = text(&Junit, grew_last);
    assert_eq!(junit.matches("<failure").count(), 1, "{junit}");
    assert!(
        junit.contains("error grew past the band: max_abs 2.000e-7 → 8.000e-7"),
        "{junit}"
    );
}

#[test]
fn history_tables_keep_the_newest_runs_and_the_page_draws_them_all() {
    let long = history(11, |i| 1.0 + i as f64);
    let t = text(&TERM, long.clone());
    assert!(
        t.contains("(the newest 8 runs; #1-#3 are left out here"),
        "{t}"
    );
    assert!(
        !t.contains("│ #3 ") && t.contains("#4 ") && t.contains("#11"),
        "{t}"
    );
    let html = text(&Html, long);
    // One point per run in each stage's chart (2 stages x 11 runs).
    assert_eq!(html.matches("<circle class=\"pt").count(), 22);
    assert_eq!(html.matches("<tr class=\"stage-history").count(), 2);
}

#[test]
fn the_run_page_opens_on_the_grid_and_groups_the_table_by_stage() {
    let html = text(&Html, samples::failing_run());
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("no {s}"));
    assert!(at("<table class=\"overview\"") < at("Error against pipeline depth"));
    assert!(at("Error against pipeline depth") < at("<table class=\"results"));
    // Stages embed, norm, proj, head; one case: one cell each.
    assert_eq!(html.matches("<td class=\"cell ").count(), 4);
    assert_eq!(html.matches(" data-first-divergence ").count(), 1);
    assert!(html.contains(
        "<td class=\"cell fail first\" data-case=\"b2\" data-status=\"fail\" data-ratio=\"inf\""
    ));
    // One summary row per stage, before its rows (embed x2, norm x2, proj, head).
    assert_eq!(html.matches("<tr class=\"stage-sum ").count(), 4);
    assert_eq!(html.matches("<tr class=\"out ").count(), 6);
    assert!(html.contains("data-first-stage"));
}
