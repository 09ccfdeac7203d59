//! The steps of a claim, written once for the stores that run them in Rust (memory and embedded).
//!
//! A claim is more than `Question::apply`: the resolution is audited, its outbox entry made due,
//! the run parked on the question carried ahead or taken for the claimer, and the question
//! finished at once when nothing is left to do. The two stores used to walk those eight steps
//! each in its own copy, and a copy is a second place for a rule to be wrong; here each store
//! only says how to read and write its records inside its atomic section ([`ClaimTxn`]: a mutex
//! held, a redb write transaction), and the order and conditions of the steps are this file's.
//! Redis runs the same steps in `claim.lua`; the differential test holds the three to one table
//! of cases.

use super::{AheadRun, ClaimOptions, Claimed, Event, Inserted, Result, TakeRun, Work};
use askbridge_core::audit::AuditEntry;
use askbridge_core::run::{Acquire, Run};
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId, RunId};
use tokio::sync::broadcast;

/// A store's records as a claim reads and writes them, inside one atomic section.
pub(super) trait ClaimTxn {
    /// The stored question.
    fn question(&mut self, id: &QuestionId) -> Result<Option<Question>>;
    /// Writes the question with its new status and resolution (and the indexes that follow its
    /// state).
    fn save_resolved(&mut self, question: &Question) -> Result<()>;
    /// Appends to the audit trail.
    fn audit(&mut self, entry: &AuditEntry) -> Result<()>;
    /// Sets when the question is next due in the open index.
    fn set_due(&mut self, id: &QuestionId, at: Millis) -> Result<()>;
    /// The stored run.
    fn run(&mut self, id: &RunId) -> Result<Option<Run>>;
    /// Writes a run (and its lease index).
    fn put_run(&mut self, run: &Run) -> Result<()>;
    /// Stores a question unless its id is taken, as `Questions::insert` does.
    fn insert_question(&mut self, question: &Question) -> Result<Inserted>;
    /// Where the question was shown and which effects are done.
    fn work(&mut self, id: &QuestionId) -> Result<Work>;
    /// Takes the resolved question out of the open index (and any index of pending ones).
    fn finish(&mut self, question: &Question) -> Result<()>;
}

/// The claim, inside `txn`: `Question::apply`, then what the resolution carries. `None` when the
/// question is gone.
pub(super) fn claim_in(
    txn: &mut impl ClaimTxn,
    id: &QuestionId,
    claim: &Claim,
    options: &ClaimOptions<'_>,
) -> Result<Option<Claimed>> {
    let Some(mut question) = txn.question(id)? else {
        return Ok(None);
    };
    let outcome = question.apply(claim);
    let (mut run, mut carried) = (None, false);
    let resolved_now = outcome != ClaimOutcome::AlreadyResolved;
    if resolved_now {
        txn.save_resolved(&question)?;
        txn.audit(&AuditEntry::resolved(&question))?;
        txn.set_due(id, Millis::now().after(options.settle_after))?;
        if let (ClaimOutcome::Won, Some(_), Some(ahead)) =
            (outcome, options.take_run, &options.ahead)
        {
            carried = carry(txn, &question, ahead)?;
        }
        if let (false, Some(take_run)) = (carried, options.take_run) {
            run = take(txn, &question, take_run, claim.at)?;
        }
    }
    let work = txn.work(id)?;
    let finished =
        resolved_now && Claimed::idle(&question, &work, run.is_some() || carried, options);
    if finished {
        txn.finish(&question)?;
    }
    Ok(Some(Claimed {
        outcome,
        question,
        work,
        run,
        finished,
        ahead: carried,
    }))
}

/// Saves `ahead`'s run and stores its next question when the run, parked on `question`, is still
/// stored as the claimer carried it (`ahead.was`) and the next question's id is free. Writes
/// nothing and returns false otherwise: the claim then takes the run as usual.
fn carry(txn: &mut impl ClaimTxn, question: &Question, ahead: &AheadRun<'_>) -> Result<bool> {
    if question.run_id.as_ref() != Some(&ahead.run.id) {
        return Ok(false);
    }
    let stored = txn.run(&ahead.run.id)?;
    if !stored.is_some_and(|run| run.still_waits_on(&question.id, ahead.was)) {
        return Ok(false);
    }
    if txn.insert_question(ahead.next)? == Inserted::Taken {
        return Ok(false);
    }
    txn.put_run(ahead.run)?;
    Ok(true)
}

/// Takes the run parked on `question` for the claimer (`Run::acquire` for an answer).
fn take(
    txn: &mut impl ClaimTxn,
    question: &Question,
    take: TakeRun<'_>,
    at: Millis,
) -> Result<Option<Run>> {
    let Some(run_id) = &question.run_id else {
        return Ok(None);
    };
    let Some(mut run) = txn.run(run_id)? else {
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
    txn.put_run(&run)?;
    Ok(Some(run))
}

/// The events of a claim, once its write is done: the question's when it was resolved now, and
/// the next question's and the run's when the run was carried ahead.
pub(super) fn announce(
    events: &broadcast::Sender<Event>,
    claimed: &Claimed,
    options: &ClaimOptions<'_>,
) {
    // No subscribers is not an error: nobody is listening yet.
    if claimed.outcome != ClaimOutcome::AlreadyResolved {
        let _ = events.send(Event::of(&claimed.question));
    }
    if let (true, Some(ahead)) = (claimed.ahead, &options.ahead) {
        for event in Event::of_parked(ahead.run, ahead.next) {
            let _ = events.send(event);
        }
    }
}
