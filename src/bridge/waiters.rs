//! Waiting for a question to be resolved, keyed by id (like `twilight-standby`).
//!
//! A waiter registers a one-shot sender under the question id; one task per process reads the
//! store's event stream (fed by every process sharing the store) and completes the senders of the
//! question an event is about; the process that wins a claim wakes its own waiters at once,
//! without waiting for its event to come back. Registering happens *before* the waiter re-reads
//! the store, so a resolution landing in between is seen one way or the other. A waiter does not
//! poll: the event pump re-reads every waited-for question once a minute (and when events were
//! dropped), so a lost event delays a waiter by a minute at most, at a cost of one read per waiter
//! per minute rather than per second.
//!
//! The channels carry their question (or run news) boxed: a channel holds room for its value
//! from the start, and a parked waiter would otherwise hold a whole question's worth for nothing
//! (about 1 KB each, with 10,000 long polls parked).

use crate::store::Event;
use askbridge_core::run::Run;
use askbridge_core::{Question, QuestionId, RunId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{broadcast, oneshot};

/// The waiters of this process: for questions to be resolved, and for runs to park or end.
#[derive(Debug, Default)]
pub struct Waiters {
    by_id: Mutex<HashMap<QuestionId, Vec<oneshot::Sender<Box<Question>>>>>,
    by_run: Mutex<HashMap<RunId, Vec<oneshot::Sender<RunNews>>>>,
}

impl Waiters {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<QuestionId, Vec<oneshot::Sender<Box<Question>>>>> {
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

    /// Completes every waiter of `question` if it is resolved; says whether one was waiting.
    pub fn wake(&self, question: &Question) -> Woken {
        if question.is_pending() {
            return Woken(false);
        }
        let senders = self.lock().remove(&question.id).unwrap_or_default();
        let mut woken = false;
        for sender in senders {
            woken |= sender.send(Box::new(question.clone())).is_ok();
        }
        Woken(woken)
    }

    /// The ids someone is waiting for.
    pub fn ids(&self) -> Vec<QuestionId> {
        self.lock().keys().cloned().collect()
    }

    fn runs(&self) -> MutexGuard<'_, HashMap<RunId, Vec<oneshot::Sender<RunNews>>>> {
        self.by_run.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers interest in the next news of run `id` (it parked, or ended). The receiver
    /// gets the run as it is then; a dropped receiver is cleaned up on the next news.
    pub fn register_run(&self, id: &RunId) -> oneshot::Receiver<RunNews> {
        let (sender, receiver) = oneshot::channel();
        let mut runs = self.runs();
        let senders = runs.entry(id.clone()).or_default();
        senders.retain(|s| !s.is_closed());
        senders.push(sender);
        receiver
    }

    /// Hands news of a run to everyone waiting for it.
    pub fn wake_run(&self, news: RunNews) {
        let senders = self.runs().remove(&news.run.id).unwrap_or_default();
        for sender in senders {
            let _ = sender.send(news.clone());
        }
    }

    /// The runs someone is waiting for.
    pub fn run_ids(&self) -> Vec<RunId> {
        self.runs().keys().cloned().collect()
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

/// Whether a claim woke waiters in this process, who should answer their askers before the
/// claimer goes on: [`Woken::let_run`] yields to them then.
///
/// Why: a task woken (or spawned) on a tokio worker runs next, ahead of the queue, and each one
/// after takes that place from the one before. The waiters are woken last in
/// `Effects::after_win`, after the settle it spawns; without the yield the claimer went on (a
/// delivery settled, a reply sent) and the Redis connection's task it woke took the place, so a
/// waiter answered its asker after all of that.
#[must_use = "await `let_run`: the woken waiters answer before the claimer goes on"]
#[derive(Debug)]
pub struct Woken(bool);

impl Woken {
    /// Yields once to the waiters just woken, if any.
    pub async fn let_run(self) {
        if self.0 {
            tokio::task::yield_now().await;
        }
    }
}

/// News of a run: the run, and the question it waits on when the news came with it.
///
/// Shared, not copied: one piece of news is remembered (`recent.rs`), handed to every waiter of
/// the run, and read back by the next request for it (a resume answered with its next step). A
/// run carries its whole journal, and copying it and its question at each of those was about
/// seven runs and five questions copied per resume.
#[derive(Clone, Debug)]
pub struct RunNews {
    /// The run as it is now.
    pub run: Arc<Run>,
    /// The question it waits on, when known without a read.
    pub question: Option<Arc<Question>>,
}

/// One waiter's interest in a question; see [`Waiters::register`].
#[derive(Debug)]
pub struct Registration<'a> {
    waiters: &'a Waiters,
    id: QuestionId,
    receiver: Option<oneshot::Receiver<Box<Question>>>,
}

impl Registration<'_> {
    /// Waits up to `limit` for the resolution; `None` when it did not come in time.
    pub async fn woken_within(&mut self, limit: std::time::Duration) -> Option<Question> {
        let receiver = self.receiver.as_mut()?;
        match tokio::time::timeout(limit, receiver).await {
            Ok(Ok(question)) => Some(*question),
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
