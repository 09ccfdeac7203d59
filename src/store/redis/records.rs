//! Runs, rules, the audit trail and delivery dedupe, in Redis.

use super::RedisStore;
use super::codec::{RunFields, assemble_run, kept_apart_members, pairs};
use super::events::EVENTS_MAXLEN;
use super::keys::{BUCKETS, question_bucket, rule_bucket, run_bucket};
use super::scripts::{
    ACQUIRE_RUN, HOLD_LEASE, INSERT_RUN, PARK, RELEASE_LEASE, REVOKE_RULE, SAVE_RUN,
};
use crate::store::{
    AuditLog, Dedupe, Error, Event, Inserted, Leases, Parked, Questions, Result, Rules, Runs, Saved,
};
use askbridge_core::Question;
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Acquire, Run};
use askbridge_core::{Kind, Millis, Resolution, Rule, RuleId, RunId, Status};
use async_trait::async_trait;
use redis::ScriptInvocation;
use redis::streams::StreamRangeReply;
use std::collections::HashMap;
use std::time::Duration;

/// Audit records read per round trip.
const AUDIT_PAGE: usize = 500;
/// How much later than its own time a record is appended, at most (a retry after a dropped
/// connection included).
const APPEND_SLACK: Duration = Duration::from_secs(10);

fn corrupt_rule(error: serde_json::Error) -> Error {
    Error::corrupt("a rule in Redis", error)
}

/// What `lib/save_run.lua` answered.
fn saved_of(code: i64) -> Saved {
    match code {
        0 => Saved::Lost,
        2 => Saved::WaitsOnResolved,
        _ => Saved::Written,
    }
}

impl RedisStore {
    /// Adds what `lib/save_run.lua` takes for `run` to `invocation`.
    pub(super) fn push_save(&self, run: &Run, owner: &str, invocation: &mut ScriptInvocation) {
        let ttl = if run.state.is_final() && run.reported {
            self.options.retention.as_millis() as u64
        } else {
            0
        };
        let event = Event::of_run(run)
            .map(|event| event.kind().name())
            .unwrap_or_default();
        let bucket = run_bucket(run.id.as_str());
        let fields = RunFields::of(run);
        let run_key = self.keys.run(run.id.as_str());
        // The question it waits on shares its bucket (see `keys`), so the script can look at it.
        let waited = match &run.waiting_on {
            Some(question) if question_bucket(question.as_str()) == bucket => {
                self.keys.question(question.as_str())
            }
            _ => run_key.clone(),
        };
        invocation
            .key(&run_key)
            .key(self.keys.run_data(run.id.as_str()))
            .key(self.keys.runs(bucket))
            .key(self.keys.events(bucket))
            .key(waited)
            .key(self.keys.runs_live(bucket))
            .key(self.keys.runs_ended(bucket))
            .arg(owner);
        fields.push(invocation);
        invocation
            .arg(ttl)
            .arg(&fields.lease_score)
            .arg(run.id.as_str())
            .arg(event)
            .arg(EVENTS_MAXLEN)
            .arg(kept_apart_members(run))
            .arg(run.created_at.0);
    }
}

#[async_trait]
impl Runs for RedisStore {
    async fn insert_run(&self, run: &Run) -> Result<Inserted> {
        let fields = RunFields::of(run);
        let mut invocation = INSERT_RUN.prepare_invoke();
        invocation
            .key(self.keys.run(run.id.as_str()))
            .key(self.keys.run_data(run.id.as_str()))
            .key(self.keys.runs(run_bucket(run.id.as_str())))
            .key(self.keys.runs_live(run_bucket(run.id.as_str())));
        fields.push(&mut invocation);
        invocation
            .arg(&fields.lease_score)
            .arg(run.id.as_str())
            .arg(run.created_at.0);
        let created: i64 = self.invoke("insert run", &invocation).await?;
        if created == 1 {
            return Ok(Inserted::Created);
        }
        // As for questions: our own earlier attempt may have landed.
        Ok(match self.get_run(&run.id).await? {
            Some(stored) if stored.created_at == run.created_at && stored.flow == run.flow => {
                Inserted::Created
            }
            _ => Inserted::Taken,
        })
    }

