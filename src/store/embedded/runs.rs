//! Runs in the embedded store: stored, taken (`Run::acquire` in a write transaction), saved by
//! their holder, parked with their question in one write.

use super::EmbeddedStore;
use super::tables::{
    ID_END, QUESTIONS, RUN_LEASE_AT, RUN_LEASES, RUNS, decode, decode_run, insert_question,
    put_run, run_in,
};
use crate::store::{Error, Event, Inserted, Parked, Result, Runs, Saved};
use askbridge_core::run::{Acquire, Run, RunState};
use askbridge_core::{Millis, Question, QuestionId, RunId};
use async_trait::async_trait;
use redb::{ReadableTable, WriteTransaction};

/// Whether `owner` holds the stored run.
fn holds(txn: &WriteTransaction, run: &Run, owner: &str) -> Result<bool> {
    Ok(run_in(txn, run.id.as_str())?.is_some_and(|s| s.owner.as_deref() == Some(owner)))
}

/// Writes `run` if `owner` holds it (see [`Runs::save_run`]).
fn save_run(txn: &WriteTransaction, run: &Run, owner: &str) -> Result<Saved> {
    if !holds(txn, run, owner)? {
        return Ok(Saved::Lost);
    }
    put_run(txn, run)?;
    let waited = run
        .waiting_on
        .as_ref()
        .filter(|_| run.state == RunState::Waiting);
    let Some(waited) = waited else {
        return Ok(Saved::Written);
    };
    let question = txn
        .open_table(QUESTIONS)?
        .get(waited.as_str())?
        .map(|json| decode(json.value()));
    Ok(match question.transpose()? {
        Some(question) if !question.is_pending() => Saved::WaitsOnResolved,
        _ => Saved::Written,
    })
}

#[async_trait]
impl Runs for EmbeddedStore {
    async fn insert_run(&self, run: &Run) -> Result<Inserted> {
        let run = run.clone();
        self.write(move |txn| {
            if txn.open_table(RUNS)?.get(run.id.as_str())?.is_some() {
                return Ok(Inserted::Taken);
            }
            put_run(txn, &run)?;
            Ok(Inserted::Created)
        })
        .await
    }

    async fn get_run(&self, id: &RunId) -> Result<Option<Run>> {
        let id = id.clone();
        self.read(move |txn| {
            let table = txn.open_table(RUNS)?;
            let json = table.get(id.as_str())?;
            json.map(|json| decode_run(json.value())).transpose()
        })
        .await
    }

    async fn acquire_run(
        &self,
        id: &RunId,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>> {
        let (id, owner) = (id.clone(), owner.to_owned());
        let question: Option<QuestionId> = match why {
            Acquire::Answer(question) => Some(question.clone()),
            Acquire::Recovery => None,
        };
        self.write(move |txn| {
            let Some(mut run) = run_in(txn, id.as_str())? else {
                return Ok(None);
            };
            let why = match &question {
                Some(question) => Acquire::Answer(question),
                None => Acquire::Recovery,
            };
            if !run.acquire(why, &owner, now, lease_until) {
                return Ok(None);
            }
            put_run(txn, &run)?;
            Ok(Some(run))
        })
        .await
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<Saved> {
        let event = Event::of_run(run);
        let (run, owner) = (run.clone(), owner.to_owned());
        let saved = self.write(move |txn| save_run(txn, &run, &owner)).await?;
        if let (Saved::Written | Saved::WaitsOnResolved, Some(event)) = (saved, event) {
            let _ = self.events.send(event);
        }
        Ok(saved)
    }

    async fn park_run(&self, run: &Run, owner: &str, question: &Question) -> Result<Parked> {
        let (saved, owner, stored) = (run.clone(), owner.to_owned(), question.clone());
        let parked = self
            .write(move |txn| {
                if !holds(txn, &saved, &owner)? {
                    return Ok(Parked::Saved(Saved::Lost));
                }
                if insert_question(txn, &stored)? == Inserted::Taken {
                    return Ok(Parked::QuestionTaken);
                }
                Ok(Parked::Saved(save_run(txn, &saved, &owner)?))
            })
            .await?;
        if let Parked::Saved(Saved::Written | Saved::WaitsOnResolved) = parked {
            for event in Event::of_parked(run, question) {
                let _ = self.events.send(event);
            }
        }
        Ok(parked)
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<RunId>> {
        self.read(move |txn| {
            let table = txn.open_table(RUN_LEASES)?;
            let mut ids = Vec::new();
            for entry in table.range((0, "")..=(now.0, ID_END))?.take(limit) {
                let text = entry?.0.value().1.to_owned();
                let id = RunId::parse(&text)
                    .ok_or_else(|| Error::corrupt("the run lease index", text))?;
                ids.push(id);
            }
            Ok(ids)
        })
        .await
    }

    async fn abandon_run(&self, id: &RunId, _why: &str) -> Result<()> {
        // The record itself does not read, so it cannot be rewritten: it leaves the lease index
        // and stays for inspection until purged.
        let id = id.clone();
        self.write(move |txn| {
            if let Some(until) = txn.open_table(RUN_LEASE_AT)?.remove(id.as_str())? {
                txn.open_table(RUN_LEASES)?
                    .remove((until.value(), id.as_str()))?;
            }
            Ok(())
        })
        .await
    }
}
