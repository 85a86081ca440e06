//! Continuous batching on the serving module's slot entry points, with
//! parity's own slot table (`parity::serve::scheduler::SlotTable`, the one
//! `parity serve` schedules scenarios with): requests are admitted as they
//! come into free slots (prefill), and each step runs ONE `slot_decode_s{S}`
//! over every running slot; tokens go out per step; a cancelled request
//! (the client went away) leaves its slot at the next step.

use crate::error::ServerError;
use crate::model::{logsumexp, server_error, Model, Plan};
use parity::serve::adapters::wire::WireRequest;
use parity::serve::scheduler::{Backend, SlotTable, StepEvent};
use parity::serve::slots::SlotCaches;
use parity::serve::ServeError;
use parity_record::ErrorKind;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// max_tokens were generated.
    Length,
}

impl Finish {
    /// The wire name (`length`).
    pub fn reason(self) -> &'static str {
        match self {
            Finish::Length => "length",
        }
    }
}

/// What the scheduler tells a request's connection.
#[derive(Debug)]
pub enum Event {
    /// Admitted into this slot; its tokens follow.
    Admitted(u32),
    /// One token and its log-probability.
    Token(u32, f32),
    /// The end.
    Done(Finish),
    /// Refused at admission (nothing ran) or failed while running.
    Failed(ServerError),
}

/// A request handed to the scheduler.
pub struct Job {
    /// The request.
    pub request: WireRequest,
    /// Where its events go.
    pub events: Sender<Event>,
    /// Set by the connection when the client goes away.
    pub cancel: Arc<AtomicBool>,
}

struct Live {
    plan: Plan,
    events: Sender<Event>,
    cancel: Arc<AtomicBool>,
    tokens: usize,
}

/// The scheduler's state: the model, the slots' caches and who holds which slot.
pub struct Batcher {
    model: Model,
    caches: SlotCaches,
    table: SlotTable,
    live: HashMap<usize, Live>,
    waiting: VecDeque<usize>,
    next: usize,
    step: u64,
}

/// The backend the slot table drives: the model and the caches.
struct Runner<'a> {
    model: &'a mut Model,
    caches: &'a mut SlotCaches,
    live: &'a HashMap<usize, Live>,
}

fn serve_error(e: ServerError) -> ServeError {
    let kind = match e {
        ServerError::Setup(_) | ServerError::Refused(_) => ErrorKind::Input,
        _ => ErrorKind::Execution,
    };
    ServeError::Module {
        kind,
        message: e.to_string(),
    }
}

impl Backend for Runner<'_> {
    fn prefill(&mut self, job: usize, slot: u32, _step: u64) -> Result<Vec<f32>, ServeError> {
        let plan = &self
            .live
            .get(&job)
            .ok_or_else(|| ServeError::Run(format!("job {job} is not live")))?
            .plan;
        self.model
            .prefill(self.caches, plan, slot)
            .map_err(serve_error)
    }

    fn decode(
        &mut self,
        inputs: &[Option<(u32, u64)>],
        _step: u64,
    ) -> Result<Vec<Vec<f32>>, ServeError> {
        // The table may use fewer slots than the module has: the rest stay inactive.
        let mut all = inputs.to_vec();
        all.resize(self.model.slots.slots() as usize, None);
        self.model.decode(self.caches, &all).map_err(serve_error)
    }
}

impl Batcher {
    /// A scheduler over `slots` of the module's slots (at most its S), with
    /// `caches` (empty slots, or a saved state).
    pub fn new(model: Model, slots: u32, caches: SlotCaches) -> Result<Batcher, ServerError> {
        let s = model.slots.slots();
        if slots == 0 || slots > s {
            return Err(ServerError::Setup(format!(
                "--slots {slots}: the serving module has {s} slots (slot_decode_s{s})"
            )));
        }
        Ok(Batcher {
            model,
            caches,
            table: SlotTable::new(slots),
            live: HashMap::new(),
            waiting: VecDeque::new(),
            next: 0,
            step: 0,
        })
    }

