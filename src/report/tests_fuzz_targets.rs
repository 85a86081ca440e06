//! Renderers of a fuzz run over several targets (`parity fuzz --target a,b`).

use super::test_support::{text, TERM};
use super::*;
use parity_record::samples_more::fuzz_targets;

#[test]
fn fuzz_over_several_targets_names_each_row_target_and_label() {
    insta::assert_snapshot!("terminal_fuzz_targets", text(&TERM, fuzz_targets()));
    let md = text(&Markdown::default(), fuzz_targets());
    assert!(
        md.contains("fuzz triangulation (cpu, vulkan):")
            && md.contains("  invariant pad_content: backend-specific (cpu pass; vulkan fail at seed 12345): vulkan violates it, cpu keeps it: the backend, not the port"),
        "{md}"
    );
    let junit = text(&Junit, fuzz_targets());
    assert!(
        junit.contains("name=\"pad_content @vulkan\"")
            && junit.contains("name=\"pad_content @cpu\""),
        "{junit}"
    );
    let html = text(&Html, fuzz_targets());
    assert!(
        html.contains("<h3>Triangulation (cpu, vulkan)</h3>")
            && html.contains("data-invariant=\"bucket @vulkan\"")
            && html.contains("<li data-label=\"undetermined\">invariant bucket: <b>undetermined</b> (cpu pass; vulkan pass, outputs apart from cpu)"),
        "{html}"
    );
    assert!(
        html.contains("--replay pad_content:12345 --target vulkan</code>"),
        "{html}"
    );
}
