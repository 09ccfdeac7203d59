//! What the questions, deliveries and outbox roles take and give: which questions to list, what an
//! insert did, where a question was shown and what its resolution's effects need, counts.

use askbridge_core::{Question, Status, Target};
use serde::{Deserialize, Serialize};

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
