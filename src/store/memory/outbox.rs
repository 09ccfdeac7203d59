//! Where questions were shown, the outbox (the open index: see `crate::store`) and delivery
//! dedupe, in memory.

use super::MemoryStore;
use crate::store::{Dedupe, Deliveries, Outbox, Result, Shown, Sighting, Work};
use askbridge_core::{Millis, Question, QuestionId};
use async_trait::async_trait;
use std::time::Duration;

#[async_trait]
impl Deliveries for MemoryStore {
    async fn record_shown(&self, id: &QuestionId, shown: &Shown, due_at: Millis) -> Result<bool> {
        let mut state = self.state();
        let list = state.shown.entry(id.clone()).or_default();
        list.retain(|s| s.target != shown.target);
        list.push(shown.clone());
        let resolved = state.is_resolved(id);
        if resolved {
            state.set_due_by(id, due_at);
        }
        Ok(resolved)
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
        shown_seen: Option<usize>,
    ) -> Result<()> {
        let mut state = self.state();
        state
            .effects
            .entry(id.clone())
            .or_default()
            .extend(done.iter().cloned());
        let shown = state.shown.get(id).map_or(0, Vec::len);
        match retry_at {
            Some(at) => state.set_due(id, at),
            // Shown somewhere the caller did not see: left due, as `record_shown` made it.
            None if shown_seen.is_some_and(|seen| shown > seen) => {}
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

    async fn take_in_hand(&self, key: &str, lease: Duration) -> Result<Sighting> {
        let now = Millis::now();
        let mut state = self.state();
        if state.seen.get(key).is_some_and(|until| *until > now) {
            return Ok(Sighting::Handled);
        }
        if state.in_hand.get(key).is_some_and(|until| *until > now) {
            return Ok(Sighting::InHand);
        }
        state.in_hand.insert(key.to_owned(), now.after(lease));
        Ok(Sighting::First)
    }

    async fn settle(&self, key: &str, ttl: Duration) -> Result<()> {
        let mut state = self.state();
        state.in_hand.remove(key);
        state.seen.insert(key.to_owned(), Millis::now().after(ttl));
        Ok(())
    }

    async fn forget(&self, key: &str) -> Result<()> {
        let mut state = self.state();
        state.seen.remove(key);
        state.in_hand.remove(key);
        Ok(())
    }
}
