//! Questions in Redis: an ask is one script, a claim one script. Where they were shown and the
//! outbox are in `outbox.rs`.

use super::RedisStore;
use super::codec::{
    ClaimReply, as_asked, assemble, assemble_run, kind_name, pairs, set_outcome, split_claim_reply,
    work_of,
};
use super::events::EVENTS_MAXLEN;
use super::keys::{BUCKETS, question_bucket, run_bucket};
use super::scripts::{CLAIM, INSERT};
use crate::store::{
    ClaimOptions, Claimed, Counts, Error, Event, EventKind, FINAL, Inserted, ListFilter, Questions,
    Result,
};
use askbridge_core::question::MAX_TIMEOUT;
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId, Status, Transition};
use async_trait::async_trait;
use redis::ScriptInvocation;
use std::time::Duration;

/// How many questions one pipelined read loads.
const LOAD_CHUNK: usize = 500;
/// Answer times each bucket keeps for the percentiles (16 buckets: about 2,000 in all). Its list
/// may hold as many older ones besides, which nobody reads: claim.lua trims it in steps.
const ANSWERS_KEPT: usize = 125;
/// How long a target's set outlives the deadline of the newest question in it.
const TARGET_GRACE: Duration = Duration::from_secs(24 * 3600);

impl RedisStore {
    /// Loads several questions by id, skipping ids whose question is gone.
    pub(super) async fn load_many(&self, ids: &[String]) -> Result<Vec<Question>> {
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(LOAD_CHUNK) {
            let mut pipe = redis::pipe();
            for id in chunk {
                pipe.cmd("HMGET")
                    .arg(self.keys.question(id))
                    .arg("q")
                    .arg("status")
                    .arg("res")
                    .arg("votes");
            }
            type Row = (
                Option<String>,
                Option<String>,
                Option<String>,
                Option<String>,
            );
            let rows: Vec<Row> = self.query_pipe("load", &pipe).await?;
            for row in rows {
                if let (Some(json), Some(status), res, votes) = row {
                    found.push(assemble(&json, &status, res.as_deref(), votes.as_deref())?);
                }
            }
        }
        Ok(found)
    }

    /// The members of one set in every bucket.
    pub(super) async fn members_everywhere(
        &self,
        key: impl Fn(usize) -> String,
    ) -> Result<Vec<String>> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("SMEMBERS").arg(key(bucket));
        }
        let sets: Vec<Vec<String>> = self.query_pipe("smembers", &pipe).await?;
        // Members starting with `!` are markers (a closed session's `!closed`), not ids.
        Ok(sets
            .into_iter()
            .flatten()
            .filter(|member| !member.starts_with('!'))
            .collect())
    }

    /// The newest `limit` members of one sorted set in every bucket, newest first.
    async fn newest_everywhere(
        &self,
        key: impl Fn(usize) -> String,
        limit: usize,
    ) -> Result<Vec<String>> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("ZRANGE")
                .arg(key(bucket))
                .arg("+inf")
                .arg("-inf")
                .arg("BYSCORE")
                .arg("REV")
                .arg("LIMIT")
                .arg(0)
                // "Every one" (usize::MAX) is -1 to Redis, which takes no larger count.
                .arg(i64::try_from(limit).unwrap_or(-1))
                .arg("WITHSCORES");
        }
        let pages: Vec<Vec<(String, f64)>> = self.query_pipe("zrange", &pipe).await?;
        let mut merged: Vec<(String, f64)> = pages.into_iter().flatten().collect();
        merged.sort_by(|a, b| b.1.total_cmp(&a.1));
        merged.truncate(limit);
        Ok(merged.into_iter().map(|(id, _)| id).collect())
    }
}

impl RedisStore {
    /// Adds what `lib/insert_question.lua` takes for `question` to `invocation`; returns the
    /// question's JSON as stored.
    pub(super) fn push_insert(
        &self,
        question: &Question,
        invocation: &mut ScriptInvocation,
    ) -> String {
        let id = question.id.as_str();
        let bucket = question_bucket(id);
        let json = as_asked(question);
        // A session's set lives as long as its newest question can, and then some.
        let session_ttl = self.options.retention + MAX_TIMEOUT;
        let target_ttl = question.remaining(Millis::now()) + TARGET_GRACE;
        invocation
            .key(self.keys.question(id))
            .key(self.keys.open(bucket))
            .key(self.keys.pending(bucket))
            .key(self.keys.session(bucket, &question.session_id))
            .key(self.keys.events(bucket));
        for target in &question.all_targets() {
            invocation.key(self.keys.target(bucket, target.as_str()));
        }
        invocation
            .arg(&json)
            .arg(question.expires_at.0)
            .arg(question.created_at.0)
            .arg(id)
            .arg(session_ttl.as_millis() as u64)
            .arg(question.next_due(&[]).0)
            .arg(EVENTS_MAXLEN)
            .arg(target_ttl.as_millis() as u64);
        json
    }
}

