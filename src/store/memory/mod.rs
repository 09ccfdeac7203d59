//! The in-memory store: a mutex around maps. Fast and simple, and gone when the process exits, so
//! it serves tests and `--ephemeral` runs only; start-up says so.
//!
//! A file per role, named as in the other stores (`questions.rs`, `outbox.rs`, `votes.rs`,
//! `runs.rs`, `rules.rs`, `audit.rs`, `leases.rs`, `listings.rs`; `kept.rs`: session leases and
//! idempotency keys); this one holds the maps, what a claim reads and writes of them (the claim's
//! steps are `claim.rs`'s), events and administration.

mod audit;
mod kept;
mod leases;
mod listings;
mod outbox;
mod questions;
mod rules;
mod runs;
mod votes;

use super::local_leases::LocalLeases;

use super::claim::ClaimTxn;
use super::rule_index::RuleKey;
use super::{Admin, EVENT_BUFFER, Event, Events, Inserted, Result, Shown, StoreOptions, Work};
use askbridge_core::Identity;
use askbridge_core::audit::AuditEntry;
use askbridge_core::form::Draft;
use askbridge_core::run::Run;
use askbridge_core::{Millis, Question, QuestionId, Rule, RuleId, RunId};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::broadcast;

/// See the module documentation.
#[derive(Debug)]
pub struct MemoryStore {
    state: Mutex<State>,
    events: broadcast::Sender<Event>,
    options: StoreOptions,
    leases: LocalLeases,
    drafts: Mutex<HashMap<(QuestionId, Identity), Draft>>,
    kept: Mutex<kept::Kept>,
}

#[derive(Debug, Default)]
pub(super) struct State {
    questions: HashMap<QuestionId, Question>,
    shown: HashMap<QuestionId, Vec<Shown>>,
    effects: HashMap<QuestionId, BTreeSet<String>>,
    /// The open index, by due time and by id.
    due: BTreeSet<(Millis, QuestionId)>,
    due_at: HashMap<QuestionId, Millis>,
    /// Delivery keys and when they may be forgotten.
    seen: HashMap<String, Millis>,
    /// Deliveries taken in hand and when their lease lapses.
    in_hand: HashMap<String, Millis>,
    runs: HashMap<RunId, Run>,
    rules: BTreeMap<RuleId, Rule>,
    /// The rules by where an approval looks for them (`rule_index.rs`).
    rules_by_key: HashMap<RuleKey, BTreeSet<RuleId>>,
    audit: Vec<AuditEntry>,
}

impl State {
    fn set_due(&mut self, id: &QuestionId, at: Millis) {
        if let Some(old) = self.due_at.insert(id.clone(), at) {
            self.due.remove(&(old, id.clone()));
        }
        self.due.insert((at, id.clone()));
    }

    fn work(&self, id: &QuestionId) -> Work {
        Work {
            shown: self.shown.get(id).cloned().unwrap_or_default(),
            done: self
                .effects
                .get(id)
                .map(|set| set.iter().cloned().collect())
                .unwrap_or_default(),
        }
    }

    /// Makes `id` due at `at`, unless it is due sooner already.
    fn set_due_by(&mut self, id: &QuestionId, at: Millis) {
        if self.due_at.get(id).is_none_or(|due| *due > at) {
            self.set_due(id, at);
        }
    }

    /// Whether question `id` is stored and no longer pending.
    fn is_resolved(&self, id: &QuestionId) -> bool {
        self.questions.get(id).is_some_and(|q| !q.is_pending())
    }

    fn remove_due(&mut self, id: &QuestionId) {
        if let Some(old) = self.due_at.remove(id) {
            self.due.remove(&(old, id.clone()));
        }
    }

    /// Stores `question`, due at its first deadline or nudge, unless its id is taken.
    pub(super) fn insert_question(&mut self, question: &Question) -> Inserted {
        if self.questions.contains_key(&question.id) {
            return Inserted::Taken;
        }
        self.questions.insert(question.id.clone(), question.clone());
        self.set_due(&question.id, question.next_due(&[]));
        Inserted::Created
    }
}

/// The memory store's records as a claim sees them, under the lock (see `claim.rs`).
impl ClaimTxn for State {
    fn question(&mut self, id: &QuestionId) -> Result<Option<Question>> {
        Ok(self.questions.get(id).cloned())
    }

    fn save_resolved(&mut self, question: &Question) -> Result<()> {
        self.questions.insert(question.id.clone(), question.clone());
        Ok(())
    }

    fn audit(&mut self, entry: &AuditEntry) -> Result<()> {
        self.audit.push(entry.clone());
        Ok(())
    }

    fn set_due(&mut self, id: &QuestionId, at: Millis) -> Result<()> {
        State::set_due(self, id, at);
        Ok(())
    }

    fn run(&mut self, id: &RunId) -> Result<Option<Run>> {
        Ok(self.runs.get(id).cloned())
    }

    fn put_run(&mut self, run: &Run) -> Result<()> {
        self.runs.insert(run.id.clone(), run.clone());
        Ok(())
    }

    fn insert_question(&mut self, question: &Question) -> Result<Inserted> {
        Ok(State::insert_question(self, question))
    }

    fn work(&mut self, id: &QuestionId) -> Result<Work> {
        Ok(State::work(self, id))
    }

    fn finish(&mut self, question: &Question) -> Result<()> {
        self.remove_due(&question.id);
        Ok(())
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new(options: StoreOptions) -> Self {
        MemoryStore {
            state: Mutex::new(State::default()),
            events: broadcast::channel(EVENT_BUFFER).0,
            options,
            leases: LocalLeases::default(),
            drafts: Mutex::default(),
            kept: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that matters
        // more than stopping would; keep serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn announce(&self, question: &Question) {
        // No subscribers is not an error: nobody is listening yet.
        let _ = self.events.send(Event::of(question));
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new(StoreOptions::default())
    }
}

impl Events for MemoryStore {
    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}

#[async_trait]
impl Admin for MemoryStore {
    fn describe(&self) -> String {
        "memory (not durable: pending questions are lost when askbridge stops)".into()
    }

    fn is_durable(&self) -> bool {
        false
    }

    async fn ping(&self) -> Result<()> {
        Ok(())
    }

    async fn topology(&self) -> Result<crate::store::Topology> {
        Ok(crate::store::Topology::single("memory"))
    }

    async fn purge(&self, now: Millis) -> Result<usize> {
        let mut state = self.state();
        let retention = self.options.retention;
        let old: Vec<QuestionId> = state
            .questions
            .values()
            .filter(|q| {
                !state.due_at.contains_key(&q.id)
                    && q.resolution
                        .as_ref()
                        .is_some_and(|r| r.at.after(retention) <= now)
            })
            .map(|q| q.id.clone())
            .collect();
        for id in &old {
            state.questions.remove(id);
            state.shown.remove(id);
            state.effects.remove(id);
        }
        // Forms' drafts go with their question (Redis gives each a TTL instead).
        self.drafts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(id, _), _| state.questions.contains_key(id));
        state.seen.retain(|_, until| *until > now);
        state.in_hand.retain(|_, until| *until > now);
        let audit_retention = self.options.audit_retention;
        state.audit.retain(|e| e.at.after(audit_retention) > now);
        state.runs.retain(|_, run| {
            !(run.state.is_final() && run.reported && run.updated_at.after(retention) <= now)
        });
        Ok(old.len())
    }
}
