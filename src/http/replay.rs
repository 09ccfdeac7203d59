//! A new event stream's replay: the newest pending questions as `question.asked`, encoded.
//!
//! 2,000 streams opening at once each held their 1,000 decoded questions until the client took
//! them (1 GB), and each read and encoded the same 1,000, so a client that reads waited over a
//! minute behind them. So a replay is encoded as soon as it is read, a few are read at once, and
//! the unfiltered one is shared by the streams that open while no event has happened since it
//! was read: a stream subscribes before it asks for its replay, and every event sent before that
//! is seen here first (and drops the shared one), so "subscribe before reading" still holds.

use super::events::question_sse;
use crate::store::{Event, EventKind, ListFilter, Store};
use crate::{Bridge, Error};
use askbridge_core::Question;
use axum::response::sse::Event as SseEvent;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio::sync::broadcast::{self, error::TryRecvError};

/// How many pending questions a new stream replays: the newest ones. A page of work, however many
/// are pending (the list endpoint pages through the rest).
pub(super) const REPLAY: usize = 1000;

/// Replays read and encoded at once: a replay is held decoded only while it is encoded, so many
/// streams opening together hold a few of them rather than each its own.
static ENCODING: Semaphore = Semaphore::const_new(16);

/// The shared replay (see the module documentation), one per [`super::AppState`].
#[derive(Default)]
pub(super) struct Replays {
    shared: Mutex<Shared>,
}

impl std::fmt::Debug for Replays {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shared = self.lock();
        f.debug_struct("Replays")
            .field("generation", &shared.generation)
            .field(
                "shared",
                &shared.cached.as_ref().map(|(_, replay)| replay.len()),
            )
            .finish()
    }
}

#[derive(Default)]
struct Shared {
    /// Every event the store sends, looked at when a stream opens.
    events: Option<broadcast::Receiver<Event>>,
    /// The store's count of times it may have missed events, when last looked at.
    missed: u64,
    /// Moves on whenever an event has been seen: a replay read before it is not kept.
    generation: u64,
    cached: Option<(usize, Arc<[SseEvent]>)>,
}

impl Shared {
    /// Takes the events sent since the last look; any (or a miss) makes the shared replay stale.
    fn catch_up(&mut self, store: &Arc<dyn Store>) {
        let events = self.events.get_or_insert_with(|| store.subscribe());
        // Events the store may have missed (its reader lost Redis) change the pending ones too.
        let missed = store.missed().map_or(0, |missed| *missed.borrow());
        let mut stale = std::mem::replace(&mut self.missed, missed) != missed;
        while let Ok(_) | Err(TryRecvError::Lagged(_)) = events.try_recv() {
            stale = true;
        }
        if stale {
            self.generation += 1;
            self.cached = None;
        }
    }
}

impl Replays {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The shared replay of at most `max_bytes` if it is current, else the generation a replay
    /// read now belongs to.
    fn current(&self, bridge: &Bridge, max_bytes: usize) -> Result<Arc<[SseEvent]>, u64> {
        let mut shared = self.lock();
        shared.catch_up(bridge.store());
        match &shared.cached {
            Some((bytes, replay)) if *bytes == max_bytes => Ok(replay.clone()),
            _ => Err(shared.generation),
        }
    }

    /// Shares `replay`, read in `generation`, unless an event has been sent since.
    fn keep(&self, bridge: &Bridge, generation: u64, max_bytes: usize, replay: &Arc<[SseEvent]>) {
        let mut shared = self.lock();
        shared.catch_up(bridge.store());
        if shared.generation == generation {
            shared.cached = Some((max_bytes, replay.clone()));
        }
    }

    /// The replay of a stream (of `session`'s questions, or all) that has subscribed to live
    /// events already: oldest first, the newest that fit in `max_bytes` (at least one).
    pub(super) async fn get(
        &self,
        bridge: &Bridge,
        session: Option<String>,
        max_bytes: usize,
    ) -> Result<Arc<[SseEvent]>, Error> {
        let shared = session.is_none();
        if shared && let Ok(replay) = self.current(bridge, max_bytes) {
            return Ok(replay);
        }
        let _turn = ENCODING.acquire().await.expect("never closed");
        let generation = match self.current(bridge, max_bytes) {
            Ok(replay) if shared => return Ok(replay),
            Ok(_) => None,
            Err(generation) => shared.then_some(generation),
        };
        let filter = ListFilter {
            session_id: session,
            limit: REPLAY,
            ..ListFilter::pending()
        };
        let replay: Arc<[SseEvent]> = encode(bridge.list(&filter).await?, max_bytes).into();
        if let Some(generation) = generation {
            self.keep(bridge, generation, max_bytes, &replay);
        }
        Ok(replay)
    }
}

/// `pending` (newest first) as `question.asked` events, oldest first: the newest that fit in
/// `max_bytes` (at least one).
fn encode(pending: Vec<Question>, max_bytes: usize) -> Vec<SseEvent> {
    let mut bytes = 0;
    let mut replay = Vec::with_capacity(pending.len());
    for question in pending {
        let (event, len) = question_sse(EventKind::for_status(question.status), &question);
        bytes += len;
        if bytes > max_bytes && !replay.is_empty() {
            break;
        }
        replay.push(event);
    }
    replay.reverse();
    replay
}
