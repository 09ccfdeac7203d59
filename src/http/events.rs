//! `GET /api/events`: Server-Sent Events.
//!
//! A client that connects (or reconnects) first gets the still-pending questions (the newest
//! [`REPLAY`](super::replay::REPLAY)) as `question.asked`, oldest first, and then live events:
//! questions asked and resolved, and runs that parked (`run.waiting`) or ended (`run.finished`). Subscribing happens before the pending
//! list is read, so nothing falls between the two; a question resolved in that instant may appear
//! as asked and then resolved, which clients handle as they would live. Streams end when the
//! server shuts down, so graceful shutdown does not wait on open browsers.
//!
//! A client that does not read costs a constant: the replay is encoded, shared while nothing
//! changes, and cut to half the connection's backlog bound in bytes ([`EventBacklog`]; see
//! `replay.rs`); live events wait in the store's shared channel (a client that falls behind it
//! gets `resync`); and once the replay is handed over, a client that leaves the bound untaken is
//! cut by the server loop (`src/server/io.rs`).

use super::view::QuestionView;
use super::{ApiError, AppState};
use crate::store::{Event, EventKind};
use askbridge_core::Question;
use axum::Extension;
use axum::extract::{Query, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt};
use serde::Deserialize;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::{broadcast, watch};

/// A request's say in how its connection writes an event stream (a request extension the server
/// loop adds; absent where the router is served some other way): an event stream's client that
/// leaves more than [`EventBacklog::limit`] bytes untaken is cut, as Redis cuts a subscriber past
/// its client output buffer limit. Defined here, where it is used, and implemented by the server
/// loop (`src/server/`), which sits above this layer.
#[derive(Clone)]
pub struct EventBacklog {
    socket: Arc<dyn EventSocket>,
    limit: usize,
}

/// The connection an event stream is written to, as the server loop holds it.
pub trait EventSocket: Send + Sync {
    /// From now on the response is an event stream: its socket holds at most the backlog's
    /// limit, and a write that finds it full closes the connection.
    fn follow(&self);
}

impl EventBacklog {
    /// The backlog of a connection held as `socket`, `limit` bytes at most.
    pub fn new(socket: Arc<dyn EventSocket>, limit: usize) -> Self {
        EventBacklog { socket, limit }
    }

    /// The most bytes of an event stream that may wait for its client
    /// (`ASKBRIDGE_EVENT_BACKLOG_KB`).
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Marks the response an event stream (see [`EventSocket::follow`]).
    pub fn follow(&self) {
        self.socket.follow();
    }
}

impl std::fmt::Debug for EventBacklog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBacklog")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct EventsQuery {
    session_id: Option<String>,
}

fn sse(event: &Event) -> SseEvent {
    let sse = SseEvent::default().event(event.kind().name());
    match event {
        Event::Question { kind, question } => Ok(question_sse(*kind, question).0),
        Event::Run { run, .. } => sse.json_data(run),
        Event::Rule { rule, .. } => sse.json_data(rule),
    }
    .expect("questions, runs and rules always serialise")
}

/// A question's event as a stream sends it, live or replayed, and the length of its data (a
/// replay counts it against its bound).
pub(super) fn question_sse(kind: EventKind, question: &Question) -> (SseEvent, usize) {
    let json =
        serde_json::to_string(&QuestionView::of(question)).expect("questions always serialise");
    let len = json.len();
    (SseEvent::default().event(kind.name()).data(json), len)
}

/// The session an event belongs to; rules belong to none (a client following one session does
/// not get them).
fn session_of(event: &Event) -> Option<String> {
    match event {
        Event::Question { question, .. } => Some(question.session_id.clone()),
        Event::Run { run, .. } => Some(run.session_id()),
        Event::Rule { .. } => None,
    }
}

struct Live {
    events: broadcast::Receiver<Event>,
    shutdown: watch::Receiver<bool>,
    session: Option<String>,
    /// Told once the replay has been handed over: from then on the client may leave at most
    /// the bound untaken (a replay is written under the write timeout, so that a client on a
    /// slow link that reads is not cut by its first burst).
    backlog: Option<EventBacklog>,
}

impl Live {
    /// The next event for this client, `None` when the stream should end.
    async fn next(&mut self) -> Option<SseEvent> {
        if let Some(backlog) = self.backlog.take() {
            backlog.follow();
        }
        loop {
            if *self.shutdown.borrow() {
                return None;
            }
            tokio::select! {
                received = self.events.recv() => match received {
                    Ok(event) => {
                        let wanted = self.session.as_ref().is_none_or(|s| session_of(&event).as_ref() == Some(s));
                        if wanted {
                            return Some(sse(&event));
                        }
                    }
                    // The client fell behind: tell it to rebuild from the list endpoint.
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        return Some(SseEvent::default().event("resync").data(missed.to_string()));
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = self.shutdown.changed() => return None,
            }
        }
    }
}

pub(super) async fn stream(
    State(state): State<AppState>,
    backlog: Option<Extension<EventBacklog>>,
    Query(query): Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let backlog = backlog.map(|Extension(backlog)| backlog);
    let max_bytes = backlog.as_ref().map_or(usize::MAX, |b| b.limit() / 2);
    let session = query.session_id.filter(|s| !s.is_empty());
    let live = Live {
        events: state.bridge.store().subscribe(),
        shutdown: state.bridge.shutdown_signal(),
        session: session.clone(),
        backlog,
    };
    let replay = state.replays.get(&state.bridge, session, max_bytes).await?;
    let replay = stream::iter((0..replay.len()).map(move |i| replay[i].clone()));
    let live = stream::unfold(live, |mut live| async move {
        live.next().await.map(|event| (event, live))
    });
    Ok(Sse::new(replay.chain(live).map(Ok)).keep_alive(KeepAlive::default()))
}
