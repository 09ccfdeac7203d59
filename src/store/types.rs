//! The values the store's roles take and return.

use askbridge_core::run::{Run, RunState};
use askbridge_core::{ClaimOutcome, Millis, Question, Rule, Status, Target};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How many events a slow subscriber may fall behind before it skips ahead.
pub const EVENT_BUFFER: usize = 4096;

/// Which questions to list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only this session's.
    pub session_id: Option<String>,
    /// Only in this state; `None` lists the pending ones.
    pub status: Option<Status>,
    /// Only those shown in this target (pending ones only).
    pub target: Option<Target>,
    /// At most this many, newest first; 0 means the store's default of 1000.
    pub limit: usize,
}

impl ListFilter {
    /// The pending questions.
    pub fn pending() -> Self {
        ListFilter::default()
    }

    /// The limit to apply.
    pub fn effective_limit(&self) -> usize {
        if self.limit == 0 { 1000 } else { self.limit }
    }

    /// Does `question` pass this filter?
    pub fn accepts(&self, question: &Question) -> bool {
        let status = self.status.unwrap_or(Status::Pending);
        question.status == status
            && self
                .session_id
                .as_ref()
                .is_none_or(|s| *s == question.session_id)
            && self.target.as_ref().is_none_or(|t| question.may_show_in(t))
    }
}

/// What happened, for `/api/events` and for waiters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// A question was asked.
    #[serde(rename = "question.asked")]
    Asked,
    /// It was answered.
    #[serde(rename = "question.replied")]
    Replied,
    /// It was declined or rejected.
    #[serde(rename = "question.rejected")]
    Rejected,
    /// Its deadline passed.
    #[serde(rename = "question.expired")]
    Expired,
    /// Its session was stopped.
    #[serde(rename = "question.cancelled")]
    Cancelled,
    /// A member of its quorum voted; it is still pending, with the vote.
    #[serde(rename = "question.voted")]
    Voted,
    /// A run parked on a question nobody has answered yet.
    #[serde(rename = "run.waiting")]
    RunWaiting,
    /// A run ended, done or failed.
    #[serde(rename = "run.finished")]
    RunFinished,
    /// An "always allow" rule was created.
    #[serde(rename = "rule.created")]
    RuleCreated,
    /// A rule was revoked.
    #[serde(rename = "rule.revoked")]
    RuleRevoked,
}

impl EventKind {
    /// The event name, as sent over Server-Sent Events.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Asked => "question.asked",
            EventKind::Replied => "question.replied",
            EventKind::Rejected => "question.rejected",
            EventKind::Expired => "question.expired",
            EventKind::Cancelled => "question.cancelled",
            EventKind::Voted => "question.voted",
            EventKind::RunWaiting => "run.waiting",
            EventKind::RunFinished => "run.finished",
            EventKind::RuleCreated => "rule.created",
            EventKind::RuleRevoked => "rule.revoked",
        }
    }

    /// The event announcing that a question reached `status`.
    pub fn for_status(status: Status) -> Self {
        match status {
            Status::Pending => EventKind::Asked,
            Status::Answered => EventKind::Replied,
            Status::Declined => EventKind::Rejected,
            Status::Expired => EventKind::Expired,
            Status::Cancelled => EventKind::Cancelled,
        }
    }
}

/// An event: what happened, and the question or run as it is afterwards. (Both variants are
/// records of a few hundred bytes; boxing one would only add an allocation per event.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "EventWire")]
pub enum Event {
    /// About a question.
    Question {
        /// What happened.
        kind: EventKind,
        /// The question afterwards.
        question: Question,
    },
    /// About a run.
    Run {
        /// What happened.
        kind: EventKind,
        /// The run afterwards.
        run: Run,
    },
    /// About a rule: created, or revoked (the rule as it was).
    Rule {
        /// What happened.
        kind: EventKind,
        /// The rule.
        rule: Rule,
    },
}

/// How an event reads: one struct with either member, so reading needs no buffering (every
/// process reads every event).
#[derive(Deserialize)]
struct EventWire {
    kind: EventKind,
    #[serde(default)]
    question: Option<Question>,
    #[serde(default)]
    run: Option<Run>,
    #[serde(default)]
    rule: Option<Rule>,
}

impl TryFrom<EventWire> for Event {
    type Error = &'static str;

