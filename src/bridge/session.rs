//! One session of the in-process API: the seed's `runtime.ask` / `confirm` / `can_ask`.

use super::{Bridge, approval_of, outcomes_of};
use crate::{AskError, Error, NoAnswer};
use askbridge_core::actions::ActionOutcome;
use askbridge_core::error::Chain;
use askbridge_core::{Actor, Answer, Approval, Kind, NewQuestion, Question, QuestionId, Status};

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct Session {
    bridge: Bridge,
    id: String,
}

impl Session {
    pub(super) fn new(bridge: Bridge, id: String) -> Self {
        Session { bridge, id }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// False when no surface can reach a person (headless): branch on it instead of asking.
    pub fn can_ask(&self) -> bool {
        self.bridge
            .can_reach(&self.bridge.options().default_targets)
    }

    fn prepare(&self, mut request: NewQuestion) -> Result<NewQuestion, Error> {
        request.session_id = self.id.clone();
        if request.targets.is_empty() {
            request.targets = self.bridge.options().default_targets.clone();
        }
        if !self.bridge.can_reach(&request.targets) {
            return Err(Error::NoSurface);
        }
        Ok(request)
    }

    /// Asks and waits. Returns the answer, or why there is none ([`NoAnswer`]: declined, timed
    /// out without a default — the default is returned when there is one —, or cancelled), or
    /// why it could not ask ([`AskError::Failed`]).
    pub async fn ask(&self, request: NewQuestion) -> Result<Answer, AskError> {
        let question = self.bridge.create(self.prepare(request)?).await?;
        let done = self.bridge.wait_for_outcome(&question.id).await?;
        Ok(outcome_of(done)?)
    }

    /// Asks for a form (`NewQuestion::ask(prompt).form(schema)`) and reads the answer, an
    /// object checked against the form, into `T` (any `serde` type whose fields match).
    pub async fn form<T: serde::de::DeserializeOwned>(
        &self,
        request: NewQuestion,
    ) -> Result<T, AskError> {
        let answer = self.ask(request).await?;
        typed(answer).map_err(|error| AskError::Failed(error.into()))
    }

    /// Asks yes or no. Never fails: a decline, a timeout without default, a cancellation or an
    /// error all read as `false` (the safe answer), and are logged.
    pub async fn confirm(&self, request: NewQuestion) -> bool {
        match self.ask(request.kind(Kind::Confirm)).await {
            Ok(Answer::Bool(yes)) => yes,
            Ok(other) => {
                tracing::warn!(answer = %other, "confirm got a non-boolean answer; reading it as no");
                false
            }
            Err(error) => {
                tracing::info!(session_id = %self.id, error = %Chain(&error), "confirm reads as no");
                false
            }
        }
    }

    /// Asks for approval of an action (`NewQuestion::ask(prompt).approve(action)`) and waits.
    /// Returns how it was allowed (once, always, or by an existing rule, without asking), or
    /// [`NoAnswer::Declined`] with the approver's feedback, [`NoAnswer::Timeout`] (denied, unless
    /// the question's default allows), [`NoAnswer::Cancelled`].
    pub async fn approve(&self, request: NewQuestion) -> Result<Approval, AskError> {
        let question = self
            .bridge
            .create(self.prepare(request.kind(Kind::Approval))?)
            .await?;
        let done = if question.is_pending() {
            self.bridge.wait_for_outcome(&question.id).await?
        } else {
            question
        };
        approval_of(&done)
    }

    /// Asks for approval of several actions in one question (`NewQuestion::ask(prompt)
    /// .approve_all(actions)`, a batch) and waits until each is decided. Returns one outcome
    /// per action, in order (approved, edited, responded, rejected: each one the caller must
    /// handle), or [`NoAnswer::Timeout`] (nothing runs: the decisions made before the deadline
    /// are in the question's resolution) or [`NoAnswer::Cancelled`].
    pub async fn approve_actions(
        &self,
        request: NewQuestion,
    ) -> Result<Vec<ActionOutcome>, AskError> {
        let question = self
            .bridge
            .create(self.prepare(request.kind(Kind::Approval))?)
            .await?;
        let done = if question.is_pending() {
            self.bridge.wait_for_outcome(&question.id).await?
        } else {
            question
        };
        outcomes_of(&done)
    }

    /// Cancels this session's pending questions.
    pub async fn stop(&self) -> Result<usize, Error> {
        self.bridge
            .cancel_session(&self.id, Actor::askbridge("stop"), None)
            .await
    }
}

/// What a waiter gets for a resolved question: the answer, or the explicit reason there is none.
pub fn outcome_of(question: Question) -> Result<Answer, NoAnswer> {
    let (value, message) = question
        .resolution
        .map(|r| (r.value, r.message))
        .unwrap_or_default();
    outcome_from(question.id, question.status, value, message)
}

/// [`outcome_of`] from a resolution's parts, as a run's journal records them: a replayed ask
/// returns exactly what it returned live.
pub fn outcome_from(
    id: QuestionId,
    status: Status,
    value: Option<Answer>,
    message: Option<String>,
) -> Result<Answer, NoAnswer> {
    match status {
        // An answered question always carries its value; a record without one reads as no
        // answer rather than an empty one.
        Status::Answered => value.ok_or(NoAnswer::Timeout { id }),
        Status::Declined => Err(NoAnswer::Declined { message }),
        Status::Expired => value.ok_or(NoAnswer::Timeout { id }),
        Status::Cancelled => Err(NoAnswer::Cancelled { id }),
        Status::Pending => Err(NoAnswer::Timeout { id }),
    }
}

/// A form's answer read into `T`: an object whose fields `T` takes.
pub fn typed<T: serde::de::DeserializeOwned>(answer: Answer) -> Result<T, askbridge_core::Error> {
    let not_fit = |reason: String| askbridge_core::Error::NotFit { reason };
    match answer {
        Answer::Object(fields) => serde_json::from_value(serde_json::Value::Object(fields))
            .map_err(|e| {
                not_fit(format!(
                    "the form's answer does not read as the type asked for: {e}"
                ))
            }),
        other => Err(not_fit(format!(
            "expected a form's answer (an object), got {other}"
        ))),
    }
}
