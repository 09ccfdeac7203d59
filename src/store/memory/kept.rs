//! Session leases, closed sessions and idempotency keys, in a lock of their own: nothing here
//! changes together with a question.

use super::MemoryStore;
use crate::store::{Idempotency, Result, Sessions};
use askbridge_core::Millis;
use async_trait::async_trait;
use std::collections::HashMap;
use std::time::Duration;

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct Kept {
    /// Leased sessions and when their lease ends.
    leases: HashMap<String, Millis>,
    /// Closed sessions and when that may be forgotten.
    closed: HashMap<String, Millis>,
    /// Idempotency keys: what they made, and when they may be forgotten.
    keys: HashMap<String, (String, Millis)>,
    /// Expired keys are dropped when the map reaches this size (then twice what is left), so
    /// that a create does not scan every key.
    prune_at: usize,
}

impl Kept {
    fn prune_keys(&mut self, now: Millis) {
        if self.keys.len() >= self.prune_at {
            self.keys.retain(|_, (_, until)| *until > now);
            self.prune_at = (self.keys.len() * 2).max(1024);
        }
    }
}

impl MemoryStore {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl Sessions for MemoryStore {
    async fn hold_session(&self, session: &str, until: Millis) -> Result<()> {
        self.kept().leases.insert(session.to_owned(), until);
        Ok(())
    }

    async fn close_session(&self, session: &str, keep: Duration) -> Result<()> {
        let now = Millis::now();
        let mut kept = self.kept();
        kept.leases.remove(session);
        kept.closed.retain(|_, until| *until > now);
        kept.closed.insert(session.to_owned(), now.after(keep));
        Ok(())
    }

    async fn reopen_session(&self, session: &str) -> Result<()> {
        self.kept().closed.remove(session);
        Ok(())
    }

    async fn session_closed(&self, session: &str) -> Result<bool> {
        let now = Millis::now();
        Ok(self
            .kept()
            .closed
            .get(session)
            .is_some_and(|until| *until > now))
    }

    async fn lapsed_sessions(&self, now: Millis, limit: usize) -> Result<Vec<String>> {
        let kept = self.kept();
        let mut lapsed: Vec<(Millis, String)> = kept
            .leases
            .iter()
            .filter(|(_, until)| **until < now)
            .map(|(session, until)| (*until, session.clone()))
            .collect();
        lapsed.sort();
        Ok(lapsed.into_iter().take(limit).map(|(_, s)| s).collect())
    }
}

#[async_trait]
impl Idempotency for MemoryStore {
    async fn remember_key(&self, key: &str, value: &str, ttl: Duration) -> Result<Option<String>> {
        let now = Millis::now();
        let mut kept = self.kept();
        kept.prune_keys(now);
        if let Some((held, until)) = kept.keys.get(key)
            && *until > now
        {
            return Ok(Some(held.clone()));
        }
        kept.keys
            .insert(key.to_owned(), (value.to_owned(), now.after(ttl)));
        Ok(None)
    }

    async fn replace_key(&self, key: &str, value: &str, ttl: Duration) -> Result<()> {
        let until = Millis::now().after(ttl);
        self.kept()
            .keys
            .insert(key.to_owned(), (value.to_owned(), until));
        Ok(())
    }

    async fn forget_key(&self, key: &str) -> Result<()> {
        self.kept().keys.remove(key);
        Ok(())
    }
}
