//! Session leases, closed sessions and idempotency keys. Each command touches one key (the
//! lease index is one sorted set under its own hash tag), so no script is needed and the
//! layout holds on Redis Cluster.
//!
//! A closed session is marked in every bucket (`P:{bNN}:closed:<session>`), so that the insert
//! script of a question, in its bucket, reads the mark in the same step as it checks the id:
//! one `EXISTS` of both (`lua/insert.lua`), and an ask costs no command more
//! (`tests/it/command_budget.rs`). Closing is rare; it writes the mark into all 16 buckets.
//!
//! An askbridge before this one marked a closed session with the member [`LEGACY_CLOSED`] of its
//! question set. That mark is still read here ([`Sessions::session_closed`], so `askbridge exec`
//! does not renew such a session) and taken off by a reopen, but an insert no longer reads it: a
//! plain ask into a session closed before the upgrade is accepted.

use super::RedisStore;
use super::keys::BUCKETS;
use crate::store::{Idempotency, Result, Sessions};
use askbridge_core::Millis;
use async_trait::async_trait;
use std::time::Duration;

/// The member an older askbridge added to a closed session's question set (ids never start with
/// `!`).
const LEGACY_CLOSED: &str = "!closed";

#[async_trait]
impl Sessions for RedisStore {
    async fn hold_session(&self, session: &str, until: Millis) -> Result<()> {
        let mut command = redis::cmd("ZADD");
        command
            .arg(self.keys.session_leases())
            .arg(until.0)
            .arg(session);
        let _: i64 = self.query("hold session", &command).await?;
        Ok(())
    }

    async fn close_session(&self, session: &str, keep: Duration) -> Result<()> {
        // Marked closed first: a crash between the two leaves a lapsing lease, whose sweep
        // closes the session again, harmlessly.
        let keep = keep.as_millis().max(1) as u64;
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("SET")
                .arg(self.keys.closed(bucket, session))
                .arg(1)
                .arg("PX")
                .arg(keep)
                .ignore();
        }
        let _: () = self.query_pipe("close session", &pipe).await?;
        let mut unlease = redis::cmd("ZREM");
        unlease.arg(self.keys.session_leases()).arg(session);
        let _: i64 = self.query("close session", &unlease).await?;
        Ok(())
    }

    async fn reopen_session(&self, session: &str) -> Result<()> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("DEL")
                .arg(self.keys.closed(bucket, session))
                .ignore();
            pipe.cmd("SREM")
                .arg(self.keys.session(bucket, session))
                .arg(LEGACY_CLOSED)
                .ignore();
        }
        let _: () = self.query_pipe("reopen session", &pipe).await?;
        Ok(())
    }

    async fn session_closed(&self, session: &str) -> Result<bool> {
        // Any bucket says it: a close marks them all (and a close cut short is retried by the
        // lapsed lease's sweep).
        let mut pipe = redis::pipe();
        pipe.cmd("EXISTS").arg(self.keys.closed(0, session));
        pipe.cmd("SISMEMBER")
            .arg(self.keys.session(0, session))
            .arg(LEGACY_CLOSED);
        let (closed, legacy): (i64, i64) = self.query_pipe("session closed", &pipe).await?;
        Ok(closed == 1 || legacy == 1)
    }

    async fn lapsed_sessions(&self, now: Millis, limit: usize) -> Result<Vec<String>> {
        let mut command = redis::cmd("ZRANGEBYSCORE");
        command
            .arg(self.keys.session_leases())
            .arg("-inf")
            .arg(format!("({}", now.0))
            .arg("LIMIT")
            .arg(0)
            .arg(limit);
        self.query("lapsed sessions", &command).await
    }
}

#[async_trait]
impl Idempotency for RedisStore {
    async fn remember_key(&self, key: &str, value: &str, ttl: Duration) -> Result<Option<String>> {
        let redis_key = self.keys.idempotency(key);
        // SET NX, then GET when it was there: two commands (SET's NX with GET needs Redis 7),
        // retried in the rare case the key expires between them.
        for _ in 0..3 {
            let mut set = redis::cmd("SET");
            set.arg(&redis_key)
                .arg(value)
                .arg("NX")
                .arg("PX")
                .arg(ttl.as_millis().max(1) as u64);
            let stored: Option<String> = self.query("remember key", &set).await?;
            if stored.is_some() {
                return Ok(None);
            }
            let mut get = redis::cmd("GET");
            get.arg(&redis_key);
            if let Some(held) = self.query::<Option<String>>("remember key", &get).await? {
                return Ok(Some(held));
            }
        }
        Err(crate::store::Error::new(
            crate::store::ErrorKind::Unavailable,
            "an idempotency key kept expiring while it was read",
        ))
    }

    async fn replace_key(&self, key: &str, value: &str, ttl: Duration) -> Result<()> {
        let mut set = redis::cmd("SET");
        set.arg(self.keys.idempotency(key))
            .arg(value)
            .arg("PX")
            .arg(ttl.as_millis().max(1) as u64);
        let _: Option<String> = self.query("replace key", &set).await?;
        Ok(())
    }

    async fn forget_key(&self, key: &str) -> Result<()> {
        let mut command = redis::cmd("DEL");
        command.arg(self.keys.idempotency(key));
        let _: i64 = self.query("forget key", &command).await?;
        Ok(())
    }
}
