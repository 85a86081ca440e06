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

/// What one prefill or decode did for one job.
#[derive(Clone, Debug)]
pub enum StepEvent {
    /// The job's next token (greedy over `row`).
    Token {
        /// The job.
        job: usize,
        /// Its slot.
        slot: u32,
        /// The greedy token.
        token: u32,
        /// The logits row it was chosen from.
        row: Vec<f32>,
    },
    /// The call failed; the job has left its slot.
    Failed {
        /// The job.
        job: usize,
        /// Its slot.
        slot: u32,
        /// Why.
        error: ServeError,
    },
    /// The logits row was empty or held a non-finite value; the job has left its slot.
    NonFinite {
        /// The job.
        job: usize,
        /// Its slot.
        slot: u32,
    },
}

#[derive(Clone, Debug)]
struct Occupant {
    job: usize,
    prompt_len: u64,
    tokens: u64,
    last: Option<u32>,
    admitted: u64,
}

/// Which job holds which slot, and where each stands: the core of
/// continuous batching, shared by the scenario engine ([`run`]) and the
/// loopback fixture server (crates/parity-server), which admits HTTP
/// requests as they come.
#[derive(Clone, Debug)]
pub struct SlotTable {
    occupants: Vec<Option<Occupant>>,
}

impl SlotTable {
    /// `slots` empty slots.
    pub fn new(slots: u32) -> SlotTable {
        SlotTable {
            occupants: vec![None; slots as usize],
        }
    }

    /// The lowest free slot.
    pub fn free_slot(&self) -> Option<u32> {
        self.occupants
            .iter()
            .position(Option::is_none)
            .map(|s| s as u32)
    }

    /// How many slots are taken.
    pub fn occupied(&self) -> usize {
        self.occupants.iter().filter(|o| o.is_some()).count()
    }

    /// The slot `job` holds.
    pub fn slot_of(&self, job: usize) -> Option<u32> {
        self.occupants
            .iter()
            .position(|o| o.as_ref().is_some_and(|o| o.job == job))
            .map(|s| s as u32)
    }

    /// Frees the slot `job` holds (finished or cancelled), telling the backend.
    pub fn release(&mut self, job: usize, backend: &mut dyn Backend) -> Option<u32> {
        let slot = self.slot_of(job)?;
        self.occupants[slot as usize] = None;
        backend.release(job, slot);
        Some(slot)
    }

    /// Admits `job` (prompt length `prompt_len`) into the lowest free slot
    /// and prefills it at `step`; None when every slot is taken.
    pub fn admit(
        &mut self,
        job: usize,
        prompt_len: u64,
        step: u64,
        backend: &mut dyn Backend,
    ) -> Option<StepEvent> {
        let slot = self.free_slot()?;
        self.occupants[slot as usize] = Some(Occupant {
            job,
            prompt_len,
            tokens: 0,
            last: None,
            admitted: step,
        });
        let event = match backend.prefill(job, slot, step) {
            Ok(row) => token_event(job, slot, row),
            Err(error) => StepEvent::Failed { job, slot, error },
        };
        self.settle(&event, backend);
        Some(event)
    }

    /// One decode over every slot admitted before `step` (token k of a job
    /// admitted at step a comes out at step a + k); no call when none is.
    pub fn decode(&mut self, step: u64, backend: &mut dyn Backend) -> Vec<StepEvent> {
        let mut inputs = vec![None; self.occupants.len()];
        let mut running = Vec::new();
        for (s, o) in self.occupants.iter().enumerate() {
            let Some(o) = o else { continue };
            let Some(last) = o.last.filter(|_| o.admitted < step) else {
                continue;
            };
            inputs[s] = Some((last, o.prompt_len + o.tokens - 1));
            running.push((s as u32, o.job));
        }
        if running.is_empty() {
            return Vec::new();
        }
        let events: Vec<StepEvent> = match backend.decode(&inputs, step) {
            Ok(rows) => running
                .iter()
                .map(|&(slot, job)| {
                    token_event(
                        job,
                        slot,
                        rows.get(slot as usize).cloned().unwrap_or_default(),
                    )
                })
                .collect(),
            Err(error) => running
                .iter()
                .map(|&(slot, job)| StepEvent::Failed {
                    job,
                    slot,
                    error: error.clone(),
                })
                .collect(),
        };
        for e in &events {
            self.settle(e, backend);
        }
        events
    }

    fn settle(&mut self, event: &StepEvent, backend: &mut dyn Backend) {
        match event {
            StepEvent::Token { slot, token, .. } => {
                if let Some(Some(o)) = self.occupants.get_mut(*slot as usize) {
                    o.tokens += 1;
                    o.last = Some(*token);
                }
            }
            StepEvent::Failed { job, .. } | StepEvent::NonFinite { job, .. } => {
                self.release(*job, backend);
            }
        }
    }
}

fn token_event(job: usize, slot: u32, row: Vec<f32>) -> StepEvent {
    match greedy(&row) {
        Some(token) => StepEvent::Token {
            job,
            slot,
            token,
            row,
        },
        None => StepEvent::NonFinite { job, slot },
    }
}

/// Runs `jobs` on `slots` slots through `backend`, up to `max_steps` steps.
/// An execution error ends only the requests it hits: they get it as their
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
    let mut table = SlotTable::new(slots);
    let mut done = vec![false; jobs.len()];
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (jobs[i].arrive, i));
    let mut apply = |obs: &mut Vec<Observed>, done: &mut Vec<bool>, e: StepEvent, step: u64| match e
    {
        StepEvent::Token {
            job, token, row, ..
        } => {
            obs[job].tokens.push(token);
            obs[job].logits_sha256.push(super::sha256_f32(&row));
            logits[job].push(row);
        }
        StepEvent::Failed { job, error, .. } => {
            obs[job].error = Some(error.to_string());
            obs[job].error_is_input = error.is_input();
            done[job] = true;
        }
        StepEvent::NonFinite { job, .. } => {
            obs[job].error = Some(format!(
                "request `{}`: step {step}: a non-finite or empty logits row",
                obs[job].id
            ));
            done[job] = true;
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
                table.release(j, backend);
            }
        }
        // 2. Admission, in arrival order, into the lowest free slot.
        for &j in &order {
            if done[j] || jobs[j].arrive > step || obs[j].admitted_step.is_some() {
                continue;
            }
            if let Some(why) = &jobs[j].refusal {
                obs[j].refused = Some(why.clone());
                done[j] = true;
                continue;
            }
            let Some(event) = table.admit(j, jobs[j].prompt_len, step, backend) else {
                break;
            };
            obs[j].slot = Some(match &event {
                StepEvent::Token { slot, .. }
                | StepEvent::Failed { slot, .. }
                | StepEvent::NonFinite { slot, .. } => *slot,
            });
            obs[j].admitted_step = Some(step);
            apply(&mut obs, &mut done, event, step);
        }
        // 3. One decode over the slots admitted before this step.
        for event in table.decode(step, backend) {
            apply(&mut obs, &mut done, event, step);
        }
        // 4. Finished (or cancelled after k tokens) requests leave their slot.
        for j in 0..jobs.len() {
            if done[j] || obs[j].admitted_step.is_none() {
                continue;
            }
            let n = obs[j].tokens.len() as u32;
            if n >= jobs[j].max_new_tokens {
                obs[j].finished_step = Some(step);
            } else if jobs[j].cancel == Some(Cancel::AfterTokens(n)) {
                obs[j].cancelled_step = Some(step);
            } else {
                continue;
            }
            done[j] = true;
            table.release(j, backend);
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