    /// The slots' caches (to save them).
    pub fn caches(&self) -> &SlotCaches {
        &self.caches
    }

    /// Nothing running and nothing waiting.
    pub fn idle(&self) -> bool {
        self.live.is_empty()
    }

    /// Requests admitted but waiting for a slot.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Admission (before anything runs): a refused request gets its
    /// `Failed` event at once; an admitted one waits for a slot.
    pub fn submit(&mut self, job: Job) {
        match self.model.admit(&job.request) {
            Ok(plan) => {
                let id = self.next;
                self.next += 1;
                self.live.insert(
                    id,
                    Live {
                        plan,
                        events: job.events,
                        cancel: job.cancel,
                        tokens: 0,
                    },
                );
                self.waiting.push_back(id);
            }
            Err(e) => {
                let _ = job.events.send(Event::Failed(e));
            }
        }
    }

    /// One engine step: cancellations, admissions into free slots
    /// (prefill: token 0), one decode over the slots admitted earlier,
    /// then finished requests leave their slots.
    pub fn step(&mut self) {
        let step = self.step;
        self.step += 1;
        let cancelled: Vec<usize> = self
            .live
            .iter()
            .filter(|(_, l)| l.cancel.load(Ordering::SeqCst))
            .map(|(&j, _)| j)
            .collect();
        for j in cancelled {
            self.leave(j);
            self.waiting.retain(|w| *w != j);
        }
        let mut events = Vec::new();
        while let (Some(slot), Some(&j)) = (self.table.free_slot(), self.waiting.front()) {
            self.waiting.pop_front();
            let Some(live) = self.live.get(&j) else {
                continue;
            };
            let _ = live.events.send(Event::Admitted(slot));
            let prompt_len = live.plan.prompt.len() as u64;
            let mut runner = Runner {
                model: &mut self.model,
                caches: &mut self.caches,
                live: &self.live,
            };
            events.extend(self.table.admit(j, prompt_len, step, &mut runner));
        }
        let mut runner = Runner {
            model: &mut self.model,
            caches: &mut self.caches,
            live: &self.live,
        };
        events.extend(self.table.decode(step, &mut runner));
        for e in events {
            self.settle(e, step);
        }
        let finished: Vec<usize> = self
            .live
            .iter()
            .filter(|(_, l)| l.tokens >= l.plan.max_tokens)
            .map(|(&j, _)| j)
            .collect();
        for j in finished {
            if let Some(l) = self.live.get(&j) {
                let _ = l.events.send(Event::Done(Finish::Length));
            }
            self.leave(j);
        }
    }

    fn settle(&mut self, event: StepEvent, step: u64) {
        let (job, failure) = match event {
            StepEvent::Token {
                job, token, row, ..
            } => {
                if let Some(l) = self.live.get_mut(&job) {
                    l.tokens += 1;
                    let lp = (f64::from(row[token as usize]) - logsumexp(&row)) as f32;
                    if l.events.send(Event::Token(token, lp)).is_err() {
                        l.cancel.store(true, Ordering::SeqCst);
                    }
                }
                return;
            }
            StepEvent::Failed { job, error, .. } => (job, server_error(error)),
            StepEvent::NonFinite { job, slot } => (
                job,
                ServerError::Execution(format!(
                    "slot {slot}: step {step}: the logits are empty or hold NaN"
                )),
            ),
        };
        if let Some(l) = self.live.remove(&job) {
            let _ = l.events.send(Event::Failed(failure));
        }
    }

    /// `job` leaves its slot (if it holds one) and the scheduler.
    fn leave(&mut self, job: usize) {
        let mut runner = Runner {
            model: &mut self.model,
            caches: &mut self.caches,
            live: &self.live,
        };
        self.table.release(job, &mut runner);
        self.live.remove(&job);
    }
}
