//! What can go wrong, kept apart from what is merely an outcome.
//!
//! - [`Error`]: a request that cannot be done (bad input, an unknown id, a stranger, a store that
//!   does not answer). The HTTP layer maps each variant to a status code (`http::ApiError`).
//!   Its `Display` says its own part and `source()` the cause; what shows it to a person shows
//!   the chain (`askbridge_core::error::Chain`).
//! - [`NoAnswer`]: why an ask gives no answer (declined, timed out, cancelled). Not a failure: it
//!   is one of the explicit outcomes a function that asks must handle, never an empty value.
//! - [`AskError`]: either of the two, for the in-process API (`Session::ask`), so `?` passes both
//!   on while a `match` can tell them apart.
//!
//! A follow-up run's suspension is not here at all: it is control flow, in
//! [`crate::flows::Interrupt`].

use crate::store;
use askbridge_core::{Question, QuestionId, render};

/// See the module documentation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad request, an answer that does not fit, or a command that does not parse.
    #[error(transparent)]
    Model(#[from] askbridge_core::Error),

    /// No question has this id (or it was purged after the retention period).
    #[error("There is no question {0}.")]
    NotFound(QuestionId),

    /// The question was resolved before this attempt; the existing resolution is attached.
    #[error("{}", render::already_resolved_line(.0))]
    AlreadyResolved(Box<Question>),

    /// No run has this id (or it was purged after the retention period).
    #[error("There is no run {0}.")]
    UnknownRun(String),

    /// A run's answer named a question the run does not wait on (or the run waits on none).
    #[error("{}", run_not_waiting_line(.run, .state, .waiting_on.as_ref()))]
    RunNotWaiting {
        /// The run.
        run: String,
        /// Its state (`running`, `waiting`, `done`, `failed`).
        state: &'static str,
        /// The question it waits on, if any.
        waiting_on: Option<QuestionId>,
    },

    /// No "always allow" rule has this id.
    #[error("There is no rule {0}.")]
    UnknownRule(String),

    /// The sender is not among the question's answerers.
    #[error("You can't answer this question.")]
    Forbidden,

    /// A quorum member voted a second time; the question (with the first vote) is attached.
    #[error("You have voted on this question already; each person votes once. {}", render::progress_line(.0).unwrap_or_default())]
    AlreadyVoted(Box<Question>),

    /// A quorum member's decisions on some of a batch's actions, kept until they cover every
    /// action (their vote): nothing is refused, and the question is unchanged.
    #[error("{}", noted_line(*.noted, .question.actions.len()))]
    Noted {
        /// The question, as it stands.
        question: Box<Question>,
        /// How many actions the member has decided so far.
        noted: usize,
    },

    /// A target names a surface that no configured channel serves.
    #[error("No channel can show questions in `{target}`: {hint}")]
    UnknownTarget {
        /// The target.
        target: String,
        /// What to configure.
        hint: String,
    },

    /// Nobody can be asked: no surface can reach a person.
    #[error(
        "No surface can reach a person to answer this question (no console, no chat channel \
         and no target given); check can_ask() first, or configure a channel."
    )]
    NoSurface,

    /// No flow of that name is registered.
    #[error("There is no flow `{0}`. Send /help to see the flows.")]
    UnknownFlow(String),

    /// The store failed; its kind says whether trying again later may work.
    #[error(transparent)]
    Store(#[from] store::Error),
}

fn run_not_waiting_line(run: &str, state: &str, waiting_on: Option<&QuestionId>) -> String {
    match waiting_on {
        Some(question) => {
            format!("Run {run} does not wait on that question; it waits on {question}.")
        }
        None => format!("Run {run} waits on no question; it is {state}."),
    }
}

impl Error {
    /// True when trying again later may work (a store that did not answer, a delivery worth
    /// retrying), false for everything that will fail the same way again. askbridge's one word
    /// for it: see `askbridge_core::error`.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Store(error) => error.is_retryable(),
            Error::Model(error) => error.is_retryable(),
            _ => false,
        }
    }
}

/// What a quorum member is told of a partial list ([`Error::Noted`]; 0 when not yet known).
fn noted_line(noted: usize, of: usize) -> String {
    let count = if noted == 0 {
        String::new()
    } else {
        format!(" ({noted} of {of} actions)")
    };
    format!(
        "Noted{count}. With a quorum, your vote is your decision on every action: decide the rest too."
    )
}

/// Why an ask gives no answer. Each is an outcome the asking function handles; see the module
/// documentation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoAnswer {
    /// The person declined (or rejected an approval), maybe saying why.
    #[error("Declined{}", .message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Declined {
        /// Their reason, if they gave one.
        message: Option<String>,
    },

    /// Nobody answered in time and the question had no default.
    #[error("Nobody answered question {id} in time.")]
    Timeout {
        /// The question.
        id: QuestionId,
    },

    /// The question's session was stopped before anyone answered.
    #[error("Question {id} was cancelled: its session was stopped.")]
    Cancelled {
        /// The question.
        id: QuestionId,
    },
}

/// An ask that gave no answer: an outcome ([`NoAnswer`]) or a failure ([`Error`]).
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// Nobody answered: declined, timed out, or cancelled.
    #[error(transparent)]
    NoAnswer(#[from] NoAnswer),
    /// The ask could not be made or waited for.
    #[error(transparent)]
    Failed(#[from] Error),
}

impl From<store::Error> for AskError {
    fn from(error: store::Error) -> Self {
        AskError::Failed(error.into())
    }
}

impl From<askbridge_core::Error> for AskError {
    fn from(error: askbridge_core::Error) -> Self {
        AskError::Failed(error.into())
    }
}
