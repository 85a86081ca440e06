//! The trust check of a localisation: the step's stage chain, run in chained
//! mode on the very inputs the production call got at that step (its token,
//! position and state), must reproduce the call's logits bit for bit. A chain
//! that does not is another function (a separate export, an input the call
//! computes itself), so its first divergent layer is not the call's.

use super::chain_inputs::match_input;
use super::error::{LogitsProblem, TokensError};
use super::session::{Session, StepInputs};
use crate::run::{self, RunOptions};
use parity_record::{ChainCheck, Mode, Status};
use parity_spec::{Arg, Case, Spec, TokenArg, TokensSpec};
use parity_tensor::{OracleStore, Tensor, MANIFEST_SCHEMA};
use std::collections::BTreeMap;
use std::path::Path;

/// What the production call of one step got and gave, replayed.
pub struct ProductionStep {
    /// `prefill` or `decode`.
    pub which: &'static str,
    /// The step.
    pub step: usize,
    /// Its arguments other than weights, with what the spec says they are.
    pub args: Vec<(TokenArg, Tensor)>,
    /// Its logits output, as returned.
    pub logits: Tensor,
}

/// Replays prefill and decode steps 1..=`step` of `case`, feeding `fed[s-1]`
/// at step s (the tokens the localised mode fed), and keeps the last call's
/// arguments and logits. The production is deterministic (checked by the
/// greedy/teacher-forced cross-check), so this is the call the run made.
pub fn replay(
    session: &Session<'_>,
    case: &Case,
    step: usize,
    fed: &[i64],
) -> Result<ProductionStep, TokensError> {
    let t = session.tokens;
    let p = t.prompt_len(case).map_err(TokensError::Template)?;
    let keep = |which: &'static str, call, inputs: Option<&StepInputs<'_>>| {
        let (args, outputs) = session.call_keeping_args(which, call, case, inputs)?;
        let kinds = session.spec_args(which, call, case).unwrap_or_default();
        let args = kinds
            .iter()
            .cloned()
            .zip(args)
            .filter(|(k, _)| !matches!(k, TokenArg::Input(Arg::Weight(_))))
            .collect();
        Ok::<_, TokensError>((args, outputs))
    };
    let (mut args, mut outputs) = keep("prefill", &t.prefill, None)?;
    for s in 1..=step {
        let token = fed.get(s - 1).copied().unwrap_or(0);
        let inputs = StepInputs {
            token,
            position: TokensSpec::position(p, s),
            state: &outputs,
        };
        if s == step {
            (args, outputs) = keep("decode", &t.decode, Some(&inputs))?;
        } else {
            outputs = session.call("decode", &t.decode, case, Some(&inputs))?;
        }
    }
    let logits = outputs
        .remove(&t.logits)
        .ok_or_else(|| TokensError::Logits {
            what: format!("case `{}`, step {step} (replayed)", case.name),
            problem: LogitsProblem::Missing {
                output: t.logits.clone(),
            },
        })?;
    Ok(ProductionStep {
        which: if step == 0 { "prefill" } else { "decode" },
        step,
        args,
        logits,
    })
}

/// The trust check of a finding at (`case`, `step`) whose production call
/// was replayed as `production`; None when the spec has no chain for the step.
pub fn check_finding(
    spec: &Spec,
    options: &RunOptions,
    case: &str,
    step: usize,
    production: Result<ProductionStep, String>,
) -> Option<ChainCheck> {
    let step_spec = spec.step_spec(case, step)?;
    let tokens = spec.tokens.as_ref()?;
    let token_case = tokens.case(case)?;
    Some(match production {
        Ok(p) => check(&step_spec, token_case, &tokens.logits, options, &p),
        Err(why) => ChainCheck {
            call: if step == 0 { "prefill" } else { "decode" }.to_string(),
            bit_identical: false,
            max_abs: None,
            ulps: None,
            detail: format!("the production call could not be replayed: {why}"),
            inputs: Vec::new(),
        },
    })
}

/// Runs the chain of `step_spec` chained on `production`'s inputs and
/// compares its final logits with the call's.
pub fn check(
    step_spec: &Spec,
    token_case: &Case,
    logits_name: &str,
    options: &RunOptions,
    production: &ProductionStep,
) -> ChainCheck {
    let mut result = ChainCheck {
        call: production.which.to_string(),
        bit_identical: false,
        max_abs: None,
        ulps: None,
        detail: String::new(),
        inputs: Vec::new(),
    };
    match run_check(
        step_spec,
        token_case,
        logits_name,
        options,
        production,
        &mut result,
    ) {
        Ok(()) => {}
        Err(why) => result.detail = why,
    }
    result
}

