//! Session leases, closed sessions and idempotency keys (see [`crate::store::Sessions`] and
//! [`crate::store::Idempotency`]); expired entries go in `Admin::purge`.

use super::EmbeddedStore;
use super::tables::{IDEMPOTENCY, SESSION_LEASE_AT, SESSION_LEASES, SESSIONS_CLOSED};
use crate::store::{Idempotency, Result, Sessions};
use askbridge_core::Millis;
use async_trait::async_trait;
use redb::{ReadableTable, WriteTransaction};
use std::time::Duration;

/// Takes `session` out of the lease index.
fn unlease(txn: &WriteTransaction, session: &str) -> Result<()> {
    let mut at = txn.open_table(SESSION_LEASE_AT)?;
    if let Some(old) = at.remove(session)? {
        txn.open_table(SESSION_LEASES)?
            .remove((old.value(), session))?;
    }
    Ok(())
}

/// True when `session` is closed (in `txn`, so that a question's insert checks atomically).
pub(super) fn closed(txn: &WriteTransaction, session: &str) -> Result<bool> {
    let closed = txn.open_table(SESSIONS_CLOSED)?;
    let until = closed.get(session)?.map(|v| v.value());
    Ok(until.is_some_and(|until| until > Millis::now().0))
}

#[async_trait]
impl Sessions for EmbeddedStore {
    async fn hold_session(&self, session: &str, until: Millis) -> Result<()> {
        let session = session.to_owned();
        self.write(move |txn| {
            unlease(txn, &session)?;
            txn.open_table(SESSION_LEASE_AT)?
                .insert(session.as_str(), until.0)?;
            txn.open_table(SESSION_LEASES)?
                .insert((until.0, session.as_str()), ())?;
            Ok(())
        })
        .await
    }

    async fn close_session(&self, session: &str, keep: Duration) -> Result<()> {
        let session = session.to_owned();
        self.write(move |txn| {
            unlease(txn, &session)?;
            txn.open_table(SESSIONS_CLOSED)?
                .insert(session.as_str(), Millis::now().after(keep).0)?;
            Ok(())
        })
        .await
    }

    async fn reopen_session(&self, session: &str) -> Result<()> {
        let session = session.to_owned();
        self.write(move |txn| {
            txn.open_table(SESSIONS_CLOSED)?.remove(session.as_str())?;
            Ok(())
        })
        .await
    }

    async fn session_closed(&self, session: &str) -> Result<bool> {
        let session = session.to_owned();
        self.read(move |txn| {
            let closed = txn.open_table(SESSIONS_CLOSED)?;
            let until = closed.get(session.as_str())?.map(|v| v.value());
            Ok(until.is_some_and(|until| until > Millis::now().0))
        })
        .await
    }

    async fn lapsed_sessions(&self, now: Millis, limit: usize) -> Result<Vec<String>> {
        self.read(move |txn| {
            let leases = txn.open_table(SESSION_LEASES)?;
            let mut lapsed = Vec::new();
            for entry in leases.range((0, "")..(now.0, ""))?.take(limit) {
                let (key, _) = entry?;
                lapsed.push(key.value().1.to_owned());
            }
            Ok(lapsed)
        })
        .await
    }
}

#[async_trait]
impl Idempotency for EmbeddedStore {
    async fn remember_key(&self, key: &str, value: &str, ttl: Duration) -> Result<Option<String>> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.write(move |txn| {
            let now = Millis::now();
            let mut keys = txn.open_table(IDEMPOTENCY)?;
            let held = keys.get(key.as_str())?.and_then(|v| {
                let (until, held) = v.value();
                (until > now.0).then(|| held.to_owned())
            });
            if held.is_none() {
                keys.insert(key.as_str(), (now.after(ttl).0, value.as_str()))?;
            }
            Ok(held)
        })
        .await
    }

    async fn replace_key(&self, key: &str, value: &str, ttl: Duration) -> Result<()> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.write(move |txn| {
            let until = Millis::now().after(ttl).0;
            txn.open_table(IDEMPOTENCY)?
                .insert(key.as_str(), (until, value.as_str()))?;
            Ok(())
        })
        .await
    }

    async fn forget_key(&self, key: &str) -> Result<()> {
        let key = key.to_owned();
        self.write(move |txn| {
            txn.open_table(IDEMPOTENCY)?.remove(key.as_str())?;
            Ok(())
        })
        .await
    }
}
