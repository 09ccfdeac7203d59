//! The store's roles: small traits of a few methods each, so that each can be read at a glance
//! and checked on its own by the conformance suite (`tests/it/store_conformance/`). A store is
//! all of them ([`super::Store`]).
//!
//! Writes carry what must happen with them: [`Questions::insert`] also announces the question,
//! and a winning [`Questions::claim`] also announces the resolution and appends its audit record,
//! in the same atomic step where the store can (one Lua script on Redis, one transaction in the
//! embedded store), so no crash can leave a resolution that nobody hears about.

use super::Result;
use super::{
    ClaimOptions, Claimed, Counts, Event, Inserted, ListFilter, Page, Parked, Saved, Shown, Work,
};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::batch::{DecideOutcome, Entry};
use askbridge_core::form::Draft;
use askbridge_core::quorum::Vote;
use askbridge_core::run::{Acquire, Run};
use askbridge_core::tally::VoteOutcome;
use askbridge_core::{Claim, Identity, Millis, Question, QuestionId, Rule, RuleId, RunId};
use async_trait::async_trait;
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// Questions: the registry and the claim-once rule.
#[async_trait]
pub trait Questions: Send + Sync {
    /// Stores a new pending question, enters it in the indexes, and announces it
    /// (`question.asked`). Never overwrites: an existing id gives [`Inserted::Taken`].
    async fn insert(&self, question: &Question) -> Result<Inserted>;

    /// The question with this id, if the store still has it.
    async fn get(&self, id: &QuestionId) -> Result<Option<Question>>;

    /// Applies `claim` to the stored question atomically ([`Question::apply`]). `snapshot` is the
    /// question as the caller last read it. When the question leaves `pending` (a win, or an
    /// expiry of a late claim) its event and audit record are written with it, its outbox entry
    /// becomes due after `options.settle_after` (or is finished at once, see
    /// [`ClaimOptions::finish_when_idle`]), and the result carries what its effects need
    /// ([`Work`]); with `options.take_run`, a run parked on the question is taken for the
    /// claimer in the same step. `None` when the question does not exist.
    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
        options: ClaimOptions<'_>,
    ) -> Result<Option<Claimed>>;

    /// Does [`Questions::claim`] carry runs ahead ([`ClaimOptions::ahead`])? A store that does
    /// not ignores it and takes the run; the caller then need not compute it.
    fn claims_ahead(&self) -> bool {
        false
    }

    /// Questions passing `filter`, newest first; the cost grows with the limit (and a target's or
    /// session's own questions), not with every question stored.
    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>>;

    /// How many questions are pending, how many were resolved since `since` by outcome, and how
    /// long recent answers took. May count questions resolved in the last moments whose effects
    /// are still running as pending.
    async fn counts(&self, since: Millis) -> Result<Counts>;
}

/// Votes on questions with a quorum: one per person, decided by the store. And a batch's
/// decisions: one per action, recorded the same way (without resolving), the last one making
/// the question ready for its completing claim.
#[async_trait]
pub trait Votes: Send + Sync {
    /// Records `vote` on the pending question `snapshot` names unless its voter has voted
    /// already, atomically ([`askbridge_core::tally::apply_vote`]), and announces it (`question.voted`). When the
    /// quorum is met with it, the question's outbox entry becomes due at `due_if_met`, so that
    /// if the voter's process dies before its completing claim a sweeper makes it. Returns what
    /// happened and the question with its votes as stored; `None` when it does not exist.
    async fn vote(
        &self,
        snapshot: &Question,
        vote: &Vote,
        due_if_met: Millis,
    ) -> Result<Option<(VoteOutcome, Question)>>;

    /// Records a batch's `entries` on the pending question `snapshot` names unless one of their
    /// actions was decided already, all of them or none, atomically
    /// ([`askbridge_core::batch::apply_decisions`]), and announces it (`question.voted`). When
    /// every action is decided with them, the question's outbox entry becomes due at
    /// `due_if_complete`, so that a sweeper makes the completing claim if the decider's process
    /// dies first. Returns what happened and the question as stored; `None` when it does not
    /// exist.
    async fn decide(
        &self,
        snapshot: &Question,
        entries: &[Entry],
        due_if_complete: Millis,
    ) -> Result<Option<(DecideOutcome, Question)>>;
}

