//! The audit trail: every resolution and every refused attempt, as records.
//!
//! Who did what, through which surface, when, and by which rule; kept for a configured time and
//! readable per session. Records are plain data so every store keeps them the same way.

use crate::id::RuleId;
use crate::identity::Identity;
use crate::question::{Answer, Kind, Question, Resolution, Status};
use crate::time::Millis;
use serde::{Deserialize, Serialize};

/// What an audit record is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditEvent {
    /// A question was resolved (answered, declined, expired, cancelled; approvals by rule too).
    Resolved,
    /// An attempt to resolve a question was refused and changed nothing.
    Refused,
    /// An "always allow" rule was created.
    RuleCreated,
    /// A rule was revoked.
    RuleRevoked,
}

/// One record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When.
    pub at: Millis,
    /// What kind of record.
    pub event: AuditEvent,
    /// Who (an identity, `askbridge` for timeouts, `rule:<id>` for rules).
    pub by: Identity,
    /// Through which surface.
    pub via: String,
    /// The question, when there is one.
    pub question_id: Option<String>,
    /// Its session.
    pub session_id: Option<String>,
    /// Its kind.
    pub kind: Option<Kind>,
    /// Its state after (for resolutions).
    pub status: Option<Status>,
    /// The answer given (or the default used).
    pub value: Option<Answer>,
    /// A decline's message, a refusal's reason, or a rule's description.
    pub message: Option<String>,
    /// The rule involved.
    pub rule_id: Option<RuleId>,
    /// Digest of the approved action.
    pub digest: Option<String>,
}

impl AuditEntry {
    /// The record of `question`'s resolution.
    pub fn resolved(question: &Question) -> Self {
        let mut entry = AuditEntry::of_resolution(
            question.id.to_string(),
            question.session_id.clone(),
            question.kind,
            question.status,
            question.resolution.clone(),
            question.action.as_ref().map(|a| a.digest()),
        );
        if question.resolution.is_none() {
            entry.at = Millis::now();
        }
        entry
    }

    /// The record of a resolution, from its parts (a store may keep only these).
    pub fn of_resolution(
        question_id: String,
        session_id: String,
        kind: Kind,
        status: Status,
        resolution: Option<Resolution>,
        digest: Option<String>,
    ) -> Self {
        AuditEntry {
            at: resolution.as_ref().map_or(Millis(0), |r| r.at),
            event: AuditEvent::Resolved,
            by: resolution
                .as_ref()
                .map_or_else(|| Identity::new(""), |r| r.by()),
            via: resolution.as_ref().map(|r| r.via()).unwrap_or_default(),
            question_id: Some(question_id),
            session_id: Some(session_id),
            kind: Some(kind),
            status: Some(status),
            value: resolution.as_ref().and_then(|r| r.value.clone()),
            message: resolution.as_ref().and_then(|r| r.message.clone()),
            rule_id: resolution.and_then(|r| r.rule_id),
            digest,
        }
    }

    /// The record of a refused attempt by `by` through `via`, on `question` when it is known.
    pub fn refused(
        by: &Identity,
        via: &str,
        question_id: Option<String>,
        question: Option<&Question>,
        reason: &str,
    ) -> Self {
        AuditEntry {
            at: Millis::now(),
            event: AuditEvent::Refused,
            by: by.clone(),
            via: via.to_owned(),
            question_id: question.map(|q| q.id.to_string()).or(question_id),
            session_id: question.map(|q| q.session_id.clone()),
            kind: question.map(|q| q.kind),
            status: question.map(|q| q.status),
            value: None,
            message: Some(reason.to_owned()),
            rule_id: None,
            digest: question.and_then(|q| q.action.as_ref()).map(|a| a.digest()),
        }
    }
}

/// Which records to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this session's.
    pub session_id: Option<String>,
    /// Only from this instant on.
    pub since: Option<Millis>,
    /// At most this many, oldest first (0: 1000).
    pub limit: usize,
}

impl AuditFilter {
    /// The limit to apply.
    pub fn effective_limit(&self) -> usize {
        if self.limit == 0 { 1000 } else { self.limit }
    }

    /// Does `entry` pass?
    pub fn accepts(&self, entry: &AuditEntry) -> bool {
        self.since.is_none_or(|since| entry.at >= since)
            && self
                .session_id
                .as_ref()
                .is_none_or(|s| entry.session_id.as_ref() == Some(s))
    }
}
