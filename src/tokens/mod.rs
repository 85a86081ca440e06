//! `parity tokens`: a token-level run of a language model through IREE
//! against the oracle's tokens and logits (docs/tokens.md). Greedy mode
//! decodes with the production's own tokens; teacher-forced mode feeds the
//! oracle's and compares every step's logits. At the first mismatch the
//! evidence decides `near_tie` or `divergent`, and the step's stage chain
//! localises it to a layer and, through bisect, an operation. Nothing here
//! renders output; see `report`.

pub(crate) mod bind;
pub(crate) mod case;
mod case_compare;
mod chain;
mod chain_inputs;
pub mod error;
pub(crate) mod judge;
mod localise;
pub mod math;
pub mod noise;
mod prepare;
mod prompt;
pub(crate) mod session;
mod targets;
#[cfg(test)]
mod tests;

pub use error::TokensError;
pub use targets::execute_targets;

use crate::bisect::BisectOptions;
use crate::run;
use case::{decode_loop, OracleCase};
use case_compare::compare_case;
use parity_record::{
    ErrorRecord, Status, TokenMode, TokenVerdict, TokensRecord, VerdictRule, WrongSide,
};
use parity_spec::Spec;
use prepare::Prepared;
use session::Session;
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct TokensOptions {
    /// Modes, in order (default: greedy, then teacher-forced).
    pub modes: Vec<TokenMode>,
    /// Bisect options for localisation: cache, compiler, strategy, reproducer
    /// directory; its `run.cases` selects token cases (all when empty).
    pub bisect: BisectOptions,
    /// Localise the divergent step (its stage chain and bisect).
    pub localise: bool,
}

/// Runs the spec's `tokens:` section. Never fails as a whole: problems
/// become errors in the record, and the other cases still run.
pub fn execute(spec: &Spec, options: &TokensOptions) -> TokensRecord {
    let clock = Instant::now();
    let mut record = TokensRecord::new(
        spec.path.display().to_string(),
        env!("CARGO_PKG_VERSION"),
        run::now_rfc3339(),
    );
    record.modes = options.modes.clone();
    let Some(tokens) = requested(spec, options, &mut record) else {
        return finish(record, clock);
    };
    let Some(prepared) = prepare::prepare(spec, tokens, &options.bisect.run, &mut record) else {
        return finish(record, clock);
    };
    let Prepared {
        sources,
        modules,
        bound,
        selected,
    } = prepared;
    let session = Session {
        spec,
        tokens,
        sources: &sources,
        modules: &modules,
        bound: &bound,
    };
    for case in selected {
        record.cases.push(run_case(&session, case, &options.modes));
    }
    record.first_divergent_token = record
        .cases
        .iter()
        .find_map(|c| c.first_divergent_token.clone());
    let mut targets = localisation_targets(&record);
    if !options.localise && !targets.is_empty() {
        record
            .notes
            .push("localisation skipped (--no-localise)".to_string());
        targets.clear();
    }
    // The production call of each localised step, replayed while the modules
    // are loaded, for the step chain's trust check.
    let replayed: Vec<_> = targets
        .iter()
        .map(|t| replay_target(&session, &record, t))
        .collect();
    drop(modules);
    for (t, production) in targets.into_iter().zip(replayed) {
        localise_target(spec, options, &mut record, t, production);
    }
    count_production_wrong(&mut record);
    finish(record, clock)
}