#[async_trait]
impl Questions for RedisStore {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        let mut invocation = INSERT.prepare_invoke();
        let json = self.push_insert(question, &mut invocation);
        self.tag(&mut invocation);
        let created: i64 = self.invoke("insert", &invocation).await?;
        if created == -1 {
            return Ok(Inserted::Closed);
        }
        if created == 1 {
            self.replicated(&self.keys.question(question.id.as_str()))
                .await;
            self.deliver([Event::of(question)]);
            return Ok(Inserted::Created);
        }
        // Our own earlier attempt may have landed before a connection error hid its reply.
        let mut stored = redis::cmd("HGET");
        stored
            .arg(self.keys.question(question.id.as_str()))
            .arg("q");
        let stored: Option<String> = self.query("hget", &stored).await?;
        Ok(if stored.as_deref() == Some(json.as_str()) {
            self.deliver([Event::of(question)]);
            Inserted::Created
        } else {
            Inserted::Taken
        })
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<Question>> {
        Ok(self.load_many(&[id.to_string()]).await?.pop())
    }

    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
        options: ClaimOptions<'_>,
    ) -> Result<Option<Claimed>> {
        let (settle_after, take_run) = (options.settle_after, options.take_run);
        let id = snapshot.id.as_str();
        let bucket = question_bucket(id);
        let (status, resolution) = snapshot.resolution_for(claim);
        let resolution_json = serde_json::to_string(&resolution).expect("resolutions serialise");
        let (_, expiry) = snapshot.expiry_resolution(claim.at);
        let expiry_json = serde_json::to_string(&expiry).expect("resolutions serialise");
        let digest = snapshot
            .action
            .as_ref()
            .map(|a| a.digest())
            .unwrap_or_default();
        let is_expiry = if claim.transition == Transition::Expire {
            "1"
        } else {
            "0"
        };
        let answer_ms = if status == Status::Answered {
            claim.at.since(snapshot.created_at).as_millis().to_string()
        } else {
            String::new()
        };
        // The parked run shares the question's bucket (see `keys`); without one, the question's
        // own key stands in, so every key stays in the slot.
        let run = snapshot
            .run_id
            .as_ref()
            .filter(|run| take_run.is_some() && run_bucket(run.as_str()) == bucket);
        let run_key = run.map_or_else(|| self.keys.question(id), |r| self.keys.run(r.as_str()));
        // Stream ids are milliseconds: MINID trims audit records older than the retention.
        let oldest_audit = claim
            .at
            .0
            .saturating_sub(self.options.audit_retention.as_millis() as u64);
        // Tells this attempt's retries (after a lost reply) from other claims.
        let token = QuestionId::random().to_string();
        let mut invocation = CLAIM.prepare_invoke();
        invocation
            .key(self.keys.question(id))
            .key(self.keys.shown(id))
            .key(self.keys.effects(id))
            .key(self.keys.open(bucket))
            .key(self.keys.pending(bucket))
            .key(self.keys.done(bucket, status.as_str()))
            .key(self.keys.done(bucket, Status::Expired.as_str()))
            .key(self.keys.events(bucket))
            .key(self.keys.audit(bucket))
            .key(self.keys.answers(bucket))
            .key(run_key)
            .key(self.keys.runs(bucket))
            .key(run.map_or_else(
                || self.keys.question(id),
                |r| self.keys.run_data(r.as_str()),
            ))
            .arg(claim.at.0)
            .arg(status.as_str())
            .arg(&resolution_json)
            .arg(&expiry_json)
            .arg(is_expiry)
            .arg(self.options.retention.as_millis() as u64)
            .arg(Millis::now().after(settle_after).0)
            .arg(id)
            .arg(EventKind::for_status(status).name())
            .arg(&snapshot.session_id)
            .arg(kind_name(snapshot.kind))
            .arg(&digest)
            .arg(EVENTS_MAXLEN)
            .arg(oldest_audit)
            .arg(&answer_ms)
            .arg(if run.is_some() { "1" } else { "0" })
            .arg(take_run.map_or("", |t| t.owner))
            .arg(take_run.map_or(0, |t| t.lease_until.0))
            .arg(run.map_or("", |r| r.as_str()))
            .arg(ANSWERS_KEPT)
            .arg(if options.finish_when_idle { "1" } else { "0" })
            .arg(if snapshot.run_id.is_some() { "1" } else { "0" })
            .arg(&token);
        // The run carried ahead and its next question, in the run's (so the question's) slot.
        let ahead = options.ahead.filter(|ahead| {
            run.is_some_and(|r| *r == ahead.run.id)
                && question_bucket(ahead.next.id.as_str()) == bucket
        });
        match ahead {
            Some(ahead) => {
                invocation.arg(ahead.was.0);
                self.push_save(ahead.run, "", &mut invocation);
                self.push_insert(ahead.next, &mut invocation);
            }
            None => {
                invocation.arg("");
            }
        }
        self.tag(&mut invocation);
        let reply: Vec<redis::Value> = self.invoke("claim", &invocation).await?;
        if reply.len() == 1 {
            return Ok(None);
        }
        let ((outcome, status, stored, shown, done, run, finished, winner), carried): (
            ClaimReply,
            i64,
        ) = split_claim_reply(reply)
            .map_err(|e| Error::corrupt(format!("question {id}"), format!("claim reply: {e}")))?;
        let (status, stored) = (status.unwrap_or_default(), stored.unwrap_or_default());
        if outcome != "already_resolved" {
            // An acknowledged claim must survive a failover (a cluster only).
            self.replicated(&self.keys.question(id)).await;
        }
        let outcome = match outcome.as_str() {
            "won" => ClaimOutcome::Won,
            "expired" => ClaimOutcome::Expired,
            // A retry (same token) that finds its own earlier attempt won all along. Another
            // claim with the very same resolution (the same answer by the same caller in the
            // same millisecond) did not win: it is told so.
            _ if winner == token && stored == resolution_json => ClaimOutcome::Won,
            _ if winner == token && stored == expiry_json => ClaimOutcome::Expired,
            _ => ClaimOutcome::AlreadyResolved,
        };
        // The question as asked is the snapshot's (its `q` never changes once stored).
        let mut question = snapshot.clone();
        set_outcome(
            &mut question,
            &status,
            Some(&stored),
            &[(&resolution_json, &resolution), (&expiry_json, &expiry)],
        )?;
        if outcome != ClaimOutcome::AlreadyResolved {
            // This attempt, or an earlier one of it whose reply was lost, announced these.
            self.deliver([Event::of(&question)]);
            if let (1, Some(ahead)) = (carried, ahead) {
                self.deliver(Event::of_parked(ahead.run, ahead.next));
            }
        }
        Ok(Some(Claimed {
            outcome,
            question,
            work: work_of(shown, done),
            run: assemble_run(&pairs(run))?,
            finished: finished == 1,
            ahead: carried == 1,
        }))
    }

    fn claims_ahead(&self) -> bool {
        true
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        let status = filter.status.unwrap_or(Status::Pending);
        let limit = filter.effective_limit();
        let ids: Vec<String> = match (&filter.target, &filter.session_id) {
            (Some(target), _) if status == Status::Pending => {
                self.members_everywhere(|b| self.keys.target(b, target.as_str()))
                    .await?
            }
            (_, Some(session)) => {
                self.members_everywhere(|b| self.keys.session(b, session))
                    .await?
            }
            (None, None) if status == Status::Pending => {
                self.newest_everywhere(|b| self.keys.pending(b), limit)
                    .await?
            }
            _ => {
                self.newest_everywhere(|b| self.keys.done(b, status.as_str()), limit)
                    .await?
            }
        };
        let mut found: Vec<Question> = self
            .load_many(&ids)
            .await?
            .into_iter()
            .filter(|q| filter.accepts(q))
            .collect();
        found.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        found.truncate(limit);
        Ok(found)
    }

    async fn counts(&self, since: Millis) -> Result<Counts> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("ZCARD").arg(self.keys.pending(bucket));
            for status in FINAL {
                pipe.cmd("ZCOUNT")
                    .arg(self.keys.done(bucket, status.as_str()))
                    .arg(since.0)
                    .arg("+inf");
            }
            pipe.cmd("LRANGE")
                .arg(self.keys.answers(bucket))
                .arg(0)
                .arg(ANSWERS_KEPT - 1);
        }
        let replies: Vec<redis::Value> = self.query_pipe("counts", &pipe).await?;
        let mut counts = Counts::default();
        let number = |value: &redis::Value| -> Result<usize> {
            redis::FromRedisValue::from_redis_value_ref(value)
                .map_err(|e| Error::unavailable("redis counts", e))
        };
        for bucket in replies.chunks(2 + FINAL.len()) {
            counts.pending += number(&bucket[0])?;
            for (slot, value) in bucket[1..=FINAL.len()].iter().enumerate() {
                counts.resolved[slot] += number(value)?;
            }
            let times: Vec<u64> =
                redis::FromRedisValue::from_redis_value_ref(&bucket[FINAL.len() + 1])
                    .map_err(|e| Error::unavailable("redis counts", e))?;
            counts.answer_ms.extend(times);
        }
        Ok(counts)
    }
}
