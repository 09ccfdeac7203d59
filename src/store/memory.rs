//! The in-memory store: a mutex around maps. Fast and simple, and gone when the process exits, so
//! it serves tests and `--ephemeral` runs only; start-up says so.

use super::{
    Admin, AuditLog, ClaimOptions, Claimed, Counts, Dedupe, Deliveries, EVENT_BUFFER, Event,
    Events, FINAL, Inserted, ListFilter, Outbox, Parked, Questions, Result, Rules, Runs, Saved,
    Shown, StoreOptions, Work,
};
use askbridge_core::Status;
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Acquire, Run, RunState};
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId, Rule, RuleId, RunId};
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

#[async_trait]
impl Questions for MemoryStore {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        {
            let mut state = self.state();
            if state.questions.contains_key(&question.id) {
                return Ok(Inserted::Taken);
            }
            state
                .questions
                .insert(question.id.clone(), question.clone());
            state.set_due(&question.id, question.expires_at);
        }
        self.announce(question);
        Ok(Inserted::Created)
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
        let claimed = {
            let mut state = self.state();
            let Some(question) = state.questions.get_mut(&snapshot.id) else {
                return Ok(None);
            };
            let outcome = question.apply(claim);
            let question = question.clone();
            let mut run = None;
            let mut finished = false;
            if outcome != ClaimOutcome::AlreadyResolved {
                state.audit.push(AuditEntry::resolved(&question));
                state.set_due(&question.id, Millis::now().after(options.settle_after));
                if let (Some(take), Some(run_id)) = (options.take_run, &question.run_id) {
                    if let Some(stored) = state.runs.get_mut(run_id) {
                        let why = Acquire::Answer(&question.id);
                        if stored.acquire(why, take.owner, claim.at, take.lease_until) {
                            run = Some(stored.clone());
                        }
                    }
                }
            }
            let work = state.work(&question.id);
            if outcome != ClaimOutcome::AlreadyResolved
                && Claimed::idle(&question, &work, run.is_some(), &options)
            {
                state.remove_due(&question.id);
                finished = true;
            }
            Claimed {
                outcome,
                work,
                question,
                run,
                finished,
            }
        };
        if claimed.outcome != ClaimOutcome::AlreadyResolved {
            self.announce(&claimed.question);
        }
        Ok(Some(claimed))
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
            if let Some(slot) = FINAL.iter().position(|s| *s == question.status) {
                if resolution.at >= since {
                    counts.resolved[slot] += 1;
                }
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

#[async_trait]
impl Dedupe for MemoryStore {
    async fn first_sighting(&self, key: &str, ttl: Duration) -> Result<bool> {
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
}

#[async_trait]
impl Runs for MemoryStore {
    async fn insert_run(&self, run: &Run) -> Result<Inserted> {
        let mut state = self.state();
        if state.runs.contains_key(&run.id) {
            return Ok(Inserted::Taken);
        }
        state.runs.insert(run.id.clone(), run.clone());
        Ok(Inserted::Created)
    }

    async fn get_run(&self, id: &RunId) -> Result<Option<Run>> {
        Ok(self.state().runs.get(id).cloned())
    }

    async fn acquire_run(
        &self,
        id: &RunId,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>> {
        let mut state = self.state();
        let Some(run) = state.runs.get_mut(id) else {
            return Ok(None);
        };
        Ok(run
            .acquire(why, owner, now, lease_until)
            .then(|| run.clone()))
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<Saved> {
        let saved = {
            let mut state = self.state();
            match state.runs.get_mut(&run.id) {
                Some(stored) if stored.owner.as_deref() == Some(owner) => *stored = run.clone(),
                _ => return Ok(Saved::Lost),
            }
            let resolved =
                |id: &QuestionId| state.questions.get(id).is_some_and(|q| !q.is_pending());
            match &run.waiting_on {
                Some(id) if run.state == RunState::Waiting && resolved(id) => {
                    Saved::WaitsOnResolved
                }
                _ => Saved::Written,
            }
        };
        if let Some(event) = Event::of_run(run) {
            let _ = self.events.send(event);
        }
        Ok(saved)
    }

    async fn park_run(&self, run: &Run, owner: &str, question: &Question) -> Result<Parked> {
        {
            let mut state = self.state();
            let held = state
                .runs
                .get(&run.id)
                .is_some_and(|stored| stored.owner.as_deref() == Some(owner));
            if !held {
                return Ok(Parked::Saved(Saved::Lost));
            }
            if state.questions.contains_key(&question.id) {
                return Ok(Parked::QuestionTaken);
            }
            state
                .questions
                .insert(question.id.clone(), question.clone());
            state.set_due(&question.id, question.expires_at);
        }
        // Announced before the run's event, as a script would: the question exists first.
        self.announce(question);
        Ok(Parked::Saved(self.save_run(run, owner).await?))
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<RunId>> {
        let state = self.state();
        Ok(state
            .runs
            .values()
            .filter(|run| run.needs_executor() && run.lease_until.is_none_or(|until| until <= now))
            .take(limit)
            .map(|run| run.id.clone())
            .collect())
    }

    async fn abandon_run(&self, id: &RunId, why: &str) -> Result<()> {
        // Records in memory always read; for completeness, end the run as failed.
        if let Some(run) = self.state().runs.get_mut(id) {
            run.state = askbridge_core::run::RunState::Failed;
            run.result = Some(why.to_owned());
            run.reported = true;
        }
        Ok(())
    }
}

#[async_trait]
impl Rules for MemoryStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        self.state().rules.insert(rule.id.clone(), rule.clone());
        Ok(())
    }

    async fn rules(&self) -> Result<Vec<Rule>> {
        Ok(self.state().rules.values().cloned().collect())
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        Ok(self.state().rules.remove(id))
    }
}

#[async_trait]
impl AuditLog for MemoryStore {
    async fn append_audit(&self, entry: &AuditEntry) -> Result<()> {
        self.state().audit.push(entry.clone());
        Ok(())
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
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
        state.seen.retain(|_, until| *until > now);
        let audit_retention = self.options.audit_retention;
        state.audit.retain(|e| e.at.after(audit_retention) > now);
        state.runs.retain(|_, run| {
            !(run.state.is_final() && run.reported && run.updated_at.after(retention) <= now)
        });
        Ok(old.len())
    }
}
