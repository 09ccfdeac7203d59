//! Runs started for a caller that waits for their first step (`POST /api/runs` with `wait_s`):
//! such a run is stored with its first write — its first question, in the same store call —
//! instead of once when it starts and again when it parks. The caller learns of the run only
//! from that first step, so if this process dies before it, the start fails for the caller and
//! nothing it was told about is lost.
//!
//! Every write of such a run (a step's journal entry, the heartbeat, the park, the end) goes
//! through [`Unstored::pending`] first: whichever comes first stores the run, under a lock, and
//! the others then find it stored.

use crate::bridge::Bridge;
use crate::store::{Inserted, Parked, Result, Saved};
use askbridge_core::run::Run;
use askbridge_core::{Question, RunId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// The runs of this process not stored yet, each with the run as it started.
#[derive(Debug, Default)]
pub(super) struct Unstored {
    runs: Mutex<HashMap<RunId, Arc<AsyncMutex<Option<Run>>>>>,
}

impl Unstored {
    /// Remembers `run`, as it started, to be stored with its first write.
    pub(super) fn hold(&self, run: Run) {
        self.lock()
            .insert(run.id.clone(), Arc::new(AsyncMutex::new(Some(run))));
    }

    /// The run as it started, locked, while it is still to be stored: the caller stores it
    /// (then [`Unstored::stored`]) or leaves it for the next write. `None` for a run stored
    /// already, or never held here.
    pub(super) async fn pending(&self, id: &RunId) -> Option<OwnedMutexGuard<Option<Run>>> {
        let slot = self.lock().get(id).cloned()?;
        let guard = slot.lock_owned().await;
        guard.is_some().then_some(guard)
    }

    /// The run is stored: later writes are ordinary saves.
    pub(super) fn stored(&self, mut pending: OwnedMutexGuard<Option<Run>>) {
        if let Some(run) = pending.take() {
            self.lock().remove(&run.id);
        }
    }

    /// Saves `run` for `owner` — storing it first, as it started, if it is still to be stored.
    pub(super) async fn save(&self, bridge: &Bridge, run: &Run, owner: &str) -> Result<Saved> {
        if let Some(pending) = self.pending(&run.id).await {
            let started = pending.as_ref().expect("a pending run is held");
            if bridge.store().insert_run(started).await? == Inserted::Taken {
                return Ok(Saved::Lost);
            }
            self.stored(pending);
        }
        bridge.store().save_run(run, owner).await
    }

    /// Parks `run` on `question` for `owner` — in the same store call as storing the run when it
    /// is still to be stored.
    pub(super) async fn park(
        &self,
        bridge: &Bridge,
        run: &Run,
        owner: &str,
        question: &Question,
    ) -> Result<Parked> {
        let Some(pending) = self.pending(&run.id).await else {
            return bridge.store().park_run(run, owner, question).await;
        };
        let started = pending.as_ref().expect("a pending run is held");
        let parked = bridge
            .store()
            .insert_parked(started, run, owner, question)
            .await?;
        // Stored now — or another run has the id, and this one stops: either way, done here.
        self.stored(pending);
        Ok(parked)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Arc<AsyncMutex<Option<Run>>>>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::Millis;
    use askbridge_core::run::Origin;

    #[tokio::test]
    async fn a_run_is_pending_until_stored_once() {
        let origin = Origin {
            chat: None,
            user: "api".into(),
            user_name: None,
        };
        let run = Run::new("f", "", origin, "p", Millis(1), Millis(2));
        let unstored = Unstored::default();
        assert!(unstored.pending(&run.id).await.is_none());
        unstored.hold(run.clone());
        let pending = unstored.pending(&run.id).await.unwrap();
        assert_eq!(pending.as_ref(), Some(&run));
        // A write that fails leaves it pending for the next one.
        drop(pending);
        let pending = unstored.pending(&run.id).await.unwrap();
        unstored.stored(pending);
        assert!(unstored.pending(&run.id).await.is_none());
    }
}
