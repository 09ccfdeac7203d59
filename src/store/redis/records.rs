//! Runs, rules, the audit trail and delivery dedupe, in Redis.

use super::RedisStore;
use super::codec::{RunFields, assemble_run};
use super::scripts::{ACQUIRE_RUN, INSERT_RUN, SAVE_RUN};
use crate::store::{AuditLog, Dedupe, Error, Inserted, Result, Rules, Runs};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Acquire, Run};
use askbridge_core::{Millis, Rule, RuleId, RunId};
use async_trait::async_trait;
use redis::streams::StreamRangeReply;
use std::collections::HashMap;
use std::time::Duration;

/// Audit records read per round trip.
const AUDIT_PAGE: usize = 500;

impl RedisStore {
    /// Puts a run in the lease index (when it needs an executor) or takes it out. The index is
    /// a hint for recovery: entries are added before the run changes and checked when read.
    async fn index_run(&self, id: &RunId, lease_until: Option<Millis>) -> Result<()> {
        let mut command = match lease_until {
            Some(until) => {
                let mut add = redis::cmd("ZADD");
                add.arg(self.keys.run_leases()).arg(until.0);
                add
            }
            None => {
                let mut remove = redis::cmd("ZREM");
                remove.arg(self.keys.run_leases());
                remove
            }
        };
        command.arg(id.as_str());
        self.query::<i64>("index run", &command).await.map(drop)
    }
}

fn corrupt_rule(error: serde_json::Error) -> Error {
    Error::corrupt("a rule in Redis", error)
}

#[async_trait]
impl Runs for RedisStore {
    async fn insert_run(&self, run: &Run) -> Result<Inserted> {
        if run.needs_executor() {
            self.index_run(&run.id, Some(run.lease_until.unwrap_or_default()))
                .await?;
        }
        let mut invocation = INSERT_RUN.prepare_invoke();
        invocation.key(self.keys.run(run.id.as_str()));
        RunFields::of(run).push(&mut invocation);
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
        let mut command = redis::cmd("HGETALL");
        command.arg(self.keys.run(id.as_str()));
        let fields: HashMap<String, String> = self.query("hgetall", &command).await?;
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
        // Index first: a crash right after taking the run must leave it where recovery looks.
        self.index_run(id, Some(lease_until)).await?;
        let (kind, question) = match why {
            Acquire::Answer(question) => ("answer", question.to_string()),
            Acquire::Recovery => ("recovery", String::new()),
        };
        let mut invocation = ACQUIRE_RUN.prepare_invoke();
        invocation
            .key(self.keys.run(id.as_str()))
            .arg(kind)
            .arg(&question)
            .arg(owner)
            .arg(now.0)
            .arg(lease_until.0);
        let taken: Option<String> = self.invoke("acquire run", &invocation).await?;
        if taken.is_some() {
            return self.get_run(id).await;
        }
        // Not ours: make the index tell the truth about this run again.
        match self.get_run(id).await? {
            Some(run) if run.needs_executor() => self.index_run(id, run.lease_until).await?,
            _ => self.index_run(id, None).await?,
        }
        Ok(None)
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<bool> {
        if run.needs_executor() {
            self.index_run(&run.id, run.lease_until).await?;
        }
        let ttl = if run.state.is_final() && run.reported {
            self.options.retention.as_millis() as u64
        } else {
            0
        };
        let mut invocation = SAVE_RUN.prepare_invoke();
        invocation.key(self.keys.run(run.id.as_str())).arg(owner);
        RunFields::of(run).push(&mut invocation);
        invocation.arg(ttl);
        let saved: i64 = self.invoke("save run", &invocation).await?;
        if saved == 1 && !run.needs_executor() {
            self.index_run(&run.id, None).await?;
        }
        Ok(saved == 1)
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<RunId>> {
        let mut command = redis::cmd("ZRANGEBYSCORE");
        command
            .arg(self.keys.run_leases())
            .arg(0)
            .arg(now.0)
            .arg("LIMIT")
            .arg(0)
            .arg(limit);
        let ids: Vec<String> = self.query("expired runs", &command).await?;
        ids.iter()
            .map(|id| RunId::parse(id).ok_or_else(|| Error::corrupt("the run lease index", id)))
            .collect()
    }

    async fn abandon_run(&self, id: &RunId, why: &str) -> Result<()> {
        // The run's state lives in fields of its own beside the unreadable JSON: mark it failed
        // and reported there, keep `why` beside it, and let it expire like any finished run.
        let key = self.keys.run(id.as_str());
        let mut pipe = redis::pipe();
        pipe.zrem(self.keys.run_leases(), id.as_str())
            .ignore()
            .hset_multiple(
                &key,
                &[("state", "failed"), ("reported", "1"), ("abandoned", why)],
            )
            .ignore()
            .pexpire(&key, self.options.retention.as_millis() as i64)
            .ignore();
        self.query_pipe("abandon run", &pipe).await
    }
}

#[async_trait]
impl Rules for RedisStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        let json = serde_json::to_string(rule).expect("a rule serialises");
        let mut command = redis::cmd("HSET");
        command
            .arg(self.keys.rules())
            .arg(rule.id.as_str())
            .arg(json);
        self.query::<i64>("put rule", &command).await.map(drop)
    }

    async fn rules(&self) -> Result<Vec<Rule>> {
        let mut command = redis::cmd("HVALS");
        command.arg(self.keys.rules());
        let stored: Vec<String> = self.query("rules", &command).await?;
        stored
            .iter()
            .map(|json| serde_json::from_str(json).map_err(corrupt_rule))
            .collect()
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        // Read and delete in one round trip: the rule's record goes to the audit trail.
        let mut pipe = redis::pipe();
        pipe.atomic()
            .hget(self.keys.rules(), id.as_str())
            .hdel(self.keys.rules(), id.as_str())
            .ignore();
        let (stored,): (Option<String>,) = self.query_pipe("delete rule", &pipe).await?;
        stored
            .map(|json| serde_json::from_str(&json).map_err(corrupt_rule))
            .transpose()
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
            .arg(self.keys.audit())
            .arg("MINID")
            .arg("~")
            .arg(oldest)
            .arg("*")
            .arg("data")
            .arg(json);
        self.query::<String>("audit", &command).await.map(drop)
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
        let mut start = filter
            .since
            .map_or_else(|| "-".to_owned(), |m| m.0.to_string());
        let mut found = Vec::new();
        // Read in pages until the limit is met or the stream ends.
        loop {
            let mut range = redis::cmd("XRANGE");
            range
                .arg(self.keys.audit())
                .arg(&start)
                .arg("+")
                .arg("COUNT")
                .arg(AUDIT_PAGE);
            let page: StreamRangeReply = self.query("xrange", &range).await?;
            let Some(last) = page.ids.last().map(|entry| entry.id.clone()) else {
                return Ok(found);
            };
            for entry in &page.ids {
                let Some(data) = entry.get::<String>("data") else {
                    continue;
                };
                let record: AuditEntry = serde_json::from_str(&data)
                    .map_err(|e| Error::corrupt("an audit record in Redis", e))?;
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
