//! Runs in memory: stored, taken (`Run::acquire` under the lock), saved by their holder, parked.

use super::MemoryStore;
use crate::store::{Event, Inserted, Parked, Result, Runs, Saved};
use askbridge_core::run::{Acquire, Run, RunState};
use askbridge_core::{Millis, Question, QuestionId, RunId};
use async_trait::async_trait;

#[async_trait]
impl Runs for MemoryStore {
    async fn insert_run(&self, run: &Run) -> Result<Inserted> {
        let mut state = self.state();
        if state.runs.contains_key(&run.id) {
            return Ok(Inserted::Taken);
        }
        state.runs.insert(run.id.clone(), run.clone());
        Ok(Inserted::Created)
    }

    async fn get_run(&self, id: &RunId) -> Result<Option<Run>> {
        Ok(self.state().runs.get(id).cloned())
    }

    async fn acquire_run(
        &self,
        id: &RunId,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>> {
        let mut state = self.state();
        let Some(run) = state.runs.get_mut(id) else {
            return Ok(None);
        };
        Ok(run
            .acquire(why, owner, now, lease_until)
            .then(|| run.clone()))
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<Saved> {
        let saved = {
            let mut state = self.state();
            match state.runs.get_mut(&run.id) {
                Some(stored) if stored.owner.as_deref() == Some(owner) => *stored = run.clone(),
                _ => return Ok(Saved::Lost),
            }
            let resolved =
                |id: &QuestionId| state.questions.get(id).is_some_and(|q| !q.is_pending());
            match &run.waiting_on {
                Some(id) if run.state == RunState::Waiting && resolved(id) => {
                    Saved::WaitsOnResolved
                }
                _ => Saved::Written,
            }
        };
        if let Some(event) = Event::of_run(run) {
            let _ = self.events.send(event);
        }
        Ok(saved)
    }

    async fn park_run(&self, run: &Run, owner: &str, question: &Question) -> Result<Parked> {
        {
            let mut state = self.state();
            let held = state
                .runs
                .get(&run.id)
                .is_some_and(|stored| stored.owner.as_deref() == Some(owner));
            if !held {
                return Ok(Parked::Saved(Saved::Lost));
            }
            if state.insert_question(question) == Inserted::Taken {
                return Ok(Parked::QuestionTaken);
            }
        }
        // Announced before the run's event, as a script would: the question exists first.
        self.announce(question);
        Ok(Parked::Saved(self.save_run(run, owner).await?))
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<RunId>> {
        let state = self.state();
        Ok(state
            .runs
            .values()
            .filter(|run| run.needs_executor() && run.lease_until.is_none_or(|until| until <= now))
            .take(limit)
            .map(|run| run.id.clone())
            .collect())
    }

    async fn abandon_run(&self, id: &RunId, why: &str) -> Result<()> {
        // Records in memory always read; for completeness, end the run as failed.
        if let Some(run) = self.state().runs.get_mut(id) {
            run.state = askbridge_core::run::RunState::Failed;
            run.result = Some(why.to_owned());
            run.reported = true;
        }
        Ok(())
    }
}
