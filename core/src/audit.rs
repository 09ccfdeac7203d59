//! The audit trail: every resolution and every refused attempt, as records.
//!
//! Who did what, through which surface, when, and by which rule; kept for a configured time and
//! readable per session. Records are plain data so every store keeps them the same way.

use crate::actions::Entry;
use crate::id::RuleId;
use crate::identity::Identity;
use crate::question::{Answer, Kind, Question, Resolution, Status};
use crate::quorum::Vote;
use crate::time::Millis;
use serde::{Deserialize, Serialize};

/// What an audit record is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuditEvent {
    /// A question was resolved (answered, declined, expired, cancelled; approvals by rule too).
    Resolved,
    /// An attempt to resolve a question was refused and changed nothing.
    Refused,
    /// An "always allow" rule was created.
    RuleCreated,
    /// A rule was revoked.
    RuleRevoked,
    /// An unanswered question was re-announced.
    Reminded,
    /// An unanswered question reached an escalation step.
    Escalated,
    /// A quorum member voted (the question stays pending until the quorum is met).
    Voted,
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
    /// Digest of the approved action (of the proposed one when it was edited).
    pub digest: Option<String>,
    /// An edited approval's arguments as proposed, recorded apart from those approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_args: Option<serde_json::Value>,
    /// An edited approval's arguments as approved (what runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_args: Option<serde_json::Value>,
    /// Their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_digest: Option<String>,
    /// A batch's decisions, one per action decided (each with the arguments proposed and
    /// those approved apart, for an edit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<Entry>,
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
            digest_of(question),
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
        let edited = resolution.as_ref().and_then(|r| r.edited.clone());
        let decisions = resolution
            .as_ref()
            .map(|r| r.decisions.clone())
            .unwrap_or_default();
        AuditEntry {
            decisions,
            proposed_args: edited.as_ref().map(|e| e.proposed.args.clone()),
            approved_args: edited.as_ref().map(|e| e.approved.args.clone()),
            approved_digest: edited.as_ref().map(|e| e.approved.digest()),
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

    /// The record of a reminder or an escalation step (`event`) of a pending `question`, carried
    /// out by askbridge; `message` says what was done ("reminder 1 of 2 on telegram:-100").
    pub fn nudged(question: &Question, event: AuditEvent, message: String) -> Self {
        AuditEntry {
            message: Some(message),
            ..AuditEntry::about(
                question,
                event,
                Identity::askbridge(),
                "askbridge",
                Millis::now(),
            )
        }
    }

    /// The record of `vote` on `question` (still pending, or about to be resolved by it), with
    /// the quorum's `progress` as its message.
    pub fn voted(question: &Question, vote: &Vote, progress: &str) -> Self {
        AuditEntry {
            value: Some(vote.value.clone()),
            message: Some(progress.to_owned()),
            ..AuditEntry::about(
                question,
                AuditEvent::Voted,
                vote.by.clone(),
                &vote.via,
                vote.at,
            )
        }
    }

    /// A record of `event` by `by` through `via` at `at` about `question`, naming it as it is
    /// now, with no value or message yet.
    fn about(question: &Question, event: AuditEvent, by: Identity, via: &str, at: Millis) -> Self {
        AuditEntry {
            at,
            event,
            by,
            via: via.to_owned(),
            question_id: Some(question.id.to_string()),
            session_id: Some(question.session_id.clone()),
            kind: Some(question.kind),
            status: Some(question.status),
            value: None,
            message: None,
            rule_id: None,
            digest: digest_of(question),
            proposed_args: None,
            approved_args: None,
            approved_digest: None,
            decisions: Vec::new(),
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
            digest: question.and_then(digest_of),
            proposed_args: None,
            approved_args: None,
            approved_digest: None,
            decisions: Vec::new(),
        }
    }
}

/// The digest an approval is bound to, as its audit records name it: its action's, or a
/// batch's.
pub fn digest_of(question: &Question) -> Option<String> {
    match &question.action {
        Some(action) => Some(action.digest()),
        None => question.batch_digest.clone(),
    }
}

