//! The one place that talks to Redis: every command, pipeline and script goes through
//! [`RedisStore::query`], [`RedisStore::query_pipe`] or [`RedisStore::invoke`], which retry
//! connection errors with backoff (Redis restarting, a dropped connection) and turn what is left
//! into the store's [`Error`].

use super::RedisStore;
use crate::store::{Error, Result};
use askbridge_core::error::Chain;
use redis::{Cmd, FromRedisValue, Pipeline, RedisError, RetryMethod, ScriptInvocation};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Attempts for an operation hitting connection errors: about 1.6 s of them with [`BACKOFF`].
const ATTEMPTS: u32 = 8;

/// The longest pause between attempts. Short, because a pause outlasts what it waited for: after
/// a cluster's failover (or a restart) an operation asleep for a second answers up to a second
/// after Redis is back, and the failover's goal is every ask answered within a second of the
/// promotion. A retry costs one round trip.
const BACKOFF: Duration = Duration::from_millis(250);

/// How long an operation waits for a Redis that says it is not ready yet (LOADING its dataset
/// after a restart, TRYAGAIN, MASTERDOWN): a large dataset takes seconds to load, and a 503 for
/// each of those seconds would be a needless outage.
const PATIENCE: Duration = Duration::from_secs(10);

fn is_transient(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_timeout()
}

/// Redis answered that it is busy getting ready, or (on a cluster) that a slot is elsewhere and
/// the client's redirects ran out: during a failover a node sends to the dead master until the
/// replica is promoted. Neither ran the command, so sending it again is safe.
fn is_not_ready(error: &RedisError) -> bool {
    matches!(
        error.retry_method(),
        RetryMethod::WaitAndRetry
            | RetryMethod::MovedRedirect
            | RetryMethod::AskRedirect
            | RetryMethod::RefreshSlotsAndRetry
    )
}

/// Wakes the operations pausing between attempts once one of them got through after failing:
/// Redis is back (restarted, or a failed-over slot's replica promoted), and the others need not
/// sleep out their pauses. Without it, the asks in flight when a replica was promoted answered
/// a random part of a retry's cycle later — up to [`BACKOFF`] of `retrying`'s pause plus the
/// cluster client's own — the 0.5-0.65 s tail after each promotion of issue 37. A wake-up from
/// another master's comeback costs an operation one early attempt.
#[derive(Clone, Default)]
pub(super) struct Recovery(Arc<Notify>);

/// Runs `operation` again on connection errors, backing off from 50 ms to [`BACKOFF`] (or until
/// another operation of the store gets through after failing, see [`Recovery`]); `retried`
/// hears of each attempt that failed and is made again.
async fn retrying<T, F, Fut>(
    what: &'static str,
    recovery: &Recovery,
    retried: &(dyn Fn() + Sync),
    mut operation: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = redis::RedisResult<T>>,
{
    let mut delay = Duration::from_millis(50);
    let mut attempt = 1;
    let started = Instant::now();
    loop {
        match operation().await {
            Ok(value) => {
                if attempt > 1 {
                    recovery.0.notify_waiters();
                }
                return Ok(value);
            }
            Err(error)
                if (is_transient(&error) && attempt < ATTEMPTS)
                    || (is_not_ready(&error) && started.elapsed() < PATIENCE) =>
            {
                tracing::debug!(error = %Chain(&error), attempt, "redis {what} failed; retrying");
                retried();
                let back = recovery.0.notified();
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = back => {}
                }
                delay = (delay * 2).min(BACKOFF);
                attempt += 1;
            }
            Err(error) => return Err(Error::unavailable(format!("redis {what}"), error)),
        }
    }
}

impl RedisStore {
    /// An operation failed and is made again: on a cluster, the topology may be changing, so
    /// the replica waits check their masters' replicas before their next rounds.
    fn troubled(&self) {
        if let Some(waits) = &self.waits {
            waits.suspect_all();
        }
    }

    /// Sends one command.
    pub(super) async fn query<T: FromRedisValue>(
        &self,
        what: &'static str,
        command: &Cmd,
    ) -> Result<T> {
        let started = Instant::now();
        let reply = retrying(what, &self.recovery, &|| self.troubled(), || {
            let mut connection = self.connection();
            async move { command.query_async(&mut connection).await }
        })
        .await;
        self.round_trips.observe(what, started.elapsed());
        reply
    }

    /// Sends a pipeline (one round trip).
    pub(super) async fn query_pipe<T: FromRedisValue>(
        &self,
        what: &'static str,
        pipe: &Pipeline,
    ) -> Result<T> {
        // Nothing to send (a page of no items): the client refuses an empty pipeline ("empty
        // command"), which answered `/api/runs` with 503 on a store without runs.
        if pipe.is_empty() {
            return T::from_redis_value(redis::Value::Array(Vec::new()))
                .map_err(|e| Error::corrupt("an empty reply", e));
        }
        let started = Instant::now();
        let reply = retrying(what, &self.recovery, &|| self.troubled(), || {
            let mut connection = self.connection();
            async move {
                let reply = connection.pipeline(pipe).await?;
                T::from_redis_value(reply).map_err(Into::into)
            }
        })
        .await;
        self.round_trips.observe(what, started.elapsed());
        reply
    }

    /// Runs a script (by SHA, loading it on NOSCRIPT). One that had to be sent again may have
    /// run before, announcing events this store tagged and did not deliver: its waiters recheck.
    pub(super) async fn invoke<T: FromRedisValue>(
        &self,
        what: &'static str,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T> {
        let started = Instant::now();
        let mut attempts = 0;
        let reply = retrying(what, &self.recovery, &|| self.troubled(), || {
            attempts += 1;
            let mut connection = self.connection();
            async move { invocation.invoke_async(&mut connection).await }
        })
        .await;
        self.round_trips.observe(what, started.elapsed());
        if attempts > 1 {
            self.may_have_missed();
        }
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::{ErrorKind, ServerErrorKind};
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_loading_redis_is_waited_for() {
        let calls = AtomicU32::new(0);
        let loaded = retrying("get", &Recovery::default(), &|| {}, || {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if call < ATTEMPTS + 1 {
                    Err(RedisError::from((
                        ErrorKind::Server(ServerErrorKind::BusyLoading),
                        "Redis is loading the dataset in memory",
                    )))
                } else {
                    Ok(7)
                }
            }
        })
        .await;
        assert_eq!(loaded.unwrap(), 7, "more tries than connection errors get");
        let refused: Result<()> = retrying("get", &Recovery::default(), &|| {}, || async {
            Err(RedisError::from((
                ErrorKind::Server(ServerErrorKind::ResponseError),
                "ERR wrong",
            )))
        })
        .await;
        assert!(refused.is_err());
    }
}