    fn try_from(wire: EventWire) -> std::result::Result<Self, Self::Error> {
        match (wire.question, wire.run, wire.rule) {
            (Some(question), _, _) => Ok(Event::Question {
                kind: wire.kind,
                question,
            }),
            (None, Some(run), _) => Ok(Event::Run {
                kind: wire.kind,
                run,
            }),
            (None, None, Some(rule)) => Ok(Event::Rule {
                kind: wire.kind,
                rule,
            }),
            (None, None, None) => Err("an event carries a question, a run or a rule"),
        }
    }
}

impl Event {
    /// The event for the question's current state.
    pub fn of(question: &Question) -> Self {
        Event::Question {
            kind: EventKind::for_status(question.status),
            question: question.clone(),
        }
    }

    /// The event announcing a vote counted on `question` (still pending, with its votes).
    pub fn voted(question: &Question) -> Self {
        Event::Question {
            kind: EventKind::Voted,
            question: question.clone(),
        }
    }

    /// The event for a run that parked or ended; `None` for other states (nobody waits on them).
    pub fn of_run(run: &Run) -> Option<Self> {
        let kind = match run.state {
            RunState::Waiting => EventKind::RunWaiting,
            RunState::Done | RunState::Failed => EventKind::RunFinished,
            RunState::Running => return None,
        };
        Some(Event::Run {
            kind,
            run: run.clone(),
        })
    }

    /// The events of a run parked on a question it has just asked, in the order every store
    /// publishes them (the question exists before the run waits on it, as a script appends
    /// them): the question asked, then the run waiting.
    pub fn of_parked(run: &Run, question: &Question) -> impl Iterator<Item = Self> {
        std::iter::once(Event::of(question)).chain(Event::of_run(run))
    }

    /// What happened.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Question { kind, .. } | Event::Run { kind, .. } | Event::Rule { kind, .. } => {
                *kind
            }
        }
    }

    /// The question, for a question's event.
    pub fn question(&self) -> Option<&Question> {
        match self {
            Event::Question { question, .. } => Some(question),
            Event::Run { .. } | Event::Rule { .. } => None,
        }
    }
}

/// Where a question was shown: the target and the channel's reference to its message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    /// The target (`telegram:-100`).
    pub target: Target,
    /// The channel's reference (a message id).
    pub reference: String,
}

/// What an insert did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// The record is stored.
    Created,
    /// Another record has this id; nothing was written.
    Taken,
    /// A question's session is closed (its `askbridge exec` ended): nothing was written. Only a
    /// question's plain insert checks; a run's records never are.
    Closed,
}

/// Settings every store takes.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// How long resolved questions are kept.
    pub retention: Duration,
    /// How long audit records are kept.
    pub audit_retention: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            retention: Duration::from_secs(7 * 24 * 3600),
            audit_retention: Duration::from_secs(90 * 24 * 3600),
        }
    }
}

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

/// What a resolved question's effects need to know: where it was shown and what is done.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Everywhere it was shown.
    pub shown: Vec<Shown>,
    /// The effects already done (`withdraw:<target>`, `resume`, `callback`, `rule`).
    pub done: Vec<String>,
}

/// Counts for the ops page's summary line (`GET /api/stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pending now (may include questions resolved in the last moments whose effects are still
    /// running).
    pub pending: usize,
    /// Resolved since the instant asked for: answered, declined, expired, cancelled.
    pub resolved: [usize; 4],
    /// Time from asked to answered of recently answered questions (at most about 2,000 of the
    /// most recent), in milliseconds.
    pub answer_ms: Vec<u64>,
}

/// The final statuses in the order of [`Counts::resolved`].
pub const FINAL: [Status; 4] = [
    Status::Answered,
    Status::Declined,
    Status::Expired,
    Status::Cancelled,
];

/// What saving a run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    /// Another process holds the run now; nothing was written.
    Lost,
    /// Written.
    Written,
    /// Written as waiting, but the question it waits on was resolved meanwhile (its resume found
    /// the run still busy): take the run up again.
    WaitsOnResolved,
}

/// What parking a run on a new question did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parked {
    /// The question was stored, and the run saved as this says ([`Saved::Lost`]: the run is
    /// held by another, and nothing at all was written).
    Saved(Saved),
    /// A question with its id exists already (a replay after a crash, or an approval stored
    /// when asked): nothing was written; check it and save the run on its own.
    QuestionTaken,
}
