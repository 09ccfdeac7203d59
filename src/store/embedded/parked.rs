//! What a claim does with the run parked on its question, inside the claim's transaction: it
//! takes the run for the claimer, or — when the claimer carried the run ahead (see
//! `crate::store::AheadRun`) — saves it parked on its next question and stores that question,
//! in the same write (and the same fsync) as the answer, as Redis's claim script does.

use super::tables::{insert_question, put_run, run_in};
use crate::store::{AheadRun, Inserted, Result, TakeRun};
use askbridge_core::run::Acquire;
use askbridge_core::{Millis, Question};
use redb::WriteTransaction;

/// Saves `ahead`'s run and stores its next question when the run, parked on `question`, is
/// still stored as the claimer carried it (`ahead.was`) and the next question's id is free.
/// Writes nothing and returns false otherwise: the claim then takes the run as usual.
pub(super) fn carry(
    txn: &WriteTransaction,
    question: &Question,
    ahead: &AheadRun<'_>,
) -> Result<bool> {
    if question.run_id.as_ref() != Some(&ahead.run.id) {
        return Ok(false);
    }
    let stored = run_in(txn, ahead.run.id.as_str())?;
    if !stored.is_some_and(|run| run.still_waits_on(&question.id, ahead.was)) {
        return Ok(false);
    }
    if insert_question(txn, ahead.next)? == Inserted::Taken {
        return Ok(false);
    }
    put_run(txn, ahead.run)?;
    Ok(true)
}

/// Takes the run parked on `question` for the claimer, inside the claim's transaction.
pub(super) fn take(
    txn: &WriteTransaction,
    question: &Question,
    take: TakeRun<'_>,
    at: Millis,
) -> Result<Option<askbridge_core::run::Run>> {
    let Some(run_id) = &question.run_id else {
        return Ok(None);
    };
    let Some(mut run) = run_in(txn, run_id.as_str())? else {
        return Ok(None);
    };
    if !run.acquire(
        Acquire::Answer(&question.id),
        take.owner,
        at,
        take.lease_until,
    ) {
        return Ok(None);
    }
    put_run(txn, &run)?;
    Ok(Some(run))
}