/// The spec's `tokens:` section, when it has one and every case asked for
/// is in it; else records why not (an input error).
fn requested<'s>(
    spec: &'s Spec,
    options: &TokensOptions,
    record: &mut TokensRecord,
) -> Option<&'s parity_spec::TokensSpec> {
    let Some(tokens) = &spec.tokens else {
        record.errors.push(ErrorRecord::input(format!(
            "{}: the spec has no `tokens:` section (docs/stages-schema.md, \"tokens\")",
            spec.path.display()
        )));
        return None;
    };
    record.exact_tokens = tokens.verdict.exact_tokens;
    let wanted = &options.bisect.run.cases;
    for name in wanted.iter().filter(|w| tokens.case(w).is_none()) {
        let known: Vec<&str> = tokens.cases.iter().map(|c| c.name.as_str()).collect();
        record.errors.push(ErrorRecord::input(format!(
            "{}: no token case named `{name}` (known: {})",
            spec.path.display(),
            known.join(", ")
        )));
    }
    record.errors.is_empty().then_some(tokens)
}

/// Localises one step (its stage chain, then bisect), checks the chain
/// against the `production` call replayed, and adds the finding; the first
/// finding is also the record's headline.
fn localise_target(
    spec: &Spec,
    options: &TokensOptions,
    record: &mut TokensRecord,
    t: LocaliseAt,
    production: Result<chain::ProductionStep, String>,
) {
    let mut finding = localise::localise(spec, &options.bisect, &t.case, t.step, t.verdict, t.gate);
    if finding.localisation.is_some() {
        finding.chain_check =
            chain::check_finding(spec, &options.bisect.run, &t.case, t.step, production);
    }
    if record.findings.is_empty() {
        record.localisation = finding.localisation.clone();
        record.first_divergent_layer = finding.first_divergent_layer.clone();
        record.first_divergent_op = finding.first_divergent_op.clone();
        record.layer_vs_f64 = finding.layer_vs_f64.clone();
        record.notes.extend(finding.notes.iter().cloned());
    }
    record.findings.push(finding);
}

/// A step to localise, and the tokens its mode fed.
struct LocaliseAt {
    case: String,
    step: usize,
    verdict: TokenVerdict,
    gate: bool,
    mode: TokenMode,
}

/// The first `divergent` mismatch at prefill and the first at decode (two
/// causes, two findings); a phase without one, its first step whose logits
/// failed the gate; without any, the first near tie.
fn localisation_targets(record: &TokensRecord) -> Vec<LocaliseAt> {
    let all: Vec<_> = record
        .cases
        .iter()
        .flat_map(|c| c.first_divergent_token.iter().chain(&c.later_mismatches))
        .map(|t| LocaliseAt {
            case: t.case.clone(),
            step: t.step,
            verdict: t.verdict,
            gate: false,
            mode: t.mode,
        })
        .collect();
    let gated: Vec<_> = record
        .cases
        .iter()
        .flat_map(|c| {
            c.logits_gate.iter().flat_map(|g| {
                g.failed_steps.iter().map(|&s| LocaliseAt {
                    case: c.case.clone(),
                    step: s,
                    verdict: TokenVerdict::Divergent,
                    gate: true,
                    mode: g.mode,
                })
            })
        })
        .collect();
    let first = |decode: bool| {
        all.iter()
            .find(|t| t.verdict == TokenVerdict::Divergent && (t.step > 0) == decode)
            .or_else(|| gated.iter().find(|t| (t.step > 0) == decode))
    };
    let mut targets: Vec<&LocaliseAt> = [first(false), first(true)].into_iter().flatten().collect();
    if targets.is_empty() {
        targets.extend(all.first());
    }
    targets
        .into_iter()
        .map(|t| LocaliseAt {
            case: t.case.clone(),
            ..*t
        })
        .collect()
}

/// The production call of `t`'s step, as its mode made it (the tokens fed
/// are the oracle's in teacher-forced mode, production's own in greedy).
fn replay_target(
    session: &Session<'_>,
    record: &TokensRecord,
    t: &LocaliseAt,
) -> Result<chain::ProductionStep, String> {
    let case = session
        .tokens
        .case(&t.case)
        .ok_or_else(|| format!("no token case `{}`", t.case))?;
    let fed = record
        .cases
        .iter()
        .find(|c| c.case == t.case)
        .map(|c| match t.mode {
            TokenMode::TeacherForced => c.oracle_tokens.clone(),
            TokenMode::Greedy => c.greedy_tokens.clone(),
        })
        .unwrap_or_default();
    chain::replay(session, case, t.step, &fed).map_err(|e| e.to_string())
}

