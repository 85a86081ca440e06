//! The one-request CLI mode (`parity-fixture-server run`), for parity's
//! command-template adapter: one request as JSON in (a file or stdin), JSON
//! lines out (`{"token", "logprob"}` ..., then `{"done", "reason"}`, or
//! `{"error"}` and a non-zero exit).

use crate::artifacts::Artifacts;
use crate::error::ServerError;
use crate::model::Model;
use parity::serve::adapters::wire::{CommandLine, WireRequest};
use std::io::Write;
use std::sync::Arc;

/// Runs `request` (JSON text) and writes its JSON lines to `out`; the error,
/// if any, is also returned (after its line was written).
pub fn run_one(
    art: Arc<Artifacts>,
    driver: &str,
    request: &str,
    out: &mut impl Write,
) -> Result<(), ServerError> {
    let result = (|| {
        let wire: WireRequest = serde_json::from_str(request).map_err(|e| {
            ServerError::Refused(format!("the request is not a completion request: {e}"))
        })?;
        let mut model = Model::load(art, driver, None)?;
        let plan = model.admit(&wire)?;
        let mut write_failed = None;
        let finish = model.run(&plan, &mut |token, logprob| {
            let line = CommandLine::Token { token, logprob };
            match writeln!(out, "{}", serde_json::to_string(&line).unwrap_or_default())
                .and_then(|_| out.flush())
            {
                Ok(()) => true,
                Err(e) => {
                    write_failed = Some(e);
                    false
                }
            }
        })?;
        if let Some(e) = write_failed {
            return Err(ServerError::Execution(format!("writing the output: {e}")));
        }
        let done = CommandLine::Done {
            done: true,
            reason: finish.reason().to_string(),
        };
        writeln!(out, "{}", serde_json::to_string(&done).unwrap_or_default())
            .map_err(|e| ServerError::Execution(format!("writing the output: {e}")))
    })();
    if let Err(e) = &result {
        let line = match e {
            ServerError::Refused(m) => CommandLine::Refused { refused: m.clone() },
            e => CommandLine::Error {
                error: e.to_string(),
            },
        };
        let _ = writeln!(out, "{}", serde_json::to_string(&line).unwrap_or_default());
    }
    result
}
