//! What the accept loop knows of each connection it serves, so that at the cap it can tell a
//! connection waiting on its client (idle between requests, a body still arriving, an answer the
//! client does not take) from one where the server is at work (a long poll, an event stream
//! being read). Only the first kind is shed to make room: 4,300 bodies sent a byte at a time once
//! held every place, and `/healthz` got no answer in a minute.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

fn now_ms() -> u64 {
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One connection's state, shared by its IO ([`super::io`]), its requests
/// ([`super::service`]) and the accept loop.
#[derive(Debug)]
pub(super) struct Conn {
    /// Requests whose response body is not finished (or dropped).
    in_flight: AtomicUsize,
    /// Requests handed to askbridge on this connection so far.
    requests: AtomicU64,
    /// A request body is still arriving.
    body_open: AtomicBool,
    /// A write waits for the client to take bytes.
    blocked: AtomicBool,
    /// The response being written is an event stream ([`crate::http::EventBacklog::follow`]).
    event_stream: AtomicBool,
    /// When the client last sent or took a byte (ms since [`EPOCH`]).
    progress_ms: AtomicU64,
    /// Told to close, to make room.
    cut: Notify,
    cut_sent: AtomicBool,
}

impl Conn {
    fn new() -> Self {
        Conn {
            in_flight: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
            body_open: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            event_stream: AtomicBool::new(false),
            progress_ms: AtomicU64::new(now_ms()),
            cut: Notify::new(),
            cut_sent: AtomicBool::new(false),
        }
    }

    pub(super) fn progressed(&self) {
        self.progress_ms.store(now_ms(), Ordering::Relaxed);
    }

    pub(super) fn set_blocked(&self, blocked: bool) {
        self.blocked.store(blocked, Ordering::Relaxed);
    }

    fn set_event_stream(&self) {
        self.event_stream.store(true, Ordering::Relaxed);
    }

    pub(super) fn event_stream(&self) -> bool {
        self.event_stream.load(Ordering::Relaxed)
    }

    pub(super) fn set_body_open(&self, open: bool) {
        self.body_open.store(open, Ordering::Relaxed);
    }

    /// A request reaches askbridge; the guard ends it when its response is done.
    pub(super) fn begin(self: &Arc<Self>) -> InFlight {
        self.requests.fetch_add(1, Ordering::AcqRel);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }

    pub(super) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    pub(super) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Acquire)
    }

    /// Completes when the accept loop sheds this connection.
    pub(super) async fn shed(&self) {
        self.cut.notified().await;
    }

    /// Since when this connection has waited on its client, if it does.
    fn waiting_since(&self) -> Option<u64> {
        let waiting = self.in_flight() == 0
            || self.body_open.load(Ordering::Relaxed)
            || self.blocked.load(Ordering::Relaxed);
        (waiting && !self.cut_sent.load(Ordering::Relaxed))
            .then(|| self.progress_ms.load(Ordering::Relaxed))
    }
}

impl crate::http::EventSocket for Conn {
    fn follow(&self) {
        self.set_event_stream();
    }
}

/// A request in flight; dropped with its response body.
#[derive(Debug)]
pub(super) struct InFlight(Arc<Conn>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The connections being served.
#[derive(Debug, Default)]
pub(super) struct Registry {
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicU64,
}

impl Registry {
    /// A new connection, served until the [`Registered`] is dropped.
    pub(super) fn add(self: &Arc<Self>) -> Registered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn::new());
        self.lock().insert(id, conn.clone());
        Registered {
            registry: self.clone(),
            id,
            conn,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.conns
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Tells the connection that has waited longest on its client, at least `after`, to close;
    /// whether there was one.
    pub(super) fn shed(&self, after: Duration) -> bool {
        // Within `after` of the clock's start nobody can have waited that long (a saturating
        // subtraction made every connection registered at its first millisecond a victim).
        let after = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        let Some(latest) = now_ms().checked_sub(after) else {
            return false;
        };
        let conns = self.lock();
        let victim = conns
            .values()
            .filter_map(|conn| conn.waiting_since().map(|since| (since, conn)))
            .filter(|(since, _)| *since <= latest)
            .min_by_key(|(since, _)| *since);
        let Some((_, conn)) = victim else {
            return false;
        };
        conn.cut_sent.store(true, Ordering::Relaxed);
        conn.cut.notify_one();
        true
    }
}

/// A connection's place in the [`Registry`].
#[derive(Debug)]
pub(super) struct Registered {
    registry: Arc<Registry>,
    id: u64,
    pub(super) conn: Arc<Conn>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.id);
    }
}
