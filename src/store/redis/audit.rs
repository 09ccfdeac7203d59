//! The audit trail in Redis: a stream per bucket (a record goes to its question's bucket, or its
//! rule's), read oldest first in pages, or newest first from a cursor a page's worth at a time.

use super::RedisStore;
use super::keys::{BUCKETS, question_bucket, rule_bucket};
use crate::store::{AuditLog, Error, Result};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::{Kind, Millis, Resolution, Status};
use async_trait::async_trait;
use redis::streams::StreamRangeReply;
use std::time::Duration;

/// Audit records read per round trip.
const AUDIT_PAGE: usize = 500;
/// How much later than its own time a record is appended, at most (a retry after a dropped
/// connection included).
const APPEND_SLACK: Duration = Duration::from_secs(10);

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