/// Forms filled in one field at a time in chat: each person's draft, in the store, so that any
/// process takes the next field and a restart loses nothing.
#[async_trait]
pub trait Drafts: Send + Sync {
    /// `who`'s draft of form `id`, if they started one.
    async fn draft(&self, id: &QuestionId, who: &Identity) -> Result<Option<Draft>>;

    /// Stores `who`'s draft of form `id` for `ttl` (the form's time left, and then some). A store
    /// that keeps no TTLs keeps it until [`Admin::purge`] takes its question.
    async fn save_draft(
        &self,
        id: &QuestionId,
        who: &Identity,
        draft: &Draft,
        ttl: Duration,
    ) -> Result<()>;
}

/// Where questions were shown, so that any process can withdraw them.
#[async_trait]
pub trait Deliveries: Send + Sync {
    /// Records that a channel showed the question in `shown.target`. When the question is no
    /// longer pending (a delivery late to its resolution, which the settle that ran may have
    /// missed), it also enters the open index, due at `due_at` or kept due sooner, in the same
    /// step: any process's sweeper then withdraws the message, whatever becomes of this one.
    /// Returns whether it was so (resolved, not gone): only then has the caller a settle to run,
    /// and a message shown to a pending question (the common case) costs no second read.
    async fn record_shown(&self, id: &QuestionId, shown: &Shown, due_at: Millis) -> Result<bool>;

    /// Everywhere the question was shown.
    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>>;
}

/// The outbox: open questions and what remains to do after a resolution (see [`super`]).
#[async_trait]
pub trait Outbox: Send + Sync {
    /// Marks one of a resolved question's effects (`rule` ...) as done. Returns false if it
    /// already was.
    async fn mark_effect(&self, id: &QuestionId, effect: &str) -> Result<bool>;

    /// Where a question was shown and which of its effects are done, in one read.
    async fn work(&self, id: &QuestionId) -> Result<Work>;

    /// Open questions whose next action is due at `now`, at most `limit`. Each returned entry is
    /// leased: it is not returned again (to this or another process) for `lease`.
    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>>;

    /// When the open index next has something due, if it has anything: the sweeper sleeps
    /// until then (or until an event announces something sooner).
    async fn next_due(&self) -> Result<Option<Millis>>;

    /// Every open question's id (pending, or resolved with effects still to do). Used at start-up.
    async fn open_ids(&self) -> Result<Vec<QuestionId>>;

    /// Sets when question `id` is next due, entering it in the open index again if it had left.
    /// A stale entry is harmless: settling it again finds nothing to do.
    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<()>;

    /// Records `done` effects of a resolved question, then either removes it from the open and
    /// pending indexes (`retry_at` is `None`: everything is done) or makes it due again at
    /// `retry_at`, in one step. `question` may be `None` when the question itself is gone.
    /// `shown_seen` is how many places the caller's [`Work`] listed: a question recorded as shown
    /// in more by now (a delivery late to the settle) stays in the open index as
    /// [`Deliveries::record_shown`] left it, for a settle that withdraws that message too. `None`
    /// (the question is gone): no such check.
    async fn finish(
        &self,
        id: &QuestionId,
        question: Option<&Question>,
        done: &[String],
        retry_at: Option<Millis>,
        shown_seen: Option<usize>,
    ) -> Result<()>;
}

/// Dropping duplicate deliveries (a re-delivered update, a double click).
#[async_trait]
pub trait Dedupe: Send + Sync {
    /// True the first time `key` is seen within `ttl`.
    async fn first_sighting(&self, key: &str, ttl: Duration) -> Result<bool>;

    /// Takes delivery `key` in hand for `lease`, unless it was handled already or another
    /// holder's lease on it has not lapsed, in one step. A holder that dies before it
    /// [settles](Dedupe::settle) leaves only a lease, so the delivery's next coming is handled
    /// once the lease lapses, instead of being dropped as a duplicate of what never happened.
    async fn take_in_hand(&self, key: &str, lease: Duration) -> Result<Sighting>;

    /// Marks delivery `key`, taken in hand, as handled for `ttl`.
    async fn settle(&self, key: &str, ttl: Duration) -> Result<()>;

    /// Forgets `key`: a delivery whose handling failed in the store may be handled when it
    /// comes again.
    async fn forget(&self, key: &str) -> Result<()>;
}

