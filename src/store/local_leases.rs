//! Leases within one process, for the stores that serve one process only (memory, embedded):
//! the same rules as Redis's (exclusive, extended by their holder, lapsing), kept in a map.

use askbridge_core::Millis;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Lease name -> (holder, until).
#[derive(Debug, Default)]
pub(crate) struct LocalLeases(Mutex<HashMap<String, (String, Millis)>>);

impl LocalLeases {
    /// See [`super::Leases::hold_lease`].
    pub(crate) fn hold(&self, name: &str, owner: &str, ttl: Duration) -> bool {
        let now = Millis::now();
        let mut leases = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let free = match leases.get(name) {
            Some((holder, until)) => holder == owner || *until <= now,
            None => true,
        };
        if free {
            leases.insert(name.to_owned(), (owner.to_owned(), now.after(ttl)));
        }
        free
    }

    /// See [`super::Leases::release_lease`].
    pub(crate) fn release(&self, name: &str, owner: &str) {
        let mut leases = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if leases.get(name).is_some_and(|(holder, _)| holder == owner) {
            leases.remove(name);
        }
    }
}
