//! The prompt length against the prompt itself, before anything runs: a
//! `prompt_length` past the prompt makes decode read positions the prefill
//! never wrote (issue 28: `prompt_length: "30"` for a 4-token prompt decoded
//! 14 wrong tokens out of 16 and still passed as near ties).

use super::error::TokensError;
use super::session::Session;
use parity_spec::{Arg, Case, DType, TokenArg, TokensSpec};

/// Checks `p` against the prompt: the first integer-typed oracle argument of
/// `prefill`, whose last axis holds the prompt's tokens (a padded prompt may
/// be longer than P, never shorter). An input error names the spec position
/// of `prompt_length`, the case and the prompt's length. A prompt that cannot
/// be loaded is left to the prefill call, which names it.
pub(crate) fn check(session: &Session<'_>, case: &Case, p: usize) -> Result<(), TokensError> {
    let Some(args) = session.spec_args("prefill", &session.tokens.prefill, case) else {
        return Ok(());
    };
    for (i, arg) in args.iter().enumerate() {
        let TokenArg::Input(Arg::Oracle(name)) = arg else {
            continue;
        };
        let Ok(name) = TokensSpec::render(name, case) else {
            continue;
        };
        let Ok(tensor) = session.sources.oracle(&name) else {
            continue;
        };
        if tensor.dtype().is_float() || tensor.dtype() == DType::Bool {
            continue;
        }
        let tokens = tensor.shape().last().copied().unwrap_or(1);
        if p > tokens {
            let at = session.tokens.prompt_length_location;
            return Err(TokensError::Template(format!(
                "{}:{}:{}: `prompt_length` of case `{}` is {p}, longer than its prompt \
                 `{name}` (prefill argument {i}, shape {:?}: {tokens} tokens); at most \
                 {tokens} fit",
                session.spec.path.display(),
                at.line,
                at.col,
                case.name,
                tensor.shape(),
            )));
        }
        return Ok(());
    }
    Ok(())
}
