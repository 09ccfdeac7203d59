//! A claim, beyond `Question::apply`: what a claimer asks for with it ([`ClaimOptions`]: the run
//! parked on the question taken, or carried ahead to its next question; finishing at once), what
//! it found and did ([`Claimed`]), and its steps, written once for the stores that run them in Rust
//! (memory and embedded). Carry-ahead, as a store sees it, is all here.
//!
//! A claim is more than `Question::apply`: the resolution is audited, its outbox entry made due,
//! the run parked on the question carried ahead or taken for the claimer, and the question
//! finished at once when nothing is left to do. The two stores used to walk those eight steps
//! each in its own copy, and a copy is a second place for a rule to be wrong; here each store
//! only says how to read and write its records inside its atomic section ([`ClaimTxn`]: a mutex
//! held, a redb write transaction), and the order and conditions of the steps are this file's.
//! Redis runs the same steps in `claim.lua`; the differential test holds the three to one table
//! of cases.

use super::{Event, Inserted, Result, Work};
use askbridge_core::audit::AuditEntry;
use askbridge_core::run::{Acquire, Run};
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId, RunId};
use std::time::Duration;
use tokio::sync::broadcast;

/// How a claim is made.
#[derive(Clone, Copy, Debug)]
pub struct ClaimOptions<'a> {
    /// When a resolution's outbox entry becomes due, unless its effects are finished first.
    pub settle_after: Duration,
    /// Take the run parked on the question for the claimer.
    pub take_run: Option<TakeRun<'a>>,
    /// The claimer knows the resolution has no effect of its own (no callback, no rule to
    /// create): when the question was shown nowhere and any run waiting on it was handed over,
    /// the claim finishes it at once ([`Claimed::finished`]) instead of leaving it to a settle.
    pub finish_when_idle: bool,
    /// With `take_run`: the run as the claimer carried it ahead to its next question. A store
    /// that can ([`crate::store::Questions::claims_ahead`]) saves it and stores that question
    /// with a winning claim, instead of taking the run ([`Claimed::ahead`]).
    pub ahead: Option<AheadRun<'a>>,
}

/// A run carried ahead past the question being claimed: what the claimer's process computed,
/// before the claim, by executing the run's function with the answer up to its next question.
#[derive(Clone, Copy, Debug)]
pub struct AheadRun<'a> {
    /// The run as it was stored when it was carried ahead (its `updated_at`): if it has changed
    /// since, the claim takes the run instead.
    pub was: Millis,
    /// The run parked on `next`, its journal holding the answer.
    pub run: &'a Run,
    /// Its next question, not stored yet.
    pub next: &'a Question,
}

impl ClaimOptions<'_> {
    /// A claim whose outbox entry is due after `settle_after`.
    pub fn new(settle_after: Duration) -> Self {
        ClaimOptions {
            settle_after,
            take_run: None,
            finish_when_idle: false,
            ahead: None,
        }
    }
}

/// What a claim on this process's behalf may take with it: a run parked on the question, so the
/// claimer executes it at once (the hand-off is part of the claim, not a second step).
#[derive(Clone, Copy, Debug)]
pub struct TakeRun<'a> {
    /// This process's name as a run's executor.
    pub owner: &'a str,
    /// Until when it holds the run.
    pub lease_until: Millis,
}

/// What a claim found and did.
#[derive(Clone, Debug, PartialEq)]
pub struct Claimed {
    /// Won, lost to an earlier resolution, or turned into an expiry.
    pub outcome: ClaimOutcome,
    /// The question afterwards.
    pub question: Question,
    /// What remains for the resolution's effects to know (on a win or an expiry).
    pub work: Work,
    /// The run parked on this question, taken for the claimer ([`TakeRun`]).
    pub run: Option<Run>,
    /// Nothing is left to do for the resolution: it left the open index with the claim
    /// ([`ClaimOptions::finish_when_idle`]).
    pub finished: bool,
    /// The run was saved as [`ClaimOptions::ahead`] carried it, and its next question stored.
    pub ahead: bool,
}

impl Claimed {
    /// Would a claim with `options` finish this resolution at once? The rule every store applies.
    pub fn idle(
        question: &Question,
        work: &Work,
        run_taken: bool,
        options: &ClaimOptions<'_>,
    ) -> bool {
        options.finish_when_idle
            && work.shown.is_empty()
            && (question.run_id.is_none() || run_taken)
    }
}

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
