//! Events: what happened to a question, a run or a rule, as `/api/events` and waiters hear it.
//! Every store announces with the write it announces (a script, a transaction, the lock), so no
//! crash separates them.

use askbridge_core::run::{Run, RunState};
use askbridge_core::{Question, Rule, Status};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How many events a slow subscriber may fall behind before it skips ahead.
pub const EVENT_BUFFER: usize = 4096;

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

/// An event: what happened, and the question or run as it is afterwards. The question and the
/// run are shared: every subscriber of a process's channel (its waiters' pump, each
/// `/api/events` client) receives a clone of every event, which copied the whole question or
/// run with its journal each time (two copies of the question per ask and answer in the
/// benchmark, one per subscriber more).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "EventWire")]
pub enum Event {
    /// About a question.
    Question {
        /// What happened.
        kind: EventKind,
        /// The question afterwards.
        question: Arc<Question>,
    },
    /// About a run.
    Run {
        /// What happened.
        kind: EventKind,
        /// The run afterwards.
        run: Arc<Run>,
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
                question: Arc::new(question),
            }),
            (None, Some(run), _) => Ok(Event::Run {
                kind: wire.kind,
                run: Arc::new(run),
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
            question: Arc::new(question.clone()),
        }
    }

    /// The event announcing a vote counted on `question` (still pending, with its votes).
    pub fn voted(question: &Question) -> Self {
        Event::Question {
            kind: EventKind::Voted,
            question: Arc::new(question.clone()),
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
            run: Arc::new(run.clone()),
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