/// What [`Dedupe::take_in_hand`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sighting {
    /// Not handled and not in anyone's hand: the caller holds it now.
    First,
    /// Handled already (settled, or seen by [`Dedupe::first_sighting`]).
    Handled,
    /// In another holder's hand, whose lease has not lapsed.
    InHand,
}

/// Sessions run by `askbridge exec`: a lease its holder renews and a mark once it is closed, in
/// the store, because the process that refuses a late ask or cancels a dead holder's questions is
/// not always the one the holder talked to.
#[async_trait]
pub trait Sessions: Send + Sync {
    /// Leases `session` until `until`, starting or extending its lease.
    async fn hold_session(&self, session: &str, until: Millis) -> Result<()>;

    /// Closes `session`: its lease ends, and [`Sessions::session_closed`] says so for `keep`.
    async fn close_session(&self, session: &str, keep: Duration) -> Result<()>;

    /// Opens a closed `session` again (a new `askbridge exec` naming it).
    async fn reopen_session(&self, session: &str) -> Result<()>;

    /// Was `session` closed (within the `keep` it was closed with)?
    async fn session_closed(&self, session: &str) -> Result<bool>;

    /// Leased sessions whose lease ran out before `now`, at most `limit`.
    async fn lapsed_sessions(&self, now: Millis, limit: usize) -> Result<Vec<String>>;
}

/// What a create sent with an `Idempotency-Key` made, so that a retry gets it back instead of a
/// second question or run.
#[async_trait]
pub trait Idempotency: Send + Sync {
    /// Records `value` under `key` for `ttl` unless `key` holds a value already, atomically.
    /// Returns `None` when this call recorded it, else the value held.
    async fn remember_key(&self, key: &str, value: &str, ttl: Duration) -> Result<Option<String>>;

    /// Records `value` under `key` for `ttl`, whatever it held (what the create made, once made).
    async fn replace_key(&self, key: &str, value: &str, ttl: Duration) -> Result<()>;

    /// Forgets `key` (the create it was recorded for failed).
    async fn forget_key(&self, key: &str) -> Result<()>;
}

/// Leader leases: which process holds what only one may hold at a time (a chat platform's long
/// poll, its gateway). A lease lapses unless its holder extends it, so a dead holder's is taken
/// over.
#[async_trait]
pub trait Leases: Send + Sync {
    /// Takes lease `name` for `owner` for `ttl`, or extends it when `owner` holds it already.
    /// False when another holds it.
    async fn hold_lease(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool>;

    /// Gives lease `name` up, if `owner` holds it.
    async fn release_lease(&self, name: &str, owner: &str) -> Result<()>;
}

/// Follow-up runs and the leases of the processes executing them.
#[async_trait]
pub trait Runs: Send + Sync {
    /// Stores a new run (never overwriting) and enters it in the lease index.
    async fn insert_run(&self, run: &Run) -> Result<Inserted>;

    /// The run with this id.
    async fn get_run(&self, id: &RunId) -> Result<Option<Run>>;

