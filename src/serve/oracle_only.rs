//! Scenarios with an oracle store alone (`oracle:`, no spec or module): a
//! model parity has no production modules for, checked only as a black box
//! (docs/serving-blackbox.md, "mlx_lm.server"). Admission is the context
//! rule alone (prompt + `max_new_tokens` must fit the scenario's context),
//! and the oracle of a case is `<case>/tokens` [N] with `<case>/logits` [N, V].

use super::admission::Prepared;
use super::error::ServeError;
use crate::run::inputs::InputError;
use crate::tokens::case::OracleCase;
use parity_spec::{Request, RequestInput, Scenario};
use parity_tensor::{OracleStore, Tensor};

fn tensor(store: &OracleStore, at: &str, name: &str) -> Result<Tensor, ServeError> {
    store
        .get(name)
        .map_err(|e| ServeError::from(InputError::from(e)).context(at))
}

fn bad(at: &str, message: String) -> ServeError {
    ServeError::Request {
        at: at.to_string(),
        message,
    }
}

/// Reads the request's prompt and decides admission by the context alone.
pub fn prepare(
    store: &OracleStore,
    scenario: &Scenario,
    r: &Request,
) -> Result<Prepared, ServeError> {
    let case = r.input.case();
    let at = format!(
        "{}:{}:{}: request `{}`",
        scenario.path.display(),
        r.location.line,
        r.location.col,
        r.id
    );
    if let RequestInput::AllPadded(_) = r.input {
        return Err(bad(
            &at,
            format!("`all_padded: {case}`: an oracle-only scenario has no clips"),
        ));
    }
    let prompt = tensor(store, &at, &format!("{case}/prompt"))?;
    let p = match prompt.shape() {
        [1, p] if !prompt.dtype().is_float() => *p as u64,
        s => {
            return Err(bad(
                &at,
                format!(
                    "oracle tensor `{case}/prompt` is {} {s:?}, expected integer token ids [1, P]",
                    prompt.dtype()
                ),
            ))
        }
    };
    let expanded = p + u64::from(r.max_new_tokens);
    let refusal = (expanded > scenario.context).then(|| {
        format!(
            "request `{}`: prompt {p} + max_new_tokens {} = {expanded} exceeds the context {}",
            r.id, r.max_new_tokens, scenario.context
        )
    });
    Ok(Prepared {
        id: r.id.clone(),
        prompt,
        prompt_len: p,
        audio_case: None,
        audio_tokens: 0,
        clips: 0,
        refusal,
    })
}

/// The oracle's greedy tokens and logits rows of `case` (no truth).
pub fn oracle_case(store: &OracleStore, case: &str, at: &str) -> Result<OracleCase, ServeError> {
    let tokens = tensor(store, at, &format!("{case}/tokens"))?;
    let logits = tensor(store, at, &format!("{case}/logits"))?;
    if tokens.dtype().is_float() || tokens.shape().len() != 1 {
        return Err(bad(
            at,
            format!(
                "oracle tensor `{case}/tokens` is {} {:?}, expected integer token ids [N]",
                tokens.dtype(),
                tokens.shape()
            ),
        ));
    }
    let n = tokens.numel();
    let v = match logits.shape() {
        [rows, v] if *rows == n && *v >= 2 && logits.dtype().is_float() => *v,
        s => {
            return Err(bad(
                at,
                format!(
                    "oracle tensor `{case}/logits` is {} {s:?}, expected floats [{n}, V] (one row per token of `{case}/tokens`)",
                    logits.dtype()
                ),
            ))
        }
    };
    let tokens: Vec<i64> = tokens.to_f64_vec().into_iter().map(|x| x as i64).collect();
    if let Some((k, t)) = tokens
        .iter()
        .enumerate()
        .find(|(_, &t)| t < 0 || t as usize >= v)
    {
        return Err(bad(
            at,
            format!("oracle token {k} of `{case}/tokens` is {t}, outside the {v} logits of `{case}/logits`"),
        ));
    }
    let rows = logits.to_f64_vec().chunks(v).map(<[f64]>::to_vec).collect();
    Ok(OracleCase {
        tokens,
        logits: rows,
        truth: None,
    })
}
