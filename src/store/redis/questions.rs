//! Questions, where they were shown, and the outbox, in Redis.

use super::RedisStore;
use super::codec::{as_asked, assemble};
use super::events::EVENTS_MAXLEN;
use super::scripts::{CLAIM, INSERT, LEASE, MARK_EFFECT, RECORD_SHOWN};
use crate::store::{
    Deliveries, Error, Event, Inserted, ListFilter, Outbox, Questions, Result, Shown,
};
use askbridge_core::audit::AuditEntry;
use askbridge_core::{
    Claim, ClaimOutcome, Millis, Question, QuestionId, Resolution, Status, Target, Transition,
};
use async_trait::async_trait;
use std::time::Duration;

/// How many questions one pipelined read loads.
const LOAD_CHUNK: usize = 500;

impl RedisStore {
    /// Loads several questions by id, skipping ids whose question is gone.
    async fn load_many(&self, ids: &[String]) -> Result<Vec<Question>> {
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HMGET")
                .arg(self.keys.question(id))
                .arg("q")
                .arg("status")
                .arg("res");
        }
        let rows: Vec<(Option<String>, Option<String>, Option<String>)> =
            self.query_pipe("load", &pipe).await?;
        rows.into_iter()
            .filter_map(|row| match row {
                (Some(json), Some(status), res) => Some(assemble(&json, &status, res.as_deref())),
                _ => None,
            })
            .collect()
    }

    async fn members(&self, key: String) -> Result<Vec<String>> {
        let mut command = redis::cmd("SMEMBERS");
        command.arg(key);
        self.query("smembers", &command).await
    }

    async fn index_range(&self, command: &str, key: String, stop: isize) -> Result<Vec<String>> {
        let mut range = redis::cmd(command);
        range.arg(key).arg(0).arg(stop);
        self.query(command, &range).await
    }

    /// The JSON of `question` with `resolution`, as the events and the audit trail carry it.
    fn resolved_records(
        question: &Question,
        status: Status,
        resolution: &Resolution,
    ) -> (String, String) {
        let resolved = Question {
            status,
            resolution: Some(resolution.clone()),
            ..question.clone()
        };
        let event = serde_json::to_string(&Event::of(&resolved)).expect("events serialise");
        let audit = serde_json::to_string(&AuditEntry::resolved(&resolved))
            .expect("audit records serialise");
        (event, audit)
    }
}

fn parse_ids(ids: &[String], index: &str) -> Result<Vec<QuestionId>> {
    ids.iter()
        .map(|id| QuestionId::parse(id).map_err(|e| Error::corrupt(index, e)))
        .collect()
}

