//! The in-memory store: a mutex around maps. Fast and simple, and gone when the process exits, so
//! it serves tests and `--ephemeral` runs only; start-up says so.

use super::{EVENT_BUFFER, Event, ListFilter, Shown, Store, StoreOptions};
use crate::Error;
use askbridge_core::Rule;
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Acquire, Run};
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId};
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
}

#[derive(Debug, Default)]
struct State {
    questions: HashMap<QuestionId, Question>,
    shown: HashMap<QuestionId, Vec<Shown>>,
    effects: HashMap<QuestionId, BTreeSet<String>>,
    /// The open index, by due time and by id.
    due: BTreeSet<(Millis, QuestionId)>,
    due_at: HashMap<QuestionId, Millis>,
    /// Delivery keys and when they may be forgotten.
    seen: HashMap<String, Millis>,
    runs: HashMap<String, Run>,
    rules: BTreeMap<String, Rule>,
    audit: Vec<AuditEntry>,
}

impl State {
    fn set_due(&mut self, id: &QuestionId, at: Millis) {
        if let Some(old) = self.due_at.insert(id.clone(), at) {
            self.due.remove(&(old, id.clone()));
        }
        self.due.insert((at, id.clone()));
    }

    fn remove_due(&mut self, id: &QuestionId) {
        if let Some(old) = self.due_at.remove(id) {
            self.due.remove(&(old, id.clone()));
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new(options: StoreOptions) -> Self {
        MemoryStore {
            state: Mutex::new(State::default()),
            events: broadcast::channel(EVENT_BUFFER).0,
            options,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that matters
        // more than stopping would; keep serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new(StoreOptions::default())
    }
}

#[async_trait]
impl Store for MemoryStore {
    fn describe(&self) -> String {
        "memory (not durable: pending questions are lost when askbridge stops)".into()
    }

    fn is_durable(&self) -> bool {
        false
    }

    async fn ping(&self) -> Result<(), Error> {
        Ok(())
    }

    async fn insert(&self, question: &Question) -> Result<(), Error> {
        let mut state = self.state();
        if state.questions.contains_key(&question.id) {
            return Err(Error::IdTaken);
        }
        state
            .questions
            .insert(question.id.clone(), question.clone());
        state.set_due(&question.id, question.expires_at);
        Ok(())
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<Question>, Error> {
        Ok(self.state().questions.get(id).cloned())
    }

    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
    ) -> Result<Option<(ClaimOutcome, Question)>, Error> {
        let mut state = self.state();
        let Some(question) = state.questions.get_mut(&snapshot.id) else {
            return Ok(None);
        };
        let outcome = question.apply(claim);
        Ok(Some((outcome, question.clone())))
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>, Error> {
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

    async fn count_pending(&self) -> Result<usize, Error> {
        Ok(self
            .state()
            .questions
            .values()
            .filter(|q| q.is_pending())
            .count())
    }

    async fn record_shown(&self, id: &QuestionId, shown: &Shown) -> Result<(), Error> {
        let mut state = self.state();
        let list = state.shown.entry(id.clone()).or_default();
        list.retain(|s| s.target != shown.target);
        list.push(shown.clone());
        Ok(())
    }

    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>, Error> {
        Ok(self.state().shown.get(id).cloned().unwrap_or_default())
    }

    async fn mark_effect(&self, id: &QuestionId, effect: &str) -> Result<bool, Error> {
        Ok(self
            .state()
            .effects
            .entry(id.clone())
            .or_default()
            .insert(effect.to_owned()))
    }

    async fn effects_done(&self, id: &QuestionId) -> Result<Vec<String>, Error> {
        let state = self.state();
        Ok(state
            .effects
            .get(id)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default())
    }

    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>, Error> {
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

    async fn open_ids(&self) -> Result<Vec<QuestionId>, Error> {
        Ok(self.state().due_at.keys().cloned().collect())
    }

    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<(), Error> {
        self.state().set_due(id, at);
        Ok(())
    }

    async fn settle(&self, id: &QuestionId, _question: Option<&Question>) -> Result<(), Error> {
        self.state().remove_due(id);
        Ok(())
    }

    async fn first_sighting(&self, key: &str, ttl: Duration) -> Result<bool, Error> {
        let now = Millis::now();
        let mut state = self.state();
        match state.seen.get(key) {
            Some(until) if *until > now => Ok(false),
            _ => {
                state.seen.insert(key.to_owned(), now.after(ttl));
                Ok(true)
            }
        }
    }

    async fn purge(&self, now: Millis) -> Result<usize, Error> {
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
        state.seen.retain(|_, until| *until > now);
        let audit_retention = self.options.audit_retention;
        state.audit.retain(|e| e.at.after(audit_retention) > now);
        state.runs.retain(|_, run| {
            !(run.state.is_final() && run.reported && run.updated_at.after(retention) <= now)
        });
        Ok(old.len())
    }

    async fn insert_run(&self, run: &Run) -> Result<(), Error> {
        let mut state = self.state();
        if state.runs.contains_key(&run.id) {
            return Err(Error::IdTaken);
        }
        state.runs.insert(run.id.clone(), run.clone());
        Ok(())
    }

    async fn get_run(&self, id: &str) -> Result<Option<Run>, Error> {
        Ok(self.state().runs.get(id).cloned())
    }

    async fn acquire_run(
        &self,
        id: &str,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>, Error> {
        let mut state = self.state();
        let Some(run) = state.runs.get_mut(id) else {
            return Ok(None);
        };
        Ok(run
            .acquire(why, owner, now, lease_until)
            .then(|| run.clone()))
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<bool, Error> {
        let mut state = self.state();
        match state.runs.get_mut(&run.id) {
            Some(stored) if stored.owner.as_deref() == Some(owner) => {
                *stored = run.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<String>, Error> {
        let state = self.state();
        Ok(state
            .runs
            .values()
            .filter(|run| run.needs_executor() && run.lease_until.is_none_or(|until| until <= now))
            .take(limit)
            .map(|run| run.id.clone())
            .collect())
    }

    async fn put_rule(&self, rule: &Rule) -> Result<(), Error> {
        self.state().rules.insert(rule.id.clone(), rule.clone());
        Ok(())
    }

    async fn rules(&self) -> Result<Vec<Rule>, Error> {
        Ok(self.state().rules.values().cloned().collect())
    }

    async fn delete_rule(&self, id: &str) -> Result<bool, Error> {
        Ok(self.state().rules.remove(id).is_some())
    }

    async fn append_audit(&self, entry: &AuditEntry) -> Result<(), Error> {
        self.state().audit.push(entry.clone());
        Ok(())
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>, Error> {
        let state = self.state();
        let mut found: Vec<AuditEntry> = state
            .audit
            .iter()
            .filter(|e| filter.accepts(e))
            .cloned()
            .collect();
        found.sort_by_key(|e| e.at);
        found.truncate(filter.effective_limit());
        Ok(found)
    }

    async fn publish(&self, event: &Event) -> Result<(), Error> {
        // No subscribers is not an error: nobody is listening yet.
        let _ = self.events.send(event.clone());
        Ok(())
    }

    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}
