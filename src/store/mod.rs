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
//! does what they need, and only then calls [`Outbox::finish`], which removes them. So a process
//! that dies between winning a claim and finishing its effects leaves the entry behind, and the
//! next sweep (any process's) finishes the job: nothing resolved is forgotten, and nothing pending
//! is lost. The same holds for a message shown late, after its question was resolved: recording
//! it ([`Deliveries::record_shown`]) enters the question again, and a finish by a settle that had
//! not seen it leaves the question in, so that its buttons are withdrawn too.

mod claim;
mod error;
mod event;
mod health;
mod questions;
pub mod roles;
mod runs;

pub mod embedded;
mod local_leases;
pub mod memory;
pub mod redis;

pub use error::{Error, ErrorKind, Result};
pub use health::{RoundTrips, Topology};
pub use roles::{
    Admin, AuditLog, Dedupe, Deliveries, Drafts, Events, Idempotency, Leases, Listings, Outbox,
    Questions, Rules, Runs, Sessions, Sighting, Votes,
};

/// Every role trait, for code that calls a concrete store's methods (`use
/// askbridge::store::prelude::*`); an `Arc<dyn Store>` needs no import.
pub mod prelude {
    pub use super::roles::{
        Admin as _, AuditLog as _, Dedupe as _, Deliveries as _, Drafts as _, Events as _,
        Idempotency as _, Leases as _, Listings as _, Outbox as _, Questions as _, Rules as _,
        Runs as _, Sessions as _, Votes as _,
    };
}

mod listing;
mod rule_index;

pub use claim::{AheadRun, ClaimOptions, Claimed, TakeRun};
pub use event::{EVENT_BUFFER, Event, EventKind};
pub use listing::*;
pub use questions::{Counts, FINAL, Inserted, ListFilter, Shown, Work};
pub use runs::{Parked, Saved};
use std::time::Duration;

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

/// A store: every role. Object-safe; the bridge holds an `Arc<dyn Store>`.
pub trait Store:
    Questions
    + Votes
    + Drafts
    + Deliveries
    + Outbox
    + Dedupe
    + Leases
    + Runs
    + Listings
    + Rules
    + AuditLog
    + Events
    + Admin
    + Sessions
    + Idempotency
    + 'static
{
}

impl<T> Store for T where
    T: Questions
        + Votes
        + Drafts
        + Deliveries
        + Outbox
        + Dedupe
        + Leases
        + Runs
        + Listings
        + Rules
        + AuditLog
        + Events
        + Admin
        + Sessions
        + Idempotency
        + 'static
{
}
