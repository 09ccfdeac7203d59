//! Questions in Redis: an ask is one script, a claim one script. Where they were shown and the
//! outbox are in `outbox.rs`.

use super::RedisStore;
use super::args::{InsertArgs, Named};
use super::claim::ANSWERS_KEPT;
use super::codec::{ClaimReply, asked_and_frame, assemble, split_claim_reply};
use super::decisions::put_decisions;
use super::keys::{BUCKETS, question_bucket};
use crate::store::{
    ClaimOptions, Claimed, Counts, Error, Event, FINAL, Inserted, ListFilter, Questions, Result,
};
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId, Status};
use async_trait::async_trait;
use redis::ScriptInvocation;
use std::time::Duration;

/// How many questions one pipelined read loads.
const LOAD_CHUNK: usize = 500;
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
                    .arg("votes")
                    .arg("decisions");
            }
            type Row = (
                Option<String>,
                Option<String>,
                Option<String>,
                Option<String>,
                Option<String>,
            );
            let rows: Vec<Row> = self.query_pipe("load", &pipe).await?;
            for row in rows {
                if let (Some(json), Some(status), res, votes, decisions) = row {
                    let mut question = assemble(&json, &status, res.as_deref(), votes.as_deref())?;
                    put_decisions(&mut question, decisions.as_deref().unwrap_or_default())?;
                    found.push(question);
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
        // Members starting with `!` are markers (an older askbridge's closed mark, `kept.rs`),
        // not ids.
        Ok(sets
            .into_iter()
            .flatten()
            .filter(|member| !member.starts_with('!'))
            .collect())
    }
}

impl RedisStore {
    /// Adds `lib/insert_question.lua`'s keys for `question` to `invocation`, and returns its
    /// arguments.
    pub(super) fn push_insert<'a>(
        &self,
        question: &'a Question,
        invocation: &mut ScriptInvocation,
    ) -> InsertArgs<'a> {
        let id = question.id.as_str();
        let bucket = question_bucket(id);
        invocation
            .key(self.keys.question(id))
            .key(self.keys.open(bucket))
            .key(self.keys.pending(bucket))
            .key(self.keys.events(bucket))
            .key(self.keys.session_pending(bucket, &question.session_id));
        let targets = question.all_targets();
        for target in &targets {
            invocation.key(self.keys.target(bucket, target.as_str()));
        }
        let (q, event) = asked_and_frame(question);
        InsertArgs {
            q,
            event,
            deadline: question.expires_at.0,
            asked: question.created_at.0,
            id,
            due: question.next_due(&[]).0,
            target_ttl: (!targets.is_empty())
                .then(|| (question.remaining(Millis::now()) + TARGET_GRACE).as_millis() as u64),
        }
    }
}

#[async_trait]
impl Questions for RedisStore {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        let mut invocation = self.scripts.insert.prepare_invoke();
        let args = self.push_insert(question, &mut invocation);
        let bucket = question_bucket(question.id.as_str());
        invocation.key(self.keys.closed(bucket, &question.session_id));
        args.encode(&mut Named::new(&mut invocation));
        let json = args.q;
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
        let mut plan = self.plan_claim(snapshot, claim, &options);
        let mut invocation = self.scripts.claim.prepare_invoke();
        self.push_claim_keys(snapshot, &mut plan, &mut invocation);
        plan.args.encode(&mut invocation);
        self.tag(&mut invocation);
        let reply: Vec<redis::Value> = self.invoke("claim", &invocation).await?;
        if reply.len() == 1 {
            return Ok(None);
        }
        let id = snapshot.id.as_str();
        let (reply, carried): (ClaimReply, i64) = split_claim_reply(reply)
            .map_err(|e| Error::corrupt(format!("question {id}"), format!("claim reply: {e}")))?;
        if reply.0 != "already_resolved" {
            // An acknowledged claim must survive a failover (a cluster only).
            self.replicated(&self.keys.question(id)).await;
        }
        let claimed = plan.claimed(snapshot, reply, carried == 1)?;
        if claimed.outcome != ClaimOutcome::AlreadyResolved {
            // This attempt, or an earlier one of it whose reply was lost, announced these.
            self.deliver([Event::of(&claimed.question)]);
            if let (true, Some(ahead)) = (claimed.ahead, plan.ahead) {
                self.deliver(Event::of_parked(ahead.run, ahead.next));
            }
        }
        Ok(Some(claimed))
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
            // Its own index: the newest pending of the session, not every id it ever had.
            (_, Some(session)) if status == Status::Pending => {
                self.newest_everywhere(|b| self.keys.session_pending(b, session), limit)
                    .await?
            }
            // Its resolved index of that outcome: a page, not every id it ever had.
            (_, Some(session)) => {
                let page = self
                    .newest_everywhere(
                        |b| self.keys.session_done(b, status.as_str(), session),
                        limit,
                    )
                    .await?;
                self.with_older_session_ids(session, page).await?
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