    async fn get_run(&self, id: &RunId) -> Result<Option<Run>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL")
            .arg(self.keys.run(id.as_str()))
            .cmd("GET")
            .arg(self.keys.run_data(id.as_str()));
        let (mut fields, data): (HashMap<String, String>, Option<String>) =
            self.query_pipe("get run", &pipe).await?;
        if let Some(data) = data {
            fields.insert("data".into(), data);
        }
        assemble_run(&fields)
    }

    async fn acquire_run(
        &self,
        id: &RunId,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>> {
        let (kind, question) = match why {
            Acquire::Answer(question) => ("answer", question.to_string()),
            Acquire::Recovery => ("recovery", String::new()),
        };
        let mut invocation = ACQUIRE_RUN.prepare_invoke();
        invocation
            .key(self.keys.run(id.as_str()))
            .key(self.keys.run_data(id.as_str()))
            .key(self.keys.runs(run_bucket(id.as_str())))
            .arg(kind)
            .arg(&question)
            .arg(owner)
            .arg(now.0)
            .arg(lease_until.0)
            .arg(id.as_str());
        let taken: Vec<String> = self.invoke("acquire run", &invocation).await?;
        assemble_run(&pairs(taken))
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<Saved> {
        let mut invocation = SAVE_RUN.prepare_invoke();
        self.push_save(run, owner, &mut invocation);
        let saved: i64 = self.invoke("save run", &invocation).await?;
        Ok(saved_of(saved))
    }

    async fn park_run(&self, run: &Run, owner: &str, question: &Question) -> Result<Parked> {
        if question_bucket(question.id.as_str()) != run_bucket(run.id.as_str()) {
            // Not derived beside the run (see `keys`): two steps, question first.
            return Ok(match self.insert(question).await? {
                Inserted::Created => Parked::Saved(self.save_run(run, owner).await?),
                Inserted::Taken => Parked::QuestionTaken,
            });
        }
        let mut invocation = PARK.prepare_invoke();
        self.push_save(run, owner, &mut invocation);
        self.push_insert(question, &mut invocation);
        let code: i64 = self.invoke("park run", &invocation).await?;
        if code == 1 || code == 2 {
            // The question is asked with this write (a cluster only).
            self.replicated(&self.keys.question(question.id.as_str()))
                .await;
        }
        Ok(match code {
            -1 => Parked::QuestionTaken,
            code => Parked::Saved(saved_of(code)),
        })
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<RunId>> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("ZRANGE")
                .arg(self.keys.runs(bucket))
                .arg(0)
                .arg(now.0)
                .arg("BYSCORE")
                .arg("LIMIT")
                .arg(0)
                .arg(limit);
        }
        let ids: Vec<Vec<String>> = self.query_pipe("expired runs", &pipe).await?;
        ids.concat()
            .iter()
            .take(limit)
            .map(|id| RunId::parse(id).ok_or_else(|| Error::corrupt("the run lease index", id)))
            .collect()
    }

    async fn abandon_run(&self, id: &RunId, why: &str) -> Result<()> {
        // The run's state lives in fields of its own beside the unreadable JSON: mark it failed
        // and reported there, keep `why` beside it, and let it expire like any finished run.
        let (key, data) = (self.keys.run(id.as_str()), self.keys.run_data(id.as_str()));
        let retention = self.options.retention.as_millis() as i64;
        let bucket = run_bucket(id.as_str());
        let mut pipe = redis::pipe();
        pipe.atomic()
            .zrem(self.keys.runs(bucket), id.as_str())
            .ignore()
            .zrem(self.keys.runs_live(bucket), id.as_str())
            .ignore()
            .zadd(self.keys.runs_ended(bucket), id.as_str(), Millis::now().0)
            .ignore()
            .hset_multiple(
                &key,
                &[("state", "failed"), ("reported", "1"), ("abandoned", why)],
            )
            .ignore()
            .pexpire(&key, retention)
            .ignore()
            .pexpire(&data, retention)
            .ignore();
        self.query_pipe("abandon run", &pipe).await
    }
}