    /// Takes run `id` for `owner` until `lease_until` if `why` applies ([`Run::acquire`]),
    /// atomically: of several processes trying at once, one gets it. Returns the run as taken.
    async fn acquire_run(
        &self,
        id: &RunId,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>>;

    /// Writes `run` if `owner` still holds it, announcing it when it parks or ends
    /// ([`Event::of_run`]); a run that parks learns in the same step whether its question was
    /// resolved meanwhile.
    async fn save_run(&self, run: &Run, owner: &str) -> Result<Saved>;

    /// Parks `run` (held by `owner`, now waiting on `question`) and stores `question` with it, in
    /// one step: [`Questions::insert`] and [`Runs::save_run`] together, so a run never waits on a
    /// question that is not stored. Nothing is written when `owner` no longer holds the run, or
    /// when a question with that id exists.
    async fn park_run(&self, run: &Run, owner: &str, question: &Question) -> Result<Parked>;

    /// Stores a new run already parked on its first question, with the question: `started` (as
    /// [`Runs::insert_run`] would) and then `parked` (as [`Runs::park_run`] would, for `owner`),
    /// in one step where the store can. [`Saved::Lost`] when a run with that id exists (nothing
    /// is written); [`Parked::QuestionTaken`] when a question with that id does (the run is
    /// stored as it started). For a caller that waits for the run's first question anyway: one
    /// write instead of two.
    async fn insert_parked(
        &self,
        started: &Run,
        parked: &Run,
        owner: &str,
        question: &Question,
    ) -> Result<Parked> {
        insert_then_park(self, started, parked, owner, question).await
    }

    /// Runs needing an executor whose lease ran out before `now`.
    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<RunId>>;

    /// Gives up on a run whose record does not read: it leaves the lease index (so recovery
    /// stops retrying it) and, where the store keeps its state apart from its record, is marked
    /// failed with `why`.
    async fn abandon_run(&self, id: &RunId, why: &str) -> Result<()>;
}

/// [`Runs::insert_parked`] in two steps: for stores that cannot do it in one, and for a
/// question that cannot share the run's step.
pub(crate) async fn insert_then_park<S: Runs + ?Sized>(
    store: &S,
    started: &Run,
    parked: &Run,
    owner: &str,
    question: &Question,
) -> Result<Parked> {
    if store.insert_run(started).await? == Inserted::Taken {
        return Ok(Parked::Saved(Saved::Lost));
    }
    store.park_run(parked, owner, question).await
}

/// "Always allow" rules.
#[async_trait]
pub trait Rules: Send + Sync {
    /// Stores a rule (replacing one with the same id).
    async fn put_rule(&self, rule: &Rule) -> Result<()>;

    /// Every rule.
    async fn rules(&self) -> Result<Vec<Rule>>;

    /// The rules for the action whose digest is `digest` that apply in session `session_id`
    /// (that session's and those everywhere), whoever made them: found through an index, at a
    /// cost that does not grow with the number of rules. Any order.
    async fn rules_for(&self, digest: &str, session_id: &str) -> Result<Vec<Rule>>;

    /// Deletes a rule and returns it; `None` when there was none.
    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>>;
}

/// The audit trail.
#[async_trait]
pub trait AuditLog: Send + Sync {
    /// Appends a record.
    async fn append_audit(&self, entry: &AuditEntry) -> Result<()>;

    /// Records passing `filter`, oldest first.
    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>>;
}

/// Events, from every process sharing the store.
pub trait Events: Send + Sync {
    /// Events published from now on, by any process sharing this store.
    fn subscribe(&self) -> broadcast::Receiver<Event>;

    /// Changes each time this process may have missed events (its reader lost the store and
    /// came back: Redis keeps events out of its AOF, so a restart can drop some unread), so that
    /// waiters re-read the store then rather than at their next periodic check. `None` for
    /// stores whose events cannot be missed.
    fn missed(&self) -> Option<watch::Receiver<u64>> {
        None
    }
}

/// Paged listings for people (the ops page's runs and history views): newest first, a page at
/// a time, at a cost that does not grow with what the store holds. Kept apart from [`Runs`] and
/// [`Questions`], which the hot path needs.
#[async_trait]
pub trait Listings: Send + Sync {
    /// One page of the runs `filter` selects, newest first (see [`super::RunFilter`]), and the
    /// cursor of the next.
    async fn list_runs(&self, filter: &super::RunFilter) -> Result<Page<Run>>;

    /// One page of resolved questions, most recently resolved first (see
    /// [`super::HistoryFilter`]), and the cursor of the next.
    async fn history(&self, filter: &super::HistoryFilter) -> Result<Page<Question>>;

    /// One page of the "always allow" rules, newest first: `limit` after `after` (creation time
    /// and id), and the cursor of the next.
    async fn rules_page(&self, after: Option<&super::Cursor>, limit: usize) -> Result<Page<Rule>>;
}

/// Looking after the store itself.
#[async_trait]
pub trait Admin: Send + Sync {
    /// One line for logs and `/healthz` (no passwords).
    fn describe(&self) -> String;

    /// False for the in-memory store: everything is lost on exit.
    fn is_durable(&self) -> bool;

    /// Checks the store answers.
    async fn ping(&self) -> Result<()>;

    /// Deletes resolved questions older than the retention and other expired bookkeeping.
    async fn purge(&self, now: Millis) -> Result<usize>;

    /// The store's shape now: one node, or a cluster and how whole it is.
    async fn topology(&self) -> Result<super::Topology>;

    /// Round-trip times by operation, for a store across a network.
    fn round_trips(&self) -> Option<super::RoundTrips> {
        None
    }
}