/// Which records to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this session's.
    pub session_id: Option<String>,
    /// Only from this instant on.
    pub since: Option<Millis>,
    /// At most this many (0: 1000), oldest first unless `newest_first`.
    pub limit: usize,
    /// Only this person's (an identity like `telegram:42`).
    pub by: Option<String>,
    /// Only of this outcome: a status (`answered`, `declined`, `expired`, `cancelled`), or
    /// `refused` for refused attempts, or `rule` for rules created and revoked.
    pub outcome: Option<String>,
    /// Newest first (the ops page), paged by `before`.
    pub newest_first: bool,
    /// With `newest_first`: the page after this one (see [`AuditCursor`]).
    pub before: Option<AuditCursor>,
}

/// Where a newest-first page of the audit trail ended: records older than `at`, after the
/// first `skip` records at exactly `at` (records have no id of their own; within one instant
/// their order is the store's, which does not change). Written `<ms>.<skip>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditCursor {
    /// The time of the page's last record.
    pub at: Millis,
    /// How many records at that time the pages so far held.
    pub skip: usize,
}

impl AuditCursor {
    /// Reads `<ms>.<skip>`.
    pub fn parse(text: &str) -> Option<Self> {
        let (at, skip) = text.split_once('.')?;
        Some(AuditCursor {
            at: Millis(at.parse().ok()?),
            skip: skip.parse().ok()?,
        })
    }
}

impl std::fmt::Display for AuditCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.at.0, self.skip)
    }
}

impl AuditFilter {
    /// The limit to apply.
    pub fn effective_limit(&self) -> usize {
        if self.limit == 0 { 1000 } else { self.limit }
    }

    /// Does `entry` pass (everything but the page)?
    pub fn accepts(&self, entry: &AuditEntry) -> bool {
        self.since.is_none_or(|since| entry.at >= since)
            && self.before.is_none_or(|c| entry.at <= c.at)
            && self
                .session_id
                .as_ref()
                .is_none_or(|s| entry.session_id.as_ref() == Some(s))
            && self.by.as_ref().is_none_or(|b| entry.by.as_str() == b)
            && self
                .outcome
                .as_deref()
                .is_none_or(|o| outcome_of(entry) == o)
    }

    /// How many matching records a source must give, at most, for a page: the page and what
    /// the cursor skips.
    pub fn wanted(&self) -> usize {
        self.effective_limit() + self.before.map_or(0, |c| c.skip)
    }

    /// The page from `entries` (all accepted, each source's in its own order). Sorting is
    /// stable, so records of one instant keep the order their sources gave.
    pub fn page(&self, mut entries: Vec<AuditEntry>) -> Vec<AuditEntry> {
        if !self.newest_first {
            entries.sort_by_key(|e| e.at);
            entries.truncate(self.effective_limit());
            return entries;
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.at));
        if let Some(cursor) = self.before {
            let mut skipped = 0;
            entries.retain(|e| {
                if e.at == cursor.at && skipped < cursor.skip {
                    skipped += 1;
                    return false;
                }
                true
            });
        }
        entries.truncate(self.effective_limit());
        entries
    }

    /// The cursor of the page after `page` (a newest-first page this filter read).
    pub fn next_cursor(&self, page: &[AuditEntry]) -> Option<AuditCursor> {
        let last = page.last()?;
        let at_last = page.iter().filter(|e| e.at == last.at).count();
        let carried = self
            .before
            .filter(|c| c.at == last.at)
            .map_or(0, |c| c.skip);
        Some(AuditCursor {
            at: last.at,
            skip: at_last + carried,
        })
    }
}

/// The outcome a record is filed under: its status, `refused`, `rule`, or `nudged` (reminders
/// and escalation steps).
pub fn outcome_of(entry: &AuditEntry) -> &'static str {
    match entry.event {
        AuditEvent::Refused => "refused",
        AuditEvent::Reminded | AuditEvent::Escalated => "nudged",
        AuditEvent::Voted => "voted",
        AuditEvent::RuleCreated | AuditEvent::RuleRevoked => "rule",
        AuditEvent::Resolved => entry.status.map_or("resolved", Status::as_str),
    }
}
