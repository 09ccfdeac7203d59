//! Where questions were shown, and the outbox (effects still to do, deadlines to keep), in
//! Redis. Finishing a resolution's effects is one script.

use super::RedisStore;
use super::codec::work_of;
use super::keys::{BUCKETS, question_bucket};
use super::scripts::{FINISH, LEASE, MARK_EFFECT, RECORD_SHOWN};
use crate::store::{Dedupe, Deliveries, Error, Outbox, Result, Shown, Sighting, Work};
use askbridge_core::{Millis, Question, QuestionId};
use async_trait::async_trait;
use std::time::Duration;

/// What a delivery key holds while its delivery is in someone's hand.
const IN_HAND: &str = "in-hand";
/// How many open ids one scan page asks for (see `open_ids`).
const OPEN_IDS_PAGE: usize = 10_000;

fn parse_ids(ids: &[String], index: &str) -> Result<Vec<QuestionId>> {
    ids.iter()
        .map(|id| QuestionId::parse(id).map_err(|e| Error::corrupt(index, e)))
        .collect()
}

#[async_trait]
impl Deliveries for RedisStore {
    async fn record_shown(&self, id: &QuestionId, shown: &Shown, due_at: Millis) -> Result<bool> {
        let mut invocation = RECORD_SHOWN.prepare_invoke();
        invocation
            .key(self.keys.shown(id.as_str()))
            .key(self.keys.question(id.as_str()))
            .key(self.keys.open(question_bucket(id.as_str())))
            .arg(shown.target.as_str())
            .arg(&shown.reference)
            .arg(id.as_str())
            .arg(due_at.0);
        self.invoke::<i64>("record_shown", &invocation)
            .await
            .map(|resolved| resolved == 1)
    }

    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>> {
        Ok(self.work(id).await?.shown)
    }
}

#[async_trait]
impl Outbox for RedisStore {
    async fn mark_effect(&self, id: &QuestionId, effect: &str) -> Result<bool> {
        let mut invocation = MARK_EFFECT.prepare_invoke();
        invocation
            .key(self.keys.effects(id.as_str()))
            .key(self.keys.question(id.as_str()))
            .arg(effect);
        let added: i64 = self.invoke("mark effect", &invocation).await?;
        Ok(added == 1)
    }

    async fn work(&self, id: &QuestionId) -> Result<Work> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL")
            .arg(self.keys.shown(id.as_str()))
            .cmd("SMEMBERS")
            .arg(self.keys.effects(id.as_str()));
        let (shown, done): (Vec<String>, Vec<String>) = self.query_pipe("work", &pipe).await?;
        Ok(work_of(shown, done))
    }

    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>> {
        // One script per bucket, each in its bucket's slot, sent together: on one node they
        // share the connection's pipeline, on a cluster they run on their masters at once.
        let leases = (0..BUCKETS).map(|bucket| async move {
            let mut invocation = LEASE.prepare_invoke();
            invocation
                .key(self.keys.open(bucket))
                .arg(now.0)
                .arg(now.after(lease).0)
                .arg(limit);
            let ids: Vec<String> = self.invoke("lease", &invocation).await?;
            parse_ids(&ids, "the open index")
        });
        let due = futures_util::future::try_join_all(leases).await?;
        Ok(due.into_iter().flatten().collect())
    }

    async fn next_due(&self) -> Result<Option<Millis>> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("ZRANGE")
                .arg(self.keys.open(bucket))
                .arg(0)
                .arg(0)
                .arg("WITHSCORES");
        }
        let firsts: Vec<Vec<(String, f64)>> = self.query_pipe("next due", &pipe).await?;
        Ok(firsts
            .into_iter()
            .flatten()
            .map(|(_, score)| Millis(score as u64))
            .min())
    }

    /// A bucket and a scan page (`ZSCAN … COUNT`) at a time: with a million open, one read of
    /// them all (16 whole `ZRANGE`s) kept Redis, and this process parsing the reply, from
    /// answering anything else for over a second while a restarted process recovered; between
    /// scan pages other commands run.
    async fn open_ids(&self) -> Result<Vec<QuestionId>> {
        let mut ids = std::collections::BTreeSet::new();
        for bucket in 0..BUCKETS {
            let mut cursor = 0u64;
            loop {
                let (next, page) = self
                    .scan_page(&self.keys.open(bucket), cursor, OPEN_IDS_PAGE)
                    .await?;
                // A scan may return a member twice.
                ids.extend(page.into_iter().map(|(id, _)| id));
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        parse_ids(&ids.into_iter().collect::<Vec<_>>(), "the open index")
    }

    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<()> {
        let mut command = redis::cmd("ZADD");
        command
            .arg(self.keys.open(question_bucket(id.as_str())))
            .arg(at.0)
            .arg(id.as_str());
        self.query::<i64>("reschedule", &command).await.map(drop)
    }

    async fn finish(
        &self,
        id: &QuestionId,
        question: Option<&Question>,
        done: &[String],
        retry_at: Option<Millis>,
        shown_seen: Option<usize>,
    ) -> Result<()> {
        let id = id.as_str();
        let bucket = question_bucket(id);
        let mut invocation = FINISH.prepare_invoke();
        invocation
            .key(self.keys.effects(id))
            .key(self.keys.question(id))
            .key(self.keys.open(bucket))
            .key(self.keys.pending(bucket))
            .key(self.keys.shown(id));
        for target in &question.map(Question::all_targets).unwrap_or_default() {
            invocation.key(self.keys.target(bucket, target.as_str()));
        }
        invocation
            .arg(id)
            .arg(retry_at.map(|at| at.0.to_string()).unwrap_or_default())
            .arg(shown_seen.map(|n| n.to_string()).unwrap_or_default());
        for effect in done {
            invocation.arg(effect);
        }
        self.invoke::<i64>("finish", &invocation).await.map(drop)
    }
}

#[async_trait]
impl Dedupe for RedisStore {
    async fn first_sighting(&self, key: &str, ttl: Duration) -> Result<bool> {
        let mut command = redis::cmd("SET");
        command
            .arg(self.keys.seen(key))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis() as u64);
        let set: Option<String> = self.query("set nx", &command).await?;
        Ok(set.is_some())
    }

    async fn take_in_hand(&self, key: &str, lease: Duration) -> Result<Sighting> {
        // One key, one command (`SET … NX GET`, Redis 7): the mark a settled or first-sighted
        // delivery holds is anything but `IN_HAND`.
        let mut command = redis::cmd("SET");
        command
            .arg(self.keys.seen(key))
            .arg(IN_HAND)
            .arg("NX")
            .arg("PX")
            .arg(lease.as_millis().max(1) as u64)
            .arg("GET");
        let held: Option<String> = self.query("take in hand", &command).await?;
        Ok(match held.as_deref() {
            None => Sighting::First,
            Some(IN_HAND) => Sighting::InHand,
            Some(_) => Sighting::Handled,
        })
    }

    async fn settle(&self, key: &str, ttl: Duration) -> Result<()> {
        let mut command = redis::cmd("SET");
        command
            .arg(self.keys.seen(key))
            .arg(1)
            .arg("PX")
            .arg(ttl.as_millis().max(1) as u64);
        self.query::<Option<String>>("settle", &command)
            .await
            .map(drop)
    }

    async fn forget(&self, key: &str) -> Result<()> {
        let mut command = redis::cmd("DEL");
        command.arg(self.keys.seen(key));
        self.query::<i64>("del", &command).await.map(drop)
    }
}
