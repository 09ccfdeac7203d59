//! Session leases, closed sessions and idempotency keys. Each command touches one key (the
//! lease index is one sorted set under its own hash tag), so no script is needed and the
//! layout holds on Redis Cluster.
//!
//! A closed session is marked in its question set of every bucket (the member [`CLOSED`]), the
//! key a question's insert script touches anyway: the insert refuses in the same step, and an
//! ask costs no command more than before (`tests/it/command_budget.rs`). Closing is rare; it
//! writes the mark into all 16 buckets.

use super::RedisStore;
use super::keys::BUCKETS;
use crate::store::{Idempotency, Result, Sessions};
use askbridge_core::Millis;
use async_trait::async_trait;
use std::time::Duration;

/// The member marking a session's question set closed (ids never start with `!`).
const CLOSED: &str = "!closed";

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
        // closes the session again, harmlessly. The set keeps its own (longer) life when it has
        // one; a set made by the mark lives `keep`.
        let keep = keep.as_millis().max(1) as u64;
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            let set = self.keys.session(bucket, session);
            pipe.cmd("SADD").arg(&set).arg(CLOSED).ignore();
            pipe.cmd("PEXPIRE").arg(&set).arg(keep).arg("NX").ignore();
            pipe.cmd("PEXPIRE").arg(&set).arg(keep).arg("GT").ignore();
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
            let set = self.keys.session(bucket, session);
            pipe.cmd("SREM").arg(set).arg(CLOSED).ignore();
        }
        let _: () = self.query_pipe("reopen session", &pipe).await?;
        Ok(())
    }

    async fn session_closed(&self, session: &str) -> Result<bool> {
        // Any bucket says it: a close marks them all (and a close cut short is retried by the
        // lapsed lease's sweep).
        let mut command = redis::cmd("SISMEMBER");
        command.arg(self.keys.session(0, session)).arg(CLOSED);
        let found: i64 = self.query("session closed", &command).await?;
        Ok(found == 1)
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
