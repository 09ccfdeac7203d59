//! The background tasks: the sweeper (expiry driven by the open index, and work a crashed
//! process left), recovery at start-up, and the pump that wakes this process's waiters from the
//! store's events.

use super::Bridge;
use super::waiters::{Pumped, next_event};
use crate::Error;
use askbridge_core::{Claim, Millis, Question};
use std::time::Duration;

/// How often the sweeper looks for due work. Expiry happens within this of a deadline.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// How long a leased entry is hidden from other sweepers while one works on it.
const LEASE: Duration = Duration::from_secs(30);
/// How many due entries one sweep takes.
const SWEEP_BATCH: usize = 256;
/// Purging old records runs this often.
const PURGE_EVERY: Duration = Duration::from_secs(300);

impl Bridge {
    /// Expires a pending question whose deadline passed, and settles it.
    async fn expire(&self, question: &Question) -> Result<(), Error> {
        match self.claim(question, Claim::expire(Millis::now())).await {
            Ok(_) | Err(Error::AlreadyResolved(_)) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// One pass of the sweeper: expire what is overdue, finish interrupted effects, take over
    /// runs whose executor died.
    pub async fn sweep_once(&self) -> Result<usize, Error> {
        if let Some(runner) = self.runner() {
            if let Err(error) = runner.recover(self).await {
                tracing::warn!(%error, "cannot recover runs");
            }
        }
        let store = self.store();
        let now = Millis::now();
        let due = store.lease_due(now, LEASE, SWEEP_BATCH).await?;
        for id in &due {
            match store.get(id).await? {
                None => store.settle(id, None).await?,
                Some(question) if question.is_pending() && now >= question.expires_at => {
                    self.expire(&question).await?;
                }
                // Leased while not yet due (its deadline moved); put it back.
                Some(question) if question.is_pending() => {
                    store.reschedule(id, question.expires_at).await?;
                }
                Some(question) => self.spawn_settle(question),
            }
        }
        Ok(due.len())
    }

    pub(super) async fn sweep_forever(self) {
        let mut shutdown = self.shutdown_signal();
        let mut last_purge = Millis::now();
        loop {
            if let Err(error) = self.sweep_once().await {
                tracing::warn!(%error, "sweep failed; retrying");
            }
            let now = Millis::now();
            if now.since(last_purge) >= PURGE_EVERY {
                last_purge = now;
                match self.store().purge(now).await {
                    Ok(0) => {}
                    Ok(purged) => tracing::info!(purged, "old records purged"),
                    Err(error) => tracing::warn!(%error, "purge failed"),
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(SWEEP_EVERY) => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    /// At start-up: finishes effects a previous process left undone, shows pending questions
    /// where no delivery was recorded, and leaves overdue ones to the first sweep.
    pub(super) async fn recover(&self) -> Result<(), Error> {
        let store = self.store();
        let (mut resolved, mut reshown) = (0usize, 0usize);
        for id in store.open_ids().await? {
            let Some(question) = store.get(&id).await? else {
                store.settle(&id, None).await?;
                continue;
            };
            if !question.is_pending() {
                resolved += 1;
                store.reschedule(&id, Millis::now()).await?;
                continue;
            }
            let shown = store.shown(&id).await?;
            for target in &question.targets {
                if !shown.iter().any(|s| &s.target == target) && self.channel_for(target).is_some()
                {
                    reshown += 1;
                    self.spawn_delivery(question.clone(), target.clone());
                }
            }
        }
        if resolved + reshown > 0 {
            tracing::info!(resolved, reshown, "recovered work left by an earlier run");
        }
        Ok(())
    }

    /// Wakes this process's waiters from the store's events (which come from every process).
    pub(super) async fn pump_events(self) {
        let mut events = self.store().subscribe();
        let mut shutdown = self.shutdown_signal();
        loop {
            let pumped = tokio::select! {
                pumped = next_event(&mut events) => pumped,
                _ = shutdown.changed() => return,
            };
            match pumped {
                Pumped::Event(event) => self.waiters().wake(&event.question),
                Pumped::Lagged => self.recheck_waiters().await,
                Pumped::Closed => return,
            }
        }
    }

    async fn recheck_waiters(&self) {
        for id in self.waiters().ids() {
            if let Ok(Some(question)) = self.store().get(&id).await {
                self.waiters().wake(&question);
            }
        }
    }
}
