//! The trust check of a localised step (docs/tokens.md, "Localisation"): the
//! step's stage chain, run chained on the inputs the production call got,
//! must reproduce that call's logits bit for bit; otherwise the chain is a
//! different function and its first divergent layer is not decode's.

use serde::{Deserialize, Serialize};

/// Whether the step chain reproduces the production call it stands for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainCheck {
    /// The call the chain stands for: `prefill` or `decode`.
    pub call: String,
    /// The chain's final logits equal the call's, bit for bit.
    pub bit_identical: bool,
    /// max |chain logit − call logit|; null when the check could not run.
    #[serde(with = "crate::float::option")]
    pub max_abs: Option<f64>,
    /// The largest distance in ULPs of the logits' dtype; null when not measured.
    #[serde(default)]
    pub ulps: Option<u64>,
    /// What was compared, or why the check could not run.
    pub detail: String,
    /// Where each oracle input of the chain came from for the check
    /// (production's token, position, state, or the oracle's own tensor).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
}

impl ChainCheck {
    /// Whether the localisation may be presented as the answer.
    pub fn trusted(&self) -> bool {
        self.bit_identical
    }
}