#[async_trait]
impl Rules for RedisStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        let json = serde_json::to_string(rule).expect("a rule serialises");
        let bucket = rule_bucket(rule.id.as_str());
        // The rule and its announcement together (one slot: the bucket's).
        let mut pipe = redis::pipe();
        pipe.atomic()
            .hset(self.keys.rules(bucket), rule.id.as_str(), &json)
            .ignore()
            .zadd(
                self.keys.rules_by_time(bucket),
                rule.id.as_str(),
                rule.created_at.0,
            )
            .ignore()
            .cmd("XADD")
            .arg(self.keys.events(bucket))
            .arg("MAXLEN")
            .arg("~")
            .arg(EVENTS_MAXLEN)
            .arg("*")
            .arg("data")
            .arg(format!(r#"{{"kind":"rule.created","rule":{json}}}"#))
            .ignore();
        self.query_pipe("put rule", &pipe).await
    }

    async fn rules(&self) -> Result<Vec<Rule>> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("HVALS").arg(self.keys.rules(bucket));
        }
        let stored: Vec<Vec<String>> = self.query_pipe("rules", &pipe).await?;
        stored
            .concat()
            .iter()
            .map(|json| serde_json::from_str(json).map_err(corrupt_rule))
            .collect()
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        let bucket = rule_bucket(id.as_str());
        let mut invocation = REVOKE_RULE.prepare_invoke();
        invocation
            .key(self.keys.rules(bucket))
            .key(self.keys.events(bucket))
            .key(self.keys.rules_by_time(bucket))
            .arg(id.as_str())
            .arg(EVENTS_MAXLEN);
        let stored: Option<String> = self.invoke("revoke rule", &invocation).await?;
        stored
            .map(|json| serde_json::from_str(&json).map_err(corrupt_rule))
            .transpose()
    }
}

/// An audit record from its stream entry: whole JSON (`data`), or the parts a claim keeps of a
/// resolution (question, status, resolution, session, kind, digest).
fn audit_record(entry: &redis::streams::StreamId) -> Result<AuditEntry> {
    let corrupt = |why: String| Error::corrupt("an audit record in Redis", why);
    if let Some(data) = entry.get::<String>("data") {
        return serde_json::from_str(&data).map_err(|e| corrupt(e.to_string()));
    }
    let field = |name: &str| entry.get::<String>(name).unwrap_or_default();
    let status = Status::parse(&field("st")).ok_or_else(|| corrupt("no status".into()))?;
    let kind: Kind = serde_json::from_value(serde_json::Value::String(field("k")))
        .map_err(|e| corrupt(e.to_string()))?;
    let resolution: Resolution =
        serde_json::from_str(&field("r")).map_err(|e| corrupt(e.to_string()))?;
    let digest = Some(field("d")).filter(|d| !d.is_empty());
    Ok(AuditEntry::of_resolution(
        field("q"),
        field("s"),
        kind,
        status,
        Some(resolution),
        digest,
    ))
}

/// The bucket an audit record belongs to: its question's, else its rule's.
fn audit_bucket(entry: &AuditEntry) -> usize {
    match (&entry.question_id, &entry.rule_id) {
        (Some(question), _) => question_bucket(question),
        (None, Some(rule)) => rule_bucket(rule.as_str()),
        (None, None) => 0,
    }
}

