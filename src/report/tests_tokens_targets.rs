//! Renderers of a tokens run over several targets (`parity tokens --target a,b`).

use super::test_support::{text, TERM};
use super::*;

#[test]
fn tokens_over_several_targets_name_each_case_target_and_label() {
    use parity_record::samples_tokens::tokens_targets;
    insta::assert_snapshot!("terminal_tokens_targets", text(&TERM, tokens_targets()));
    let md = text(&Markdown::default(), tokens_targets());
    assert!(
        md.contains("- **first divergent token** @cpu: case fault, step 1")
            && md.contains("\n  - case clean\\_a: backend-specific (cpu pass; vulkan fail at step 3 (token 7)): vulkan off, cpu matches the oracle's tokens: the backend, not the port"),
        "{md}"
    );
    let junit = text(&Junit, tokens_targets());
    assert!(
        junit.contains("name=\"clean_a @vulkan\"") && junit.contains("name=\"clean_a @cpu\""),
        "{junit}"
    );
    let html = text(&Html, tokens_targets());
    assert!(
        html.contains("<h2>Triangulation</h2>") && html.contains("<h2>Case clean_a @vulkan "),
        "{html}"
    );
    assert!(
        html.contains(
            "<li>case fault: port (cpu fail at step 1 (token 4); vulkan fail at step 1 (token 4))"
        ),
        "{html}"
    );
}
