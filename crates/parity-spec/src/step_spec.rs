//! A token step's localising chain as an ordinary spec: what `parity tokens`
//! runs when a step diverges. Above both the spec and its `tokens:` section.

use crate::model::Spec;
use crate::tokens::TokensSpec;

impl Spec {
    /// A spec that runs the step-stage chain of `case` at `step` as ordinary
    /// stages: the same subject, weights and oracle, one case (the step case)
    /// and the prefill (step 0) or decode chain as its stages. `None` when the
    /// spec has no `tokens:` section, the case is not a token case, the chain
    /// is empty, or the prompt length does not render.
    pub fn step_spec(&self, case: &str, step: usize) -> Option<Spec> {
        let tokens = self.tokens.as_ref()?;
        let case = tokens.case(case)?;
        let p = tokens.prompt_len(case).ok()?;
        let stages = if step == 0 {
            &tokens.prefill_stages
        } else {
            &tokens.decode_stages
        };
        if stages.is_empty() {
            return None;
        }
        let mut spec = self.clone();
        spec.cases = vec![TokensSpec::step_case(
            case,
            step,
            TokensSpec::position(p, step),
        )];
        spec.stages = stages.clone();
        spec.tokens = None;
        // Only the modules the chain calls (all when a module name is templated),
        // so localising a step compiles nothing else.
        if !stages.iter().any(|s| s.module.contains('{')) {
            spec.subject
                .modules
                .retain(|name, _| stages.iter().any(|s| &s.module == name));
        }
        Some(spec)
    }
}
