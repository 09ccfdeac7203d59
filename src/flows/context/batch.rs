//! `ctx.approve_actions`: several actions in one approval from a flow, as
//! [`crate::Session::approve_actions`] asks them. In a run, the journal keeps the batch's
//! decisions, so a replay returns the same outcome per action, and the fingerprint covers the
//! batch's digest, so another list of actions is another ask.

use super::{FlowContext, Mode};
use crate::flows::Interrupt;
use askbridge_core::actions::ActionOutcome;
use askbridge_core::run::AskRecord;
use askbridge_core::{Kind, NewQuestion, Status};

impl FlowContext {
    /// Asks for approval of several actions in one question
    /// (`NewQuestion::ask(prompt).approve_all(actions)`): one [`ActionOutcome`] per action, in
    /// order, or `NoAnswer` (timed out before every action was decided, cancelled);
    /// `Suspended` while some are undecided. Approvers as for [`FlowContext::approve`].
    pub async fn approve_actions(
        &self,
        request: NewQuestion,
    ) -> Result<Vec<ActionOutcome>, Interrupt> {
        let request = request.kind(Kind::Approval);
        if let Mode::Blocking(session) = &self.inner.mode {
            return Ok(session.approve_actions(request).await?);
        }
        let actions: Vec<_> = request.actions.iter().map(|a| a.action.clone()).collect();
        let record = self.recorded(request).await?;
        Ok(outcomes(record, &actions)?)
    }
}

/// The outcome per action a journal's record of a batch gives.
fn outcomes(
    record: AskRecord,
    actions: &[askbridge_core::Action],
) -> Result<Vec<ActionOutcome>, crate::NoAnswer> {
    if record.status == Status::Answered && record.decisions.len() == actions.len() {
        return Ok(record
            .decisions
            .iter()
            .zip(actions)
            .map(|(entry, action)| ActionOutcome::of(entry, action))
            .collect());
    }
    // Not every action decided: no answer, as the resolution's status says.
    let status = match record.status {
        Status::Answered => Status::Expired,
        other => other,
    };
    crate::bridge::outcome_from(record.question_id, status, None, record.message)
        .map(|_| Vec::new())
}
