//! Runs, rules, the audit trail, dedupe, events and administration, in memory.

use super::MemoryStore;
use crate::store::{
    Admin, AuditLog, Dedupe, Event, EventKind, Events, Inserted, Leases, Page, Parked, Result,
    Rules, Runs, Saved,
};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Acquire, Run, RunState};
use askbridge_core::{Millis, Question, QuestionId, Rule, RuleId, RunId};
use async_trait::async_trait;
use std::time::Duration;
use tokio::sync::broadcast;

#[async_trait]
impl Leases for MemoryStore {
    async fn hold_lease(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool> {
        Ok(self.leases.hold(name, owner, ttl))
    }

    async fn release_lease(&self, name: &str, owner: &str) -> Result<()> {
        self.leases.release(name, owner);
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
            if state.insert_question(question) == Inserted::Taken {
                return Ok(Parked::QuestionTaken);
            }
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
        let _ = self.events.send(Event::Rule {
            kind: EventKind::RuleCreated,
            rule: rule.clone(),
        });
        Ok(())
    }

    async fn rules(&self) -> Result<Vec<Rule>> {
        Ok(self.state().rules.values().cloned().collect())
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        let removed = self.state().rules.remove(id);
        if let Some(rule) = &removed {
            let _ = self.events.send(Event::Rule {
                kind: EventKind::RuleRevoked,
                rule: rule.clone(),
            });
        }
        Ok(removed)
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
        let found: Vec<AuditEntry> = state
            .audit
            .iter()
            .filter(|e| filter.accepts(e))
            .cloned()
            .collect();
        Ok(filter.page(found))
    }
}

impl Events for MemoryStore {
    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}

#[async_trait]
impl crate::store::Listings for MemoryStore {
    async fn list_runs(&self, filter: &crate::store::RunFilter) -> Result<Page<Run>> {
        let state = self.state();
        Ok(crate::store::page_of(state.runs.values().cloned(), filter))
    }

    async fn rules_page(
        &self,
        after: Option<&crate::store::Cursor>,
        limit: usize,
    ) -> Result<Page<Rule>> {
        let rules: Vec<Rule> = self.state().rules.values().cloned().collect();
        Ok(crate::store::rules_page_of(rules, after, limit))
    }

    async fn history(&self, filter: &crate::store::HistoryFilter) -> Result<Page<Question>> {
        Ok(filter.page(self.state().questions.values().cloned()))
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
        let audit_retention = self.options.audit_retention;
        state.audit.retain(|e| e.at.after(audit_retention) > now);
        state.runs.retain(|_, run| {
            !(run.state.is_final() && run.reported && run.updated_at.after(retention) <= now)
        });
        Ok(old.len())
    }
}
