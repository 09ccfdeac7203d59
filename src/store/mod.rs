//! Where questions live: small role traits ([`roles`]), three implementations.
//!
//! - [`redis::RedisStore`]: production. Several askbridge processes can share one Redis; every key
//!   of one question carries the question id as its hash tag (`askbridge:{k3f9x2m8qa}:q`), so the
//!   layout is ready for Redis Cluster.
//! - [`embedded::EmbeddedStore`]: a redb file, the default when `REDIS_URL` is unset, so that a
//!   single-machine user loses nothing on restart without running Redis.
//! - [`memory::MemoryStore`]: for tests and `--ephemeral`; not durable.
//!
//! The three pass one conformance suite, a module per role (`tests/it/store_conformance/`). Each
//! implementation is a folder or file of its own; the store has its own [`Error`], whose kind says
//! whether a failure is worth retrying ([`ErrorKind::Unavailable`]) or not ([`ErrorKind::Corrupt`]).
//!
//! # The open index is also the outbox
//!
//! Every question is entered in an index of *open* questions, scored by when something is next due
//! for it: its deadline while it is pending, "now" once it is resolved and its effects (events,
//! withdrawing buttons, resuming a run) are still to do. The background sweeper leases due entries,
//! does what they need, and only then calls [`Outbox::settle`], which removes them. So a process
//! that dies between winning a claim and finishing its effects leaves the entry behind, and the
//! next sweep (any process's) finishes the job: nothing resolved is forgotten, and nothing pending
//! is lost.

mod error;
pub mod roles;

pub mod embedded;
pub mod memory;
pub mod redis;

pub use error::{Error, ErrorKind, Result};
pub use roles::{Admin, AuditLog, Dedupe, Deliveries, Events, Outbox, Questions, Rules, Runs};

/// Every role trait, for code that calls a concrete store's methods (`use
/// askbridge::store::prelude::*`); an `Arc<dyn Store>` needs no import.
pub mod prelude {
    pub use super::roles::{
        Admin as _, AuditLog as _, Dedupe as _, Deliveries as _, Events as _, Outbox as _,
        Questions as _, Rules as _, Runs as _,
    };
}

use askbridge_core::{Question, Status, Target};
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
    pub target: Option<Target>,
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
    pub target: Target,
    /// The channel's reference (a message id).
    pub reference: String,
}

/// A store: every role. Object-safe; the bridge holds an `Arc<dyn Store>`.
pub trait Store:
    Questions + Deliveries + Outbox + Dedupe + Runs + Rules + AuditLog + Events + Admin + 'static
{
}

impl<T> Store for T where
    T: Questions
        + Deliveries
        + Outbox
        + Dedupe
        + Runs
        + Rules
        + AuditLog
        + Events
        + Admin
        + 'static
{
}

/// What an insert did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// The record is stored.
    Created,
    /// Another record has this id; nothing was written.
    Taken,
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