impl RedisStore {
    /// Up to `limit` records of one bucket's audit stream passing `filter`, oldest first.
    /// A bucket's records newest first from the cursor's instant down, as many as a page needs.
    async fn audit_newest_in(
        &self,
        bucket: usize,
        filter: &AuditFilter,
    ) -> Result<Vec<AuditEntry>> {
        // Stream ids are the time of the append, a moment after the record's own time: start a
        // little later than the cursor and let `accepts` drop what is newer.
        let mut end = filter.before.map_or_else(
            || "+".to_owned(),
            |c| (c.at.0 + APPEND_SLACK.as_millis() as u64).to_string(),
        );
        let start = filter
            .since
            .map_or_else(|| "-".to_owned(), |m| m.0.to_string());
        let mut found = Vec::new();
        // A page's worth first (most pages are unfiltered), more when a filter skips records.
        let mut chunk = (filter.wanted() + 1).clamp(16, AUDIT_PAGE);
        loop {
            let mut range = redis::cmd("XREVRANGE");
            range
                .arg(self.keys.audit(bucket))
                .arg(&end)
                .arg(&start)
                .arg("COUNT")
                .arg(chunk);
            let page: StreamRangeReply = self.query("xrevrange", &range).await?;
            let Some(last) = page.ids.last().map(|entry| entry.id.clone()) else {
                return Ok(found);
            };
            for entry in &page.ids {
                let record = audit_record(entry)?;
                if filter.accepts(&record) {
                    found.push(record);
                    if found.len() == filter.wanted() {
                        return Ok(found);
                    }
                }
            }
            if page.ids.len() < chunk {
                return Ok(found);
            }
            end = format!("({last}");
            chunk = (chunk * 4).min(AUDIT_PAGE);
        }
    }

    async fn audit_in(&self, bucket: usize, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
        let mut start = filter
            .since
            .map_or_else(|| "-".to_owned(), |m| m.0.to_string());
        let mut found = Vec::new();
        // Read in pages until the limit is met or the stream ends.
        loop {
            let mut range = redis::cmd("XRANGE");
            range
                .arg(self.keys.audit(bucket))
                .arg(&start)
                .arg("+")
                .arg("COUNT")
                .arg(AUDIT_PAGE);
            let page: StreamRangeReply = self.query("xrange", &range).await?;
            let Some(last) = page.ids.last().map(|entry| entry.id.clone()) else {
                return Ok(found);
            };
            for entry in &page.ids {
                let record = audit_record(entry)?;
                if filter.accepts(&record) {
                    found.push(record);
                    if found.len() == filter.effective_limit() {
                        return Ok(found);
                    }
                }
            }
            if page.ids.len() < AUDIT_PAGE {
                return Ok(found);
            }
            start = format!("({last}");
        }
    }
}

