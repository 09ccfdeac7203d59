//! The bridge's one error type.
//!
//! It covers both failures (a store that does not answer) and the explicit non-answers of the
//! in-process API ([`Error::Declined`], [`Error::Timeout`], [`Error::Cancelled`]): a function that
//! asks gets an answer or one of these, never a silent empty value. The HTTP layer maps each
//! variant to a status code (`http::ApiError`).

use askbridge_core::{Question, render};

/// See the module documentation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad request, an answer that does not fit, or a command that does not parse.
    #[error(transparent)]
    Model(#[from] askbridge_core::Error),

    /// No question has this id (or it was purged after the retention period).
    #[error("There is no question {0}.")]
    NotFound(String),

    /// The question was resolved before this attempt; the existing resolution is attached.
    #[error("{}", render::already_resolved_line(.0))]
    AlreadyResolved(Box<Question>),

    /// No run has this id (or it was purged after the retention period).
    #[error("There is no run {0}.")]
    UnknownRun(String),

    /// No "always allow" rule has this id.
    #[error("There is no rule {0}.")]
    UnknownRule(String),

    /// The sender is not among the question's answerers.
    #[error("You can't answer this question.")]
    Forbidden,

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
        id: String,
    },

    /// The question's session was stopped before anyone answered.
    #[error("Question {id} was cancelled: its session was stopped.")]
    Cancelled {
        /// The question.
        id: String,
    },

    /// A run's function reached a question nobody has answered yet: the run is written down as
    /// waiting and the function returns. Flows propagate it with `?`; they must not swallow it
    /// (if one does, the run still waits: the context remembers it was suspended).
    #[error("The run waits for an answer to question {question_id}.")]
    Pending {
        /// The question it waits on.
        question_id: String,
    },

    /// Replaying a run found the function asking something other than what its journal recorded:
    /// the flow's code changed under a waiting run. The run fails rather than take a wrong answer.
    #[error(
        "The flow changed while the run waited: it now {found} where its journal recorded {expected}."
    )]
    Diverged {
        /// What the journal holds at this point.
        expected: String,
        /// What the function does now.
        found: String,
    },

    /// No flow of that name is registered.
    #[error("There is no flow `{0}`. Send /help to see the flows.")]
    UnknownFlow(String),

    /// A flow ended with an error of its own.
    #[error("{0}")]
    Flow(String),

    /// Another process took this run over (this one stalled past its lease); stop without writing.
    #[error("another askbridge process took this run over")]
    LeaseLost,

    /// A store refused to overwrite an existing id.
    #[error("a question with this id already exists")]
    IdTaken,

    /// Redis failed (after retries).
    #[error("Redis: {0}")]
    Redis(#[from] redis::RedisError),

    /// The embedded store failed, or a stored record is unreadable.
    #[error("store: {0}")]
    Embedded(String),

    /// A setting is missing or malformed.
    #[error("{variable}: {reason}")]
    Config {
        /// The environment variable.
        variable: &'static str,
        /// What is wrong and how to fix it.
        reason: String,
    },
}
