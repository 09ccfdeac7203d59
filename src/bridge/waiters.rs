//! Waiting for a question to be resolved, keyed by id (like `twilight-standby`).
//!
//! A waiter registers a one-shot sender under the question id; one task per process reads the
//! store's event stream (fed by every process sharing the store) and completes the senders of the
//! question an event is about. Registering happens *before* the waiter re-reads the store, so a
//! resolution landing in between is seen one way or the other. Waiters also re-read the store
//! now and then, so a lost event delays them by seconds instead of forever.

use crate::store::Event;
use askbridge_core::{Question, QuestionId};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::{broadcast, oneshot};

/// The waiters of this process.
#[derive(Debug, Default)]
pub struct Waiters {
    by_id: Mutex<HashMap<QuestionId, Vec<oneshot::Sender<Question>>>>,
}

impl Waiters {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<QuestionId, Vec<oneshot::Sender<Question>>>> {
        self.by_id
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers interest in `id`'s resolution. The registration removes itself when dropped,
    /// however the wait ends (woken, timed out, or the question found resolved already).
    pub fn register(&self, id: &QuestionId) -> Registration<'_> {
        let (sender, receiver) = oneshot::channel();
        self.lock().entry(id.clone()).or_default().push(sender);
        Registration {
            waiters: self,
            id: id.clone(),
            receiver: Some(receiver),
        }
    }

    /// Drops senders whose receivers are gone (a waiter that timed out).
    pub fn forget_abandoned(&self, id: &QuestionId) {
        let mut by_id = self.lock();
        if let Some(senders) = by_id.get_mut(id) {
            senders.retain(|sender| !sender.is_closed());
            if senders.is_empty() {
                by_id.remove(id);
            }
        }
    }

    /// Completes every waiter of `question` if it is resolved.
    pub fn wake(&self, question: &Question) {
        if question.is_pending() {
            return;
        }
        let senders = self.lock().remove(&question.id).unwrap_or_default();
        for sender in senders {
            let _ = sender.send(question.clone());
        }
    }

    /// The ids someone is waiting for.
    pub fn ids(&self) -> Vec<QuestionId> {
        self.lock().keys().cloned().collect()
    }

    /// How many questions have waiters (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nobody waits.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// One waiter's interest in a question; see [`Waiters::register`].
#[derive(Debug)]
pub struct Registration<'a> {
    waiters: &'a Waiters,
    id: QuestionId,
    receiver: Option<oneshot::Receiver<Question>>,
}

impl Registration<'_> {
    /// Waits up to `limit` for the resolution; `None` when it did not come in time.
    pub async fn woken_within(&mut self, limit: std::time::Duration) -> Option<Question> {
        let receiver = self.receiver.as_mut()?;
        match tokio::time::timeout(limit, receiver).await {
            Ok(Ok(question)) => Some(question),
            // Out of time (or the sender went away): the caller re-reads the store.
            Ok(Err(_)) | Err(_) => None,
        }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        drop(self.receiver.take());
        self.waiters.forget_abandoned(&self.id);
    }
}

/// What the event pump should do after reading from the stream.
pub(crate) enum Pumped {
    /// An event arrived.
    Event(Box<Event>),
    /// Events were dropped; waiters must re-read the store.
    Lagged,
    /// The store is gone.
    Closed,
}

/// Reads one item from an event subscription.
pub(crate) async fn next_event(events: &mut broadcast::Receiver<Event>) -> Pumped {
    match events.recv().await {
        Ok(event) => Pumped::Event(Box::new(event)),
        Err(broadcast::error::RecvError::Lagged(_)) => Pumped::Lagged,
        Err(broadcast::error::RecvError::Closed) => Pumped::Closed,
    }
}
