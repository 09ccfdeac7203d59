//! Why a flow's function stopped before returning its result.
//!
//! [`Interrupt::Suspended`] is not a failure: the run waits for a person and will go on when they
//! answer. The others end the run (failed, with their text as its result), except an unavailable
//! store, after which the run is replayed from its journal, and [`Interrupt::Superseded`], after
//! which another process carries on.

use crate::bridge::CreateError;
use crate::{AskError, Error, NoAnswer};
use askbridge_core::QuestionId;

/// See the module documentation. Flows pass it on with `?`.
#[derive(Debug, thiserror::Error)]
pub enum Interrupt {
    /// The run reached a question nobody has answered yet: it is written down as waiting and the
    /// function returns. A flow must pass this on (if it swallows it, the run still waits: the
    /// context remembers it was suspended).
    #[error("The run waits for an answer to question {question_id}.")]
    Suspended {
        /// The question it waits on.
        question_id: QuestionId,
    },

    /// Nobody answered: declined, timed out without a default, or cancelled.
    #[error(transparent)]
    NoAnswer(#[from] NoAnswer),

    /// Replaying the run found the function doing something other than what its journal
    /// recorded: the flow's code changed under a waiting run. The run fails rather than take a
    /// wrong answer.
    #[error(
        "The flow changed while the run waited: it now {found} where its journal recorded {expected}."
    )]
    Diverged {
        /// What the journal holds at this point.
        expected: String,
        /// What the function does now.
        found: String,
    },

    /// Another askbridge process took this run over (this one stalled past its lease).
    #[error("another askbridge process took this run over")]
    Superseded,

    /// The flow failed, in its own words.
    #[error("{0}")]
    Failed(String),

    /// askbridge failed under the flow. A retryable failure (an unavailable store) means "replay
    /// later"; anything else (a corrupt record, say) ends the run with its message.
    #[error(transparent)]
    Error(#[from] Error),
}

impl Interrupt {
    /// A flow's own failure.
    pub fn fail(message: impl Into<String>) -> Self {
        Interrupt::Failed(message.into())
    }
}

impl From<AskError> for Interrupt {
    fn from(error: AskError) -> Self {
        match error {
            AskError::NoAnswer(no) => Interrupt::NoAnswer(no),
            AskError::Failed(error) => Interrupt::Error(error),
        }
    }
}

impl From<crate::store::Error> for Interrupt {
    fn from(error: crate::store::Error) -> Self {
        Interrupt::Error(error.into())
    }
}

impl From<CreateError> for Interrupt {
    fn from(error: CreateError) -> Self {
        match error {
            CreateError::Failed(error) => Interrupt::Error(error),
            CreateError::Diverged { expected, found } => Interrupt::Diverged { expected, found },
        }
    }
}
