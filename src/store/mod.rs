//! Where questions live: one trait, three implementations.
//!
//! - [`redis::RedisStore`]: production. Several askbridge processes can share one Redis; every key
//!   of one question carries the question id as its hash tag (`askbridge:{k3f9x2m8qa}:q`), so the
//!   layout is ready for Redis Cluster.
//! - [`embedded::EmbeddedStore`]: a redb file, the default when `REDIS_URL` is unset, so that a
//!   single-machine user loses nothing on restart without running Redis.
//! - [`memory::MemoryStore`]: for tests and `--ephemeral`; not durable.
//!
//! The three pass one conformance suite (`tests/it/store_conformance.rs`).
//!
//! # The open index is also the outbox
//!
//! Every question is entered in an index of *open* questions, scored by when something is next due
//! for it: its deadline while it is pending, "now" once it is resolved and its effects (events,
//! withdrawing buttons, resuming a run) are still to do. The background sweeper leases due entries,
//! does what they need, and only then calls [`Store::settle`], which removes them. So a process
//! that dies between winning a claim and finishing its effects leaves the entry behind, and the
//! next sweep (any process's) finishes the job: nothing resolved is forgotten, and nothing pending
//! is lost.

pub mod embedded;
pub mod memory;
pub mod redis;

use crate::Error;
use askbridge_core::Rule;
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Acquire, Run};
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId, Status};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::sync::broadcast;

/// How many events a slow subscriber may fall behind before it skips ahead.
pub const EVENT_BUFFER: usize = 4096;

/// Which questions to list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only this session's.
    pub session_id: Option<String>,
    /// Only in this state; `None` lists the pending ones.
    pub status: Option<Status>,
    /// Only those shown in this target (pending ones only).
    pub target: Option<String>,
    /// At most this many, newest first; 0 means the store's default of 1000.
    pub limit: usize,
}

impl ListFilter {
    /// The pending questions.
    pub fn pending() -> Self {
        ListFilter::default()
    }

    /// The limit to apply.
    pub fn effective_limit(&self) -> usize {
        if self.limit == 0 { 1000 } else { self.limit }
    }

    /// Does `question` pass this filter?
    pub fn accepts(&self, question: &Question) -> bool {
        let status = self.status.unwrap_or(Status::Pending);
        question.status == status
            && self
                .session_id
                .as_ref()
                .is_none_or(|s| *s == question.session_id)
            && self
                .target
                .as_ref()
                .is_none_or(|t| question.targets.contains(t))
    }
}

/// What happened to a question, for `/api/events` and for waiters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// It was asked.
    #[serde(rename = "question.asked")]
    Asked,
    /// It was answered.
    #[serde(rename = "question.replied")]
    Replied,
    /// It was declined or rejected.
    #[serde(rename = "question.rejected")]
    Rejected,
    /// Its deadline passed.
    #[serde(rename = "question.expired")]
    Expired,
    /// Its session was stopped.
    #[serde(rename = "question.cancelled")]
    Cancelled,
}

impl EventKind {
    /// The event name, as sent over Server-Sent Events.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Asked => "question.asked",
            EventKind::Replied => "question.replied",
            EventKind::Rejected => "question.rejected",
            EventKind::Expired => "question.expired",
            EventKind::Cancelled => "question.cancelled",
        }
    }

    /// The event announcing that a question reached `status`.
    pub fn for_status(status: Status) -> Self {
        match status {
            Status::Pending => EventKind::Asked,
            Status::Answered => EventKind::Replied,
            Status::Declined => EventKind::Rejected,
            Status::Expired => EventKind::Expired,
            Status::Cancelled => EventKind::Cancelled,
        }
    }
}

/// An event: what happened, and the question as it is afterwards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The question afterwards.
    pub question: Question,
}

impl Event {
    /// The event for the question's current state.
    pub fn of(question: &Question) -> Self {
        Event {
            kind: EventKind::for_status(question.status),
            question: question.clone(),
        }
    }
}

/// Where a question was shown: the target and the channel's reference to its message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    /// The target (`telegram:-100`).
    pub target: String,
    /// The channel's reference (a message id).
    pub reference: String,
}