#[async_trait]
impl Questions for RedisStore {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        let id = question.id.as_str();
        let json = as_asked(question);
        let event = serde_json::to_string(&Event::of(question)).expect("events serialise");
        // A session's set lives as long as its newest question can, and then some.
        let session_ttl = self.options.retention + askbridge_core::question::MAX_TIMEOUT;
        let mut invocation = INSERT.prepare_invoke();
        invocation
            .key(self.keys.question(id))
            .key(self.keys.open())
            .key(self.keys.all())
            .key(self.keys.session(&question.session_id))
            .key(self.keys.events());
        for target in &question.targets {
            invocation.key(self.keys.target(target.as_str()));
        }
        invocation
            .arg(&json)
            .arg(question.expires_at.0)
            .arg(question.created_at.0)
            .arg(id)
            .arg(session_ttl.as_millis() as u64)
            .arg(&event)
            .arg(EVENTS_MAXLEN);
        let created: i64 = self.invoke("insert", &invocation).await?;
        if created == 1 {
            return Ok(Inserted::Created);
        }
        // Our own earlier attempt may have landed before a connection error hid its reply.
        let mut stored = redis::cmd("HGET");
        stored.arg(self.keys.question(id)).arg("q");
        let stored: Option<String> = self.query("hget", &stored).await?;
        Ok(if stored.as_deref() == Some(json.as_str()) {
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
        settle_after: Duration,
    ) -> Result<Option<(ClaimOutcome, Question)>> {
        let id = snapshot.id.as_str();
        let (status, resolution) = snapshot.resolution_for(claim);
        let resolution_json = serde_json::to_string(&resolution).expect("resolutions serialise");
        let (expired, expiry) = snapshot.expiry_resolution(claim.at);
        let expiry_json = serde_json::to_string(&expiry).expect("resolutions serialise");
        let (won_event, won_audit) = Self::resolved_records(snapshot, status, &resolution);
        let (expired_event, expired_audit) = Self::resolved_records(snapshot, expired, &expiry);
        let is_expiry = if claim.transition == Transition::Expire {
            "1"
        } else {
            "0"
        };
        // Stream ids are milliseconds: MINID trims audit records older than the retention.
        let oldest_audit = claim
            .at
            .0
            .saturating_sub(self.options.audit_retention.as_millis() as u64);
        let mut invocation = CLAIM.prepare_invoke();
        invocation
            .key(self.keys.question(id))
            .key(self.keys.shown(id))
            .key(self.keys.effects(id))
            .key(self.keys.open())
            .key(self.keys.events())
            .key(self.keys.audit())
            .arg(claim.at.0)
            .arg(status.as_str())
            .arg(&resolution_json)
            .arg(&expiry_json)
            .arg(is_expiry)
            .arg(self.options.retention.as_millis() as u64)
            .arg(Millis::now().after(settle_after).0)
            .arg(id)
            .arg(&won_event)
            .arg(&expired_event)
            .arg(&won_audit)
            .arg(&expired_audit)
            .arg(EVENTS_MAXLEN)
            .arg(oldest_audit);
        let reply: Vec<String> = self.invoke("claim", &invocation).await?;
        let (outcome, status, stored) = match reply.as_slice() {
            [missing] if missing == "missing" => return Ok(None),
            [outcome, status, stored] => (outcome.as_str(), status.as_str(), stored.as_str()),
            other => {
                return Err(Error::corrupt(
                    format!("question {id}"),
                    format!("claim reply {other:?}"),
                ));
            }
        };
        let outcome = match outcome {
            "won" => ClaimOutcome::Won,
            "expired" => ClaimOutcome::Expired,
            // A retry that finds its own earlier attempt's resolution won all along.
            _ if stored == resolution_json => ClaimOutcome::Won,
            _ if stored == expiry_json => ClaimOutcome::Expired,
            _ => ClaimOutcome::AlreadyResolved,
        };
        let question = assemble(&as_asked(snapshot), status, Some(stored))?;
        Ok(Some((outcome, question)))
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        let pending = filter.status.unwrap_or(Status::Pending) == Status::Pending;
        let limit = filter.effective_limit();
        let ids: Vec<String> = match (&filter.target, &filter.session_id) {
            (Some(target), _) if pending => self.members(self.keys.target(target.as_str())).await?,
            (_, Some(session)) => self.members(self.keys.session(session)).await?,
            (None, None) if pending => self.index_range("ZRANGE", self.keys.open(), -1).await?,
            _ => {
                // Newest first, looking at a bounded window of recent questions.
                let window = (limit.saturating_mul(20)).min(100_000) as isize;
                self.index_range("ZREVRANGE", self.keys.all(), window - 1)
                    .await?
            }
        };
        let mut found = Vec::new();
        for chunk in ids.chunks(LOAD_CHUNK) {
            found.extend(
                self.load_many(chunk)
                    .await?
                    .into_iter()
                    .filter(|q| filter.accepts(q)),
            );
        }
        found.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        found.truncate(limit);
        Ok(found)
    }

    async fn count_pending(&self) -> Result<usize> {
        // The open index's size: O(1) however many questions wait. It also counts questions
        // resolved in the last moments whose effects are still running, a handful at most.
        let mut command = redis::cmd("ZCARD");
        command.arg(self.keys.open());
        self.query("zcard", &command).await
    }
}

#[async_trait]
impl Deliveries for RedisStore {
    async fn record_shown(&self, id: &QuestionId, shown: &Shown) -> Result<()> {
        let mut invocation = RECORD_SHOWN.prepare_invoke();
        invocation
            .key(self.keys.shown(id.as_str()))
            .key(self.keys.question(id.as_str()))
            .arg(shown.target.as_str())
            .arg(&shown.reference);
        self.invoke::<i64>("record_shown", &invocation)
            .await
            .map(drop)
    }

    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>> {
        let mut command = redis::cmd("HGETALL");
        command.arg(self.keys.shown(id.as_str()));
        let map: Vec<(String, String)> = self.query("hgetall", &command).await?;
        Ok(map
            .into_iter()
            .map(|(target, reference)| Shown {
                target: Target::new(target),
                reference,
            })
            .collect())
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

    async fn effects_done(&self, id: &QuestionId) -> Result<Vec<String>> {
        self.members(self.keys.effects(id.as_str())).await
    }

    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>> {
        let mut invocation = LEASE.prepare_invoke();
        invocation
            .key(self.keys.open())
            .arg(now.0)
            .arg(now.after(lease).0)
            .arg(limit);
        let ids: Vec<String> = self.invoke("lease", &invocation).await?;
        parse_ids(&ids, "the open index")
    }

    async fn open_ids(&self) -> Result<Vec<QuestionId>> {
        let ids = self.index_range("ZRANGE", self.keys.open(), -1).await?;
        parse_ids(&ids, "the open index")
    }

    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<()> {
        let mut command = redis::cmd("ZADD");
        command.arg(self.keys.open()).arg(at.0).arg(id.as_str());
        self.query::<i64>("reschedule", &command).await.map(drop)
    }

    async fn settle(&self, id: &QuestionId, question: Option<&Question>) -> Result<()> {
        let mut pipe = redis::pipe();
        pipe.zrem(self.keys.open(), id.as_str()).ignore();
        for target in question.map(|q| q.targets.as_slice()).unwrap_or_default() {
            pipe.srem(self.keys.target(target.as_str()), id.as_str())
                .ignore();
        }
        if question.is_none() {
            pipe.zrem(self.keys.all(), id.as_str()).ignore();
        }
        self.query_pipe("settle", &pipe).await
    }
}