/// Loads the oracle side, runs prefill once and the selected decode modes.
fn run_case(
    session: &Session<'_>,
    case: &parity_spec::Case,
    modes: &[TokenMode],
) -> parity_record::TokenCaseRecord {
    let errored = |p: usize, e: TokensError| parity_record::TokenCaseRecord {
        errors: vec![e.in_case(&case.name).to_record()],
        ..parity_record::TokenCaseRecord::empty(&case.name, Status::Error, p)
    };
    let p = match session.tokens.prompt_len(case) {
        Ok(p) => p,
        Err(m) => return errored(0, TokensError::Template(m)),
    };
    if let Err(e) = prompt::check(session, case, p) {
        return errored(p, e);
    }
    let oracle = match OracleCase::load(session, case) {
        Ok(o) => o,
        Err(e) => return errored(p, e),
    };
    let vocab = oracle.logits[0].len();
    let prefill = session
        .call("prefill", &session.tokens.prefill, case, None)
        .and_then(|out| Ok((session.logits(&out, "prefill", vocab)?, out)));
    let prefill = match prefill {
        Ok(x) => x,
        Err(e) => {
            let mut rec = errored(p, e);
            rec.oracle_tokens = oracle.tokens.clone();
            return rec;
        }
    };
    // The perturbation noise is measured on one stream: teacher-forced when it runs.
    let ulps = session.tokens.verdict.perturbation_ulps;
    let stream = |mode| {
        let measure =
            mode == TokenMode::TeacherForced || !modes.contains(&TokenMode::TeacherForced);
        modes.contains(&mode).then(|| {
            decode_loop(
                session,
                case,
                p,
                &oracle,
                &prefill,
                mode,
                measure.then_some(ulps),
            )
        })
    };
    let greedy = stream(TokenMode::Greedy);
    let forced = stream(TokenMode::TeacherForced);
    compare_case(session, case, p, &oracle, greedy, forced)
}

/// A finding whose layer's f64 truth names production wrong is a counted
/// mismatch whatever the margins said: its token becomes `divergent` (rule
/// `localisation`), its case fails.
fn count_production_wrong(record: &mut TokensRecord) {
    let wrong: Vec<(String, usize)> = record
        .findings
        .iter_mut()
        .filter(|f| matches!(&f.layer_vs_f64, Some(v) if v.wrong == WrongSide::Production))
        .map(|f| {
            f.verdict = TokenVerdict::Divergent;
            (f.case.clone(), f.step)
        })
        .collect();
    for (case, step) in wrong {
        let Some(c) = record.cases.iter_mut().find(|c| c.case == case) else {
            continue;
        };
        let tokens = c
            .first_divergent_token
            .iter_mut()
            .chain(&mut c.later_mismatches);
        for t in tokens.filter(|t| t.step == step && !t.counted) {
            t.counted = true;
            t.verdict = TokenVerdict::Divergent;
            t.rule = Some(VerdictRule::Localisation);
            record.notes.push(format!(
                "case `{case}`, step {step}: counted, since the localised layer's f64 truth names production wrong"
            ));
        }
        if c.status == Status::Pass {
            c.status = Status::Fail;
        }
    }
    if let Some(first) = &mut record.first_divergent_token {
        if let Some(t) = record.cases.iter().find_map(|c| {
            c.first_divergent_token
                .as_ref()
                .filter(|t| t.case == first.case && t.step == first.step)
        }) {
            *first = t.clone();
        }
    }
}

fn finish(mut record: TokensRecord, clock: Instant) -> TokensRecord {
    record.elapsed_s = clock.elapsed().as_secs_f64();
    record.status = record.derived_status();
    record
}
