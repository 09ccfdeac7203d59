//! A session's pending questions, indexed on their own so that its pending page — and the search
//! a session-scoped rule makes for the pending approvals it decides — reads that page, not every
//! id the session ever had (the set `P:{bNN}:session:<session>` an older askbridge wrote: with a
//! million in one session, the first page took 18.9 s). Its resolved questions have an index of
//! their own per outcome, which the claim script writes (`claim.lua`, read in `listings.rs`).
//!
//! The index is kept eagerly, not trimmed lazily while paging: a session's pending index
//! (`P:{bNN}:session-pending:<session>`) lives in its bucket, under the same hash tag as the
//! question, so the insert script adds the id and the claim script (the only way a question
//! leaves pending) removes it in the same atomic step, on Redis Cluster too. A lazily trimmed
//! index would make the first page after many resolutions read them all.
//!
//! The index has no TTL, as the pending index has none: an id leaves it by its claim, and Redis
//! deletes the set when its last id leaves. (It had one at first, read and extended by every ask:
//! one command of the script's more, 6 % of what Redis did per ask and answer.)
//!
//! Questions stored before the index existed are entered once, on connect, a bucket at a time
//! (marked done per bucket with `P:{bNN}:sessions-indexed` = [`INDEXED`]); a bucket marked by an
//! askbridge whose index had a TTL is done again, and takes the TTL off. The memory store (tests
//! only) stays as it is.

use super::RedisStore;
use super::keys::BUCKETS;
use crate::store::Result;

/// How many pending ids one scan page of the older questions enters.
const PAGE: usize = 1_000;
/// The mark of a bucket done: `2` since the index has no TTL (an older askbridge wrote `1`).
const INDEXED: &str = "2";

/// The session of a question as stored (its `q` field).
#[derive(serde::Deserialize)]
struct Asked {
    session_id: String,
}

impl RedisStore {
    /// Enters the pending questions stored before the session's pending index in it, in each
    /// bucket not yet marked done. Returns how many were entered.
    pub(super) async fn index_older_sessions(&self) -> Result<usize> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("GET").arg(self.keys.sessions_indexed(bucket));
        }
        let marks: Vec<Option<String>> = self.query_pipe("sessions indexed", &pipe).await?;
        let mut entered = 0;
        for bucket in (0..BUCKETS).filter(|b| marks[*b].as_deref() != Some(INDEXED)) {
            let mut cursor = 0u64;
            loop {
                let (next, page) = self
                    .scan_page(&self.keys.pending(bucket), cursor, PAGE)
                    .await?;
                entered += self.index_page(bucket, &page).await?;
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            let mut mark = redis::cmd("SET");
            mark.arg(self.keys.sessions_indexed(bucket)).arg(INDEXED);
            self.query::<()>("sessions indexed", &mark).await?;
        }
        if entered > 0 {
            tracing::info!(
                entered,
                "older pending questions entered in their sessions' index"
            );
        }
        Ok(entered)
    }

    /// One scan page (`ZSCAN … COUNT`) of sorted set `key` from `cursor`: the next cursor (0
    /// when done), and members with their scores (a scan may return a member twice).
    pub(super) async fn scan_page(
        &self,
        key: &str,
        cursor: u64,
        count: usize,
    ) -> Result<(u64, Vec<(String, f64)>)> {
        let mut command = redis::cmd("ZSCAN");
        command.arg(key).arg(cursor).arg("COUNT").arg(count);
        self.query("scan page", &command).await
    }

    /// Enters one scan page of `bucket`'s pending index (ids and when they were asked).
    async fn index_page(&self, bucket: usize, page: &[(String, f64)]) -> Result<usize> {
        if page.is_empty() {
            return Ok(0);
        }
        let mut pipe = redis::pipe();
        for (id, _) in page {
            pipe.hget(self.keys.question(id), "q");
        }
        let stored: Vec<Option<String>> = self.query_pipe("pending sessions", &pipe).await?;
        let mut entered = Vec::new();
        let mut pipe = redis::pipe();
        for ((id, asked), q) in page.iter().zip(stored) {
            let Some(asked_as) = q.and_then(|q| serde_json::from_str::<Asked>(&q).ok()) else {
                continue;
            };
            let key = self.keys.session_pending(bucket, &asked_as.session_id);
            pipe.zadd(&key, id, *asked as u64).ignore();
            pipe.persist(&key).ignore();
            entered.push((id, key));
        }
        let _: () = self.query_pipe("index sessions", &pipe).await?;
        // A claim that came before the entry found nothing to remove: whatever is no longer
        // pending now leaves again (a claim after the entry removed it itself).
        let mut pipe = redis::pipe();
        for (id, _) in &entered {
            pipe.hget(self.keys.question(id), "status");
        }
        let statuses: Vec<Option<String>> = self.query_pipe("index sessions", &pipe).await?;
        let mut pipe = redis::pipe();
        for ((id, key), status) in entered.iter().zip(&statuses) {
            if status.as_deref() != Some("pending") {
                pipe.zrem(key, id).ignore();
            }
        }
        let _: () = self.query_pipe("index sessions", &pipe).await?;
        Ok(entered.len())
    }
}