#[async_trait]
impl AuditLog for RedisStore {
    async fn append_audit(&self, entry: &AuditEntry) -> Result<()> {
        let json = serde_json::to_string(entry).expect("an audit record serialises");
        // Stream ids are milliseconds: MINID trims what is older than the retention.
        let oldest = Millis::now()
            .0
            .saturating_sub(self.options.audit_retention.as_millis() as u64);
        let mut command = redis::cmd("XADD");
        command
            .arg(self.keys.audit(audit_bucket(entry)))
            .arg("MINID")
            .arg("~")
            .arg(oldest)
            .arg("*")
            .arg("data")
            .arg(json);
        self.query::<String>("audit", &command).await.map(drop)
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
        let mut found = Vec::new();
        if filter.newest_first {
            // The buckets at once: a page is one round trip's time, not sixteen.
            let pages = (0..BUCKETS).map(|bucket| self.audit_newest_in(bucket, filter));
            for page in futures_util::future::try_join_all(pages).await? {
                found.extend(page);
            }
        } else {
            for bucket in 0..BUCKETS {
                found.extend(self.audit_in(bucket, filter).await?);
            }
        }
        // Records of one instant keep their order within a bucket (the sort is stable).
        Ok(filter.page(found))
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
}

#[async_trait]
impl Leases for RedisStore {
    async fn hold_lease(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool> {
        let mut invocation = HOLD_LEASE.prepare_invoke();
        invocation
            .key(self.keys.lease(name))
            .arg(owner)
            .arg(ttl.as_millis() as u64);
        let held: i64 = self.invoke("hold lease", &invocation).await?;
        Ok(held == 1)
    }

    async fn release_lease(&self, name: &str, owner: &str) -> Result<()> {
        let mut invocation = RELEASE_LEASE.prepare_invoke();
        invocation.key(self.keys.lease(name)).arg(owner);
        let _: i64 = self.invoke("release lease", &invocation).await?;
        Ok(())
    }
}

#[async_trait]
impl crate::store::Listings for RedisStore {
    async fn list_runs(&self, filter: &crate::store::RunFilter) -> Result<Vec<Run>> {
        let limit = filter.effective_limit();
        let ids = if filter.ended {
            self.page_everywhere(
                |b| vec![self.keys.runs_ended(b)],
                filter.after.as_ref(),
                limit,
            )
            .await?
        } else {
            self.page_everywhere(
                |b| vec![self.keys.runs_live(b)],
                filter.after.as_ref(),
                limit,
            )
            .await?
        };
        let mut runs = Vec::with_capacity(ids.len());
        // One round trip for the page: the runs' fields and data, pipelined.
        let mut pipe = redis::pipe();
        for (id, _) in &ids {
            pipe.hgetall(self.keys.run(id)).get(self.keys.run_data(id));
        }
        let replies: Vec<redis::Value> = self.query_pipe("list runs", &pipe).await?;
        let corrupt = |e: redis::ParsingError| Error::corrupt("a run in Redis", e);
        for pair in replies.chunks(2) {
            let [fields, data] = pair else { continue };
            let mut fields: HashMap<String, String> =
                redis::FromRedisValue::from_redis_value_ref(fields).map_err(corrupt)?;
            let data: Option<String> =
                redis::FromRedisValue::from_redis_value_ref(data).map_err(corrupt)?;
            if let Some(data) = data {
                fields.insert("data".into(), data);
            }
            // An index entry whose run expired meanwhile is skipped; so is one whose run moved
            // to the other group since it was read.
            if let Some(run) = assemble_run(&fields)? {
                if run.state.is_final() == filter.ended
                    && filter.state.is_none_or(|s| s == run.state)
                {
                    runs.push(run);
                }
            }
        }
        Ok(runs)
    }

    async fn rules_page(
        &self,
        after: Option<&crate::store::Cursor>,
        limit: usize,
    ) -> Result<Vec<Rule>> {
        let ids = self
            .page_everywhere(|b| vec![self.keys.rules_by_time(b)], after, limit)
            .await?;
        let mut pipe = redis::pipe();
        for (id, _) in &ids {
            pipe.hget(self.keys.rules(rule_bucket(id)), id);
        }
        let stored: Vec<Option<String>> = self.query_pipe("rules page", &pipe).await?;
        stored
            .into_iter()
            .flatten()
            .map(|json| serde_json::from_str(&json).map_err(corrupt_rule))
            .collect()
    }

    async fn history(&self, filter: &crate::store::HistoryFilter) -> Result<Vec<Question>> {
        let limit = filter.effective_limit();
        let ids: Vec<String> = match &filter.session_id {
            Some(session) => {
                self.members_everywhere(|b| self.keys.session(b, session))
                    .await?
            }
            None => {
                let statuses: Vec<Status> = crate::store::FINAL
                    .iter()
                    .copied()
                    .filter(|s| filter.status.is_none_or(|f| f == *s))
                    .collect();
                self.page_everywhere(
                    |b| {
                        statuses
                            .iter()
                            .map(|s| self.keys.done(b, s.as_str()))
                            .collect()
                    },
                    filter.after.as_ref(),
                    limit,
                )
                .await?
                .into_iter()
                .map(|(id, _)| id)
                .collect()
            }
        };
        Ok(filter.page(self.load_many(&ids).await?))
    }
}
