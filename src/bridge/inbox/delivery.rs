//! Each delivery once, across processes and crashes. A platform retries a delivery it thinks
//! was lost (sometimes while the first is still being handled), a mail stays in the inbox until
//! it is filed, and a person double-clicks: a delivery's id is taken in hand in the store before
//! what it asks for is carried out, and settled after. A second coming while it is in hand waits
//! for the holder, then stays silent; a holder that died mid-way leaves only a lease, so the
//! next coming is handled once that lease lapses rather than dropped as a duplicate of an answer
//! that was never recorded.

use super::commands::Turn;
use crate::store::{Result, Sighting};
use askbridge_core::error::Chain;
use std::time::Duration;

/// How long a delivery id is remembered to drop re-deliveries.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// How long a delivery stays in the hand of the process handling it: far longer than handling
/// takes, and how late a delivery comes through after that process died mid-way.
const DELIVERY_LEASE: Duration = Duration::from_secs(10);

/// How often a delivery in another's hand is looked at again.
const IN_HAND_POLL: Duration = Duration::from_millis(25);

/// What the store said when a delivery was taken in hand.
pub(super) type Taken = Result<Sighting>;

/// A prepared message's delivery: taken in hand beside the reading, to be taken in hand with
/// the claim (or before whatever else the message does), or without an id to track.
pub(super) enum Taking {
    Taken(String, Taken),
    Later(String),
    Untracked,
}

impl Turn {
    /// The key a delivery is remembered by, when it has an id.
    pub(super) fn delivery_key(&self) -> Option<String> {
        let delivery = self.message.delivery_id.as_ref()?;
        Some(format!("{}:{delivery}", self.message.via))
    }

    /// Tries once to take the delivery `key` in hand.
    pub(super) async fn take_in_hand(&self, key: &str) -> Taken {
        let dedupe = &self.bridge.inbox().store.dedupe;
        dedupe.take_in_hand(key, DELIVERY_LEASE).await
    }

    /// True for a delivery handled already (a re-delivered update, a double click); false once
    /// it is in this process's hand (`taken` says what the first try found). A delivery in
    /// another's hand is waited for: it is the same message twice at once, and its holder
    /// settles it within moments, or dies and its lease lapses.
    pub(super) async fn handled_already(&self, key: &str, taken: Taken) -> bool {
        let give_up = tokio::time::Instant::now() + 2 * DELIVERY_LEASE;
        let mut taken = taken;
        loop {
            match taken {
                Ok(Sighting::First) => return false,
                Ok(Sighting::InHand) if tokio::time::Instant::now() < give_up => {
                    tokio::time::sleep(IN_HAND_POLL).await;
                    taken = self.take_in_hand(key).await;
                }
                Ok(Sighting::Handled) => {
                    tracing::debug!(delivery = %key, "duplicate delivery dropped");
                    return true;
                }
                Ok(Sighting::InHand) => {
                    // A holder with a longer lease than ours: claims are once-only anyway.
                    tracing::warn!(delivery = %key, "a delivery stayed in another's hand; handling it");
                    return false;
                }
                // Better to risk handling a duplicate (claims are once-only anyway) than to
                // drop a person's message.
                Err(error) => {
                    tracing::warn!(error = %Chain(&error), "cannot check for duplicate deliveries");
                    return false;
                }
            }
        }
    }

    /// Marks the delivery handled when `recorded`; otherwise forgets it, so that it is handled
    /// when it comes again.
    pub(super) async fn settle_delivery(&self, key: &str, recorded: bool) {
        let dedupe = &self.bridge.inbox().store.dedupe;
        let (what, result) = if recorded {
            ("settle", dedupe.settle(key, DUPLICATE_WINDOW).await)
        } else {
            ("forget a failed", dedupe.forget(key).await)
        };
        if let Err(error) = result {
            tracing::warn!(error = %Chain(&error), delivery = %key, "cannot {what} delivery");
        }
    }
}
