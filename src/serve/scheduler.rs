//! The continuous-batching loop, independent of IREE: at each step it
//! cancels, admits arrived requests into free slots (prefill), then runs one
//! decode over every slot admitted earlier. Every loop is bounded by the
//! scenario's `max_steps`.

use super::error::ServeError;
use super::target::Observed;
use parity_spec::Cancel;

/// One request as the scheduler sees it.
#[derive(Clone, Debug)]
pub struct Job {
    /// Request id.
    pub id: String,
    /// Arrival step.
    pub arrive: u64,
    /// Tokens to generate.
    pub max_new_tokens: u32,
    /// Cancellation.
    pub cancel: Option<Cancel>,
    /// Prompt length P (decode step k runs at position P + k - 1).
    pub prompt_len: u64,
    /// The admission refusal, decided before anything runs.
    pub refusal: Option<String>,
}

/// What runs the model: one prefill into a slot, one decode over all slots.
pub trait Backend {
    /// Prefills job `job` into `slot`; returns its first token's logits.
    fn prefill(&mut self, job: usize, slot: u32, step: u64) -> Result<Vec<f32>, ServeError>;
    /// One decode step: `inputs[s]` is `Some((token, position))` for an active
    /// slot; returns one logits row per slot.
    fn decode(
        &mut self,
        inputs: &[Option<(u32, u64)>],
        step: u64,
    ) -> Result<Vec<Vec<f32>>, ServeError>;
    /// Called when job `job` leaves its slot (finished or cancelled).
    fn release(&mut self, _job: usize, _slot: u32) {}
}

/// Greedy choice: the lowest index among exact ties; None on a non-finite row.
pub fn greedy(row: &[f32]) -> Option<u32> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &x) in row.iter().enumerate() {
        if !x.is_finite() {
            return None;
        }
        if best.is_none_or(|(_, b)| x > b) {
            best = Some((i, x));
        }
    }
    best.map(|(i, _)| i as u32)
}

/// The per-request logits rows, beside the observations.
pub type Logits = Vec<Vec<Vec<f32>>>;

/// Runs `jobs` on `slots` slots through `backend`, up to `max_steps` steps.
/// An execution error ends the run: requests still running get it as their
/// `error`, results already produced are kept.
pub fn run(
    jobs: &[Job],
    slots: u32,
    max_steps: u64,
    backend: &mut dyn Backend,
) -> (Vec<Observed>, Logits) {
    let mut obs: Vec<Observed> = jobs
        .iter()
        .map(|j| Observed {
            id: j.id.clone(),
            ..Observed::default()
        })
        .collect();
    let mut logits: Logits = vec![Vec::new(); jobs.len()];
    let mut slot_of: Vec<Option<usize>> = vec![None; slots as usize];
    let mut done = vec![false; jobs.len()];
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (jobs[i].arrive, i));
    let free = |slot_of: &mut Vec<Option<usize>>, backend: &mut dyn Backend, j: usize| {
        if let Some(s) = slot_of.iter().position(|x| *x == Some(j)) {
            slot_of[s] = None;
            backend.release(j, s as u32);
        }
    };
    let fail = |obs: &mut Vec<Observed>, done: &mut Vec<bool>, e: &ServeError, which: &[usize]| {
        for &j in which {
            obs[j].error = Some(e.to_string());
            done[j] = true;
        }
    };
    for step in 0..max_steps {
        if done.iter().all(|d| *d) {
            break;
        }
        // 1. Cancellations due at this step.
        for j in 0..jobs.len() {
            if !done[j] && jobs[j].cancel == Some(Cancel::AtStep(step)) && jobs[j].arrive <= step {
                obs[j].cancelled_step = Some(step);
                done[j] = true;
                free(&mut slot_of, backend, j);
            }
        }
        // 2. Admission, in arrival order, into the lowest free slot.
        let mut admitted_now = Vec::new();
        for &j in &order {
            if done[j] || jobs[j].arrive > step || obs[j].admitted_step.is_some() {
                continue;
            }
            if let Some(why) = &jobs[j].refusal {
                obs[j].refused = Some(why.clone());
                done[j] = true;
                continue;
            }
            let Some(slot) = slot_of.iter().position(Option::is_none) else {
                break;
            };
            slot_of[slot] = Some(j);
            obs[j].slot = Some(slot as u32);
            obs[j].admitted_step = Some(step);
            admitted_now.push(j);
            match backend.prefill(j, slot as u32, step) {
                Ok(row) => {
                    record(&mut obs[j], &mut logits[j], row, step);
                }
                Err(e) => {
                    fail(&mut obs, &mut done, &e, &[j]);
                    free(&mut slot_of, backend, j);
                }
            }
        }
        // 3. One decode over the slots admitted before this step.
        let mut inputs = vec![None; slots as usize];
        let mut running = Vec::new();
        for (s, occupant) in slot_of.iter().enumerate() {
            let Some(j) = *occupant else { continue };
            if done[j] || admitted_now.contains(&j) || obs[j].error.is_some() {
                continue;
            }
            let Some(&last) = obs[j].tokens.last() else {
                continue;
            };
            let pos = jobs[j].prompt_len + obs[j].tokens.len() as u64 - 1;
            inputs[s] = Some((last, pos));
            running.push((s, j));
        }
        if !running.is_empty() {
            match backend.decode(&inputs, step) {
                Ok(rows) => {
                    for &(s, j) in &running {
                        let row = rows.get(s).cloned().unwrap_or_default();
                        record(&mut obs[j], &mut logits[j], row, step);
                    }
                }
                Err(e) => {
                    let which: Vec<usize> = running.iter().map(|r| r.1).collect();
                    fail(&mut obs, &mut done, &e, &which);
                    for j in which {
                        free(&mut slot_of, backend, j);
                    }
                }
            }
        }
        // 4. Finished (or cancelled after k tokens) requests leave their slot.
        for j in 0..jobs.len() {
            if done[j] || obs[j].admitted_step.is_none() {
                continue;
            }
            let n = obs[j].tokens.len() as u32;
            if obs[j].error.is_some() {
                done[j] = true;
            } else if n >= jobs[j].max_new_tokens {
                obs[j].finished_step = Some(step);
                done[j] = true;
            } else if jobs[j].cancel == Some(Cancel::AfterTokens(n)) {
                obs[j].cancelled_step = Some(step);
                done[j] = true;
            } else {
                continue;
            }
            free(&mut slot_of, backend, j);
        }
    }
    for j in 0..jobs.len() {
        if !done[j] {
            obs[j].error = Some(format!(
                "request `{}` did not finish within max_steps {max_steps}",
                jobs[j].id
            ));
        }
    }
    (obs, logits)
}

fn record(o: &mut Observed, rows: &mut Vec<Vec<f32>>, row: Vec<f32>, step: u64) {
    match greedy(&row) {
        Some(t) => {
            o.tokens.push(t);
            o.logits_sha256.push(super::sha256_f32(&row));
            rows.push(row);
        }
        None => {
            o.error = Some(format!(
                "request `{}`: step {step}: a non-finite or empty logits row",
                o.id
            ))
        }
    }
}