/// The question store. Object-safe; the bridge holds an `Arc<dyn Store>`.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// One line for logs and `/healthz` (no passwords).
    fn describe(&self) -> String;

    /// False for the in-memory store: everything is lost on exit.
    fn is_durable(&self) -> bool;

    /// Checks the store answers.
    async fn ping(&self) -> Result<(), Error>;

    /// Stores a new pending question and enters it in the indexes. Never overwrites: an existing
    /// id gives [`Error::IdTaken`].
    async fn insert(&self, question: &Question) -> Result<(), Error>;

    /// The question with this id, if the store still has it.
    async fn get(&self, id: &QuestionId) -> Result<Option<Question>, Error>;

    /// Applies `claim` to the stored question atomically ([`Question::apply`]). `snapshot` is the
    /// question as the caller last read it (its immutable fields shape the resolution). Returns
    /// `None` when the question does not exist.
    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
    ) -> Result<Option<(ClaimOutcome, Question)>, Error>;

    /// Questions passing `filter`, newest first.
    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>, Error>;

    /// How many questions are pending. May count questions resolved in the last moments whose
    /// effects are still running (Redis counts its open index, to stay O(1)).
    async fn count_pending(&self) -> Result<usize, Error>;

    /// Records that a channel showed the question in `shown.target`.
    async fn record_shown(&self, id: &QuestionId, shown: &Shown) -> Result<(), Error>;

    /// Everywhere the question was shown.
    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>, Error>;

    /// Marks one of a resolved question's effects (`event`, `withdraw:telegram:-100`...) as done.
    /// Returns false if it already was.
    async fn mark_effect(&self, id: &QuestionId, effect: &str) -> Result<bool, Error>;

    /// The effects already done for a question.
    async fn effects_done(&self, id: &QuestionId) -> Result<Vec<String>, Error>;

    /// Open questions whose next action is due at `now`, at most `limit`. Each returned entry is
    /// leased: it is not returned again (to this or another process) for `lease`.
    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>, Error>;

    /// Every open question's id (pending, or resolved with effects still to do). Used at start-up.
    async fn open_ids(&self) -> Result<Vec<QuestionId>, Error>;

    /// Sets when question `id` is next due (soon, after a resolution; later, to retry), entering
    /// it in the open index again if it had left (a concurrent settle removed it while this one
    /// still has work to retry). A stale entry is harmless: settling it again finds nothing to do.
    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<(), Error>;

    /// Removes `id` from the open index and the pending indexes: its effects are all done.
    /// `question` may be `None` when the question itself is gone.
    async fn settle(&self, id: &QuestionId, question: Option<&Question>) -> Result<(), Error>;

    /// Returns true the first time `key` is seen within `ttl`; used to drop duplicate deliveries.
    async fn first_sighting(&self, key: &str, ttl: Duration) -> Result<bool, Error>;

    /// Deletes resolved questions older than the retention and other expired bookkeeping.
    async fn purge(&self, now: Millis) -> Result<usize, Error>;

    /// Stores a new run (never overwriting) and enters it in the lease index.
    async fn insert_run(&self, run: &Run) -> Result<(), Error>;

    /// The run with this id.
    async fn get_run(&self, id: &str) -> Result<Option<Run>, Error>;

    /// Takes run `id` for `owner` until `lease_until` if `why` applies ([`Run::acquire`]),
    /// atomically: of several processes trying at once, one gets it. Returns the run as taken.
    async fn acquire_run(
        &self,
        id: &str,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>, Error>;

    /// Writes `run` if `owner` still holds it (a process whose lease was taken over must not
    /// overwrite the new executor's work). Returns false when it does not.
    async fn save_run(&self, run: &Run, owner: &str) -> Result<bool, Error>;

    /// Runs needing an executor whose lease ran out before `now` (their process died or stalled).
    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<String>, Error>;

    /// Stores an "always allow" rule (replacing one with the same id).
    async fn put_rule(&self, rule: &Rule) -> Result<(), Error>;

    /// Every rule.
    async fn rules(&self) -> Result<Vec<Rule>, Error>;

    /// Deletes a rule; false when there was none.
    async fn delete_rule(&self, id: &str) -> Result<bool, Error>;

    /// Appends to the audit trail.
    async fn append_audit(&self, entry: &AuditEntry) -> Result<(), Error>;

    /// Audit records passing `filter`, oldest first.
    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>, Error>;

    /// Sends `event` to every subscriber, in every process sharing this store.
    async fn publish(&self, event: &Event) -> Result<(), Error>;

    /// Events published from now on, by any process sharing this store.
    fn subscribe(&self) -> broadcast::Receiver<Event>;
}

/// Settings every store takes.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// How long resolved questions are kept.
    pub retention: Duration,
    /// How long audit records are kept.
    pub audit_retention: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            retention: Duration::from_secs(7 * 24 * 3600),
            audit_retention: Duration::from_secs(90 * 24 * 3600),
        }
    }
}
