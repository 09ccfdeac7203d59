//! One master's group of slots: the rounds of waiting sent for it, and what its writers watch
//! (see the parent module). Kept apart so that the rules of a round's bookkeeping, which decide
//! when a round is checked with `ROLE`, read in one place and are tested without a cluster.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;
use tokio::sync::watch;

/// The slots of one master (as last read) and their rounds.
pub(super) struct Group {
    pub(super) rounds: Mutex<Rounds>,
    /// What writers waiting on this group watch.
    pub(super) news: watch::Sender<News>,
}

#[derive(Default)]
pub(super) struct Rounds {
    /// Rounds sent so far; a round is known by its number in this count.
    pub(super) sent: u64,
    /// The slots whose writers wait for the next round.
    pub(super) gathering: BTreeSet<u16>,
    /// Whether a task is sending this group's rounds.
    pub(super) driving: bool,
    /// The last round failed or timed out, or a write was sent again: the next asks `ROLE`
    /// first.
    pub(super) suspect: bool,
    /// Times a write was sent again ([`ReplicaWait::suspect_all`]): one that comes while a
    /// round is out must outlast that round's success.
    suspicions: u64,
}

impl Rounds {
    /// Starts round `sent + 1`: its number, and the suspicions so far.
    pub(super) fn start(&mut self) -> (u64, u64) {
        self.sent += 1;
        (self.sent, self.suspicions)
    }

    /// A round started when `suspicions` were known came back, `confirmed` by a replica or
    /// not: the next is checked unless it was and no write was sent again meanwhile.
    pub(super) fn ended(&mut self, confirmed: bool, suspicions: u64) {
        self.suspect = !confirmed || self.suspicions != suspicions;
    }

    pub(super) fn suspect(&mut self) {
        self.suspect = true;
        self.suspicions += 1;
    }
}

#[derive(Clone, Copy, Default)]
pub(super) struct News {
    /// The last round that came back.
    pub(super) done: u64,
    /// Writes skip the wait until then.
    pub(super) skip_until: Option<Instant>,
}

impl News {
    pub(super) fn skipping(&self, now: Instant) -> bool {
        self.skip_until.is_some_and(|until| until > now)
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Group {
    pub(super) fn new(skip_until: Option<Instant>, suspect: bool) -> Arc<Self> {
        let news = News {
            done: 0,
            skip_until,
        };
        Arc::new(Group {
            rounds: Mutex::new(Rounds {
                suspect,
                ..Rounds::default()
            }),
            news: watch::channel(news).0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Rounds;

    #[test]
    fn a_write_sent_again_while_a_round_is_out_makes_the_next_round_checked() {
        let mut rounds = Rounds::default();
        let (_, suspicions) = rounds.start();
        rounds.suspect();
        rounds.ended(true, suspicions);
        assert!(
            rounds.suspect,
            "the suspicion came after the round was sent"
        );
        let (_, suspicions) = rounds.start();
        rounds.ended(true, suspicions);
        assert!(
            !rounds.suspect,
            "a confirmed round with no suspicion since clears it"
        );
        let (_, suspicions) = rounds.start();
        rounds.ended(false, suspicions);
        assert!(
            rounds.suspect,
            "an unconfirmed round leaves the next checked"
        );
    }
}