fn run_check(
    step_spec: &Spec,
    token_case: &Case,
    logits_name: &str,
    options: &RunOptions,
    production: &ProductionStep,
    result: &mut ChainCheck,
) -> Result<(), String> {
    let step_case = step_spec.cases.first().ok_or("the step spec has no case")?;
    let stages = step_spec
        .instantiate(step_case)
        .map_err(|e| e.to_string())?;
    let order = step_spec.topo_order();
    // The chain's logits: the last stage (in execution order) with an output
    // named like the call's logits, else the last stage's first output.
    let (stage_i, out_i) = order
        .iter()
        .rev()
        .find_map(|&i| {
            let o = stages[i]
                .outputs
                .iter()
                .position(|o| o.name == logits_name)?;
            Some((i, o))
        })
        .or_else(|| order.last().map(|&i| (i, 0)))
        .ok_or("the chain has no stages")?;
    let final_stage = &stages[stage_i];
    let final_out = final_stage
        .outputs
        .get(out_i)
        .ok_or("the chain's last stage has no outputs")?;
    let store = OracleStore::open(&step_spec.oracle).map_err(|e| e.to_string())?;
    let mut overrides: BTreeMap<String, Tensor> = BTreeMap::new();
    for name in chain_oracle_inputs(&stages) {
        let oracle = store.get(&name).map_err(|e| e.to_string())?;
        let (line, value) = match_input(&name, &oracle, token_case, production);
        result.inputs.push(line);
        if let Some(v) = value {
            overrides.insert(name, v);
        }
    }
    // The call's logits stand in for the final output's oracle, so the
    // chained run's metrics of that output are chain against call.
    overrides.insert(final_out.oracle.clone(), production.logits.clone());
    let dir = tempfile::Builder::new()
        .prefix("parity-chain-check")
        .tempdir()
        .map_err(|e| format!("cannot create a scratch oracle store: {e}"))?;
    write_store(dir.path(), &store, &overrides)?;
    let mut spec = step_spec.clone();
    spec.oracle = dir.path().to_path_buf();
    let run_options = RunOptions {
        modes: vec![Mode::Chained],
        cases: Vec::new(),
        stages: Vec::new(),
        ..options.clone()
    };
    let record = run::execute(&spec, &run_options, &mut |_| {});
    let stage = record
        .stages
        .iter()
        .find(|s| s.name == final_stage.name && s.mode == Mode::Chained)
        .ok_or_else(|| {
            let why: Vec<String> = record.errors.iter().map(|e| e.message.clone()).collect();
            format!("the chain did not run: {}", why.join("; "))
        })?;
    if let Some(e) = &stage.error {
        return Err(format!("stage `{}` errored: {}", stage.name, e.message));
    }
    if stage.status == Status::Skipped {
        return Err(format!(
            "stage `{}` was skipped: {}",
            stage.name,
            stage
                .skipped_because
                .as_deref()
                .unwrap_or("an upstream stage failed")
        ));
    }
    let out = stage
        .outputs
        .iter()
        .find(|o| o.name == final_out.name)
        .ok_or_else(|| format!("stage `{}` has no output `{}`", stage.name, final_out.name))?;
    if let Some(e) = &out.error {
        return Err(format!("`{}.{}`: {}", stage.name, out.name, e.message));
    }
    let m = out
        .metrics
        .as_ref()
        .ok_or_else(|| format!("`{}.{}` was not compared", stage.name, out.name))?;
    result.max_abs = Some(m.max_abs);
    result.ulps = m.max_ulp;
    result.bit_identical =
        m.max_abs == 0.0 && m.max_ulp.is_none_or(|u| u == 0) && m.nan_mismatch == 0;
    result.detail = format!(
        "the chain's `{}.{}`, run chained on {}'s own inputs of step {}, against {}'s logits",
        stage.name, out.name, production.which, production.step, production.which
    );
    Ok(())
}

/// Every oracle tensor the chain's stages read as an argument, in order.
fn chain_oracle_inputs(stages: &[parity_spec::Stage]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let bound = stages.iter().flat_map(|s| {
        s.bind
            .iter()
            .flat_map(|b| b.rules.iter().map(|r| &r.source))
    });
    for arg in stages.iter().flat_map(|s| s.args.iter()).chain(bound) {
        if let Arg::Oracle(name) = arg {
            // A pattern rule's `$1` names no one tensor.
            if !name.contains('$') && !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

/// A store at `dir` listing every tensor of `store` (by absolute path, nothing
/// copied) except `overrides`, written there as `.npy`.
fn write_store(
    dir: &Path,
    store: &OracleStore,
    overrides: &BTreeMap<String, Tensor>,
) -> Result<(), String> {
    let mut tensors = serde_json::Map::new();
    for name in store.names() {
        if overrides.contains_key(name) {
            continue;
        }
        let Some(e) = store.entry(name) else { continue };
        let path = store.dir().join(&e.file);
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        let mut entry = serde_json::json!({
            "file": path,
            "dtype": e.dtype.name(),
            "shape": e.shape,
        });
        if let Some(key) = &e.key {
            entry["key"] = serde_json::Value::String(key.clone());
        }
        tensors.insert(name.clone(), entry);
    }
    for (i, (name, t)) in overrides.iter().enumerate() {
        let file = format!("production_{i}.npy");
        parity_tensor::write_npy(dir.join(&file), t).map_err(|e| e.to_string())?;
        tensors.insert(
            name.clone(),
            serde_json::json!({"file": file, "dtype": t.dtype().name(), "shape": t.shape()}),
        );
    }
    let manifest = serde_json::json!({"schema": MANIFEST_SCHEMA, "tensors": tensors});
    let text = serde_json::to_vec_pretty(&manifest).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("manifest.json"), text)
        .map_err(|e| format!("cannot write the scratch oracle store: {e}"))
}
