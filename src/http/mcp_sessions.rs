//! The MCP sessions of `/mcp`: an id and when it was last used, nothing more.
//!
//! rmcp's own sessions each kept a worker task, a serving task and half a dozen channels whose
//! first blocks are allocated whole (10,000 `initialize` calls took 1.3 GB, ~133 KB a session,
//! most of it still held once they expired). askbridge's tools need nothing of a session but its
//! name (the askbridge session its questions go in): a tool call is answered on its own request,
//! progress notifications included. So rmcp serves every request statelessly, and the session is
//! this table's entry: the id minted at `initialize` and sent in `Mcp-Session-Id`, checked on each
//! later call (404 once unknown or expired, as the MCP spec has it), ended by `DELETE /mcp`.
//!
//! A session expires after `idle` with no request in it and none in flight (a tool call waiting
//! for a person keeps its session); the cap counts the sessions not expired, decided under one
//! lock, so no burst of `initialize` calls passes it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One session: when it was last used, and its requests in flight.
#[derive(Debug)]
struct Held {
    last: Instant,
    busy: u32,
}

#[derive(Debug)]
struct Table {
    held: HashMap<Box<str>, Held>,
    /// When expired sessions are next looked for (a sweep reads the whole table).
    next_sweep: Instant,
}

/// The sessions held (see the module documentation).
#[derive(Debug)]
pub(super) struct Sessions {
    table: Mutex<Table>,
    max: usize,
    idle: Duration,
}

/// Refused: the cap is reached.
#[derive(Debug)]
pub(super) struct Full;

impl Sessions {
    /// At most `max` sessions, each kept `idle` with nothing happening in it.
    pub(super) fn new(max: usize, idle: Duration) -> Self {
        Sessions {
            table: Mutex::new(Table {
                held: HashMap::new(),
                next_sweep: Instant::now(),
            }),
            max,
            idle,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Drops the expired sessions when one is due (every quarter of `idle`), or when `force`d.
    fn sweep(&self, table: &mut Table, now: Instant, force: bool) {
        if !force && now < table.next_sweep {
            return;
        }
        let idle = self.idle;
        table
            .held
            .retain(|_, held| held.busy > 0 || now.duration_since(held.last) < idle);
        // A burst's table gives its memory back once the burst has expired.
        if table.held.capacity() > 4 * table.held.len().max(64) {
            table.held.shrink_to_fit();
        }
        table.next_sweep = now + (idle / 4).max(Duration::from_millis(100));
    }

    /// A new session, in use until the returned [`Busy`] is dropped; [`Full`] at the cap.
    pub(super) fn open(self: &Arc<Self>) -> Result<Busy, Full> {
        let now = Instant::now();
        let mut table = self.lock();
        self.sweep(&mut table, now, false);
        if table.held.len() >= self.max {
            self.sweep(&mut table, now, true);
        }
        if table.held.len() >= self.max {
            return Err(Full);
        }
        let id: Box<str> = fresh_id().into();
        table.held.insert(id.clone(), Held { last: now, busy: 1 });
        Ok(Busy {
            sessions: self.clone(),
            id,
        })
    }

    /// Session `id` in use until the returned [`Busy`] is dropped; `None` when it is unknown or
    /// has expired.
    pub(super) fn enter(self: &Arc<Self>, id: &str) -> Option<Busy> {
        let now = Instant::now();
        let mut table = self.lock();
        self.sweep(&mut table, now, false);
        let idle = self.idle;
        let held = table.held.get_mut(id)?;
        if held.busy == 0 && now.duration_since(held.last) >= idle {
            table.held.remove(id);
            return None;
        }
        held.busy += 1;
        held.last = now;
        Some(Busy {
            sessions: self.clone(),
            id: id.into(),
        })
    }

    /// Ends session `id`; whether it was held.
    pub(super) fn close(&self, id: &str) -> bool {
        self.lock().held.remove(id).is_some()
    }

    /// How many sessions are held (expired ones not yet swept included).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().held.len()
    }
}

/// A request of a session in flight; dropped when its response is done.
#[derive(Debug)]
pub(super) struct Busy {
    sessions: Arc<Sessions>,
    id: Box<str>,
}

impl Busy {
    /// The session's id.
    pub(super) fn id(&self) -> &str {
        &self.id
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut table = self.sessions.lock();
        if let Some(held) = table.held.get_mut(&self.id) {
            held.busy = held.busy.saturating_sub(1);
            held.last = Instant::now();
        }
    }
}

/// A session id: 20 characters of the question ids' alphabet (100 random bits).
fn fresh_id() -> String {
    let (a, b) = (
        askbridge_core::QuestionId::random(),
        askbridge_core::QuestionId::random(),
    );
    format!("{}{}", a.as_str(), b.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_counts_sessions_not_expired_and_a_busy_one_does_not_expire() {
        let sessions = Arc::new(Sessions::new(2, Duration::from_millis(50)));
        let first = sessions.open().expect("room");
        let second = sessions.open().expect("room");
        let (first_id, second_id) = (first.id().to_owned(), second.id().to_owned());
        assert!(sessions.open().is_err(), "past the cap");
        drop(first);
        std::thread::sleep(Duration::from_millis(80));
        // The first expired; the second is still in a request.
        assert!(sessions.enter(&first_id).is_none());
        let third = sessions.open().expect("the expired one's place");
        assert!(sessions.enter(&second_id).is_some());
        assert!(sessions.open().is_err());
        drop((second, third));
        assert!(sessions.close(&second_id));
        assert!(!sessions.close(&second_id));
        assert_eq!(sessions.len(), 1);
    }
}
