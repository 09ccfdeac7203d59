//! `GET /api/events`: Server-Sent Events.
//!
//! A client that connects (or reconnects) first gets the still-pending questions (the newest
//! [`REPLAY`]) as `question.asked`, oldest first, and then live events: questions asked and
//! resolved, and runs that parked (`run.waiting`) or ended (`run.finished`). Subscribing happens before the pending
//! list is read, so nothing falls between the two; a question resolved in that instant may appear
//! as asked and then resolved, which clients handle as they would live. Streams end when the
//! server shuts down, so graceful shutdown does not wait on open browsers.

use super::view::QuestionView;
use super::{ApiError, AppState};
use crate::store::{Event, ListFilter};
use axum::extract::{Query, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt};
use serde::Deserialize;
use std::convert::Infallible;
use tokio::sync::{broadcast, watch};

/// How many pending questions a new stream replays: the newest ones. A page of work, however many
/// are pending (the list endpoint pages through the rest).
pub(super) const REPLAY: usize = 1000;

#[derive(Debug, Deserialize)]
pub(super) struct EventsQuery {
    session_id: Option<String>,
}

fn sse(event: &Event) -> SseEvent {
    let sse = SseEvent::default().event(event.kind().name());
    match event {
        Event::Question { question, .. } => sse.json_data(QuestionView::of(question)),
        Event::Run { run, .. } => sse.json_data(run),
        Event::Rule { rule, .. } => sse.json_data(rule),
    }
    .expect("questions, runs and rules always serialise")
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
}

impl Live {
    /// The next event for this client, `None` when the stream should end.
    async fn next(&mut self) -> Option<SseEvent> {
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
    Query(query): Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let session = query.session_id.filter(|s| !s.is_empty());
    let live = Live {
        events: state.bridge.store().subscribe(),
        shutdown: state.bridge.shutdown_signal(),
        session: session.clone(),
    };
    let filter = ListFilter {
        session_id: session,
        limit: REPLAY,
        ..ListFilter::pending()
    };
    let mut pending = state.bridge.list(&filter).await?;
    pending.reverse();
    let replay = stream::iter(pending.into_iter().map(|q| sse(&Event::of(&q))));
    let live = stream::unfold(live, |mut live| async move {
        live.next().await.map(|event| (event, live))
    });
    Ok(Sse::new(replay.chain(live).map(Ok)).keep_alive(KeepAlive::default()))
}
