//! The in-memory store: a mutex around maps. Fast and simple, and gone when the process exits, so
//! it serves tests and `--ephemeral` runs only; start-up says so.
//!
//! This file holds questions, deliveries and the outbox; `records.rs` runs, rules, the audit
//! trail, dedupe, events and administration.

mod records;

use super::local_leases::LocalLeases;

use super::claim_steps::{self, ClaimTxn};
use super::{
    ClaimOptions, Claimed, Counts, Deliveries, Drafts, EVENT_BUFFER, Event, FINAL, Inserted,
    ListFilter, Outbox, Questions, Result, Shown, StoreOptions, Votes, Work,
};
use askbridge_core::Identity;
use askbridge_core::Status;
use askbridge_core::audit::AuditEntry;
use askbridge_core::form::Draft;
use askbridge_core::quorum::Vote;
use askbridge_core::run::Run;
use askbridge_core::tally::{self, VoteOutcome};
use askbridge_core::{Claim, Millis, Question, QuestionId, Rule, RuleId, RunId};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::broadcast;

/// See the module documentation.
#[derive(Debug)]
pub struct MemoryStore {
    state: Mutex<State>,
    events: broadcast::Sender<Event>,
    options: StoreOptions,
    leases: LocalLeases,
    drafts: Mutex<HashMap<(QuestionId, Identity), Draft>>,
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
    runs: HashMap<RunId, Run>,
    rules: BTreeMap<RuleId, Rule>,
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

/// The memory store's records as a claim sees them, under the lock (see `claim_steps.rs`).
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

#[async_trait]
impl Votes for MemoryStore {
    async fn vote(
        &self,
        snapshot: &Question,
        vote: &Vote,
        due_if_met: Millis,
    ) -> Result<Option<(VoteOutcome, Question)>> {
        let (outcome, question) = {
            let mut state = self.state();
            let Some(question) = state.questions.get_mut(&snapshot.id) else {
                return Ok(None);
            };
            let outcome = tally::apply_vote(question, vote);
            let question = question.clone();
            if outcome == VoteOutcome::Met {
                state.set_due(&question.id, due_if_met);
            }
            (outcome, question)
        };
        if outcome.is_counted() {
            let _ = self.events.send(Event::voted(&question));
        }
        Ok(Some((outcome, question)))
    }
}

#[async_trait]
impl Drafts for MemoryStore {
    async fn draft(&self, id: &QuestionId, who: &Identity) -> Result<Option<Draft>> {
        let drafts = self.drafts.lock().unwrap_or_else(|p| p.into_inner());
        Ok(drafts.get(&(id.clone(), who.clone())).cloned())
    }

    async fn save_draft(
        &self,
        id: &QuestionId,
        who: &Identity,
        draft: &Draft,
        _ttl: Duration,
    ) -> Result<()> {
        let mut drafts = self.drafts.lock().unwrap_or_else(|p| p.into_inner());
        drafts.insert((id.clone(), who.clone()), draft.clone());
        Ok(())
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new(StoreOptions::default())
    }
}

#[async_trait]
impl Questions for MemoryStore {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        let inserted = self.state().insert_question(question);
        if inserted == Inserted::Created {
            self.announce(question);
        }
        Ok(inserted)
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<Question>> {
        Ok(self.state().questions.get(id).cloned())
    }

    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
        options: ClaimOptions<'_>,
    ) -> Result<Option<Claimed>> {
        let claimed = claim_steps::claim_in(&mut *self.state(), &snapshot.id, claim, &options)?;
        if let Some(claimed) = &claimed {
            claim_steps::announce(&self.events, claimed, &options);
        }
        Ok(claimed)
    }

    fn claims_ahead(&self) -> bool {
        true
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        let state = self.state();
        let mut found: Vec<Question> = state
            .questions
            .values()
            .filter(|q| filter.accepts(q))
            .cloned()
            .collect();
        found.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        found.truncate(filter.effective_limit());
        Ok(found)
    }

    async fn counts(&self, since: Millis) -> Result<Counts> {
        let state = self.state();
        let mut counts = Counts::default();
        let mut answered: Vec<(Millis, u64)> = Vec::new();
        for question in state.questions.values() {
            let Some(resolution) = &question.resolution else {
                counts.pending += 1;
                continue;
            };
            if let Some(slot) = FINAL.iter().position(|s| *s == question.status)
                && resolution.at >= since
            {
                counts.resolved[slot] += 1;
            }
            if question.status == Status::Answered {
                let took = resolution.at.since(question.created_at).as_millis() as u64;
                answered.push((resolution.at, took));
            }
        }
        answered.sort_unstable_by_key(|(at, _)| std::cmp::Reverse(*at));
        counts.answer_ms = answered.into_iter().take(2000).map(|(_, ms)| ms).collect();
        Ok(counts)
    }
}

#[async_trait]
impl Deliveries for MemoryStore {
    async fn record_shown(&self, id: &QuestionId, shown: &Shown) -> Result<()> {
        let mut state = self.state();
        let list = state.shown.entry(id.clone()).or_default();
        list.retain(|s| s.target != shown.target);
        list.push(shown.clone());
        Ok(())
    }

    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>> {
        Ok(self.state().shown.get(id).cloned().unwrap_or_default())
    }
}

#[async_trait]
impl Outbox for MemoryStore {
    async fn mark_effect(&self, id: &QuestionId, effect: &str) -> Result<bool> {
        Ok(self
            .state()
            .effects
            .entry(id.clone())
            .or_default()
            .insert(effect.to_owned()))
    }

    async fn work(&self, id: &QuestionId) -> Result<Work> {
        Ok(self.state().work(id))
    }

    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>> {
        let mut state = self.state();
        let due: Vec<QuestionId> = state
            .due
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .map(|(_, id)| id.clone())
            .collect();
        for id in &due {
            state.set_due(id, now.after(lease));
        }
        Ok(due)
    }

    async fn next_due(&self) -> Result<Option<Millis>> {
        Ok(self.state().due.first().map(|(at, _)| *at))
    }

    async fn open_ids(&self) -> Result<Vec<QuestionId>> {
        Ok(self.state().due_at.keys().cloned().collect())
    }

    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<()> {
        self.state().set_due(id, at);
        Ok(())
    }

    async fn finish(
        &self,
        id: &QuestionId,
        _question: Option<&Question>,
        done: &[String],
        retry_at: Option<Millis>,
    ) -> Result<()> {
        let mut state = self.state();
        state
            .effects
            .entry(id.clone())
            .or_default()
            .extend(done.iter().cloned());
        match retry_at {
            Some(at) => state.set_due(id, at),
            None => state.remove_due(id),
        }
        Ok(())
    }
}
