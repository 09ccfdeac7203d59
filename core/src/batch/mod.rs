//! Several actions in one approval: an agent's model often proposes several tool calls in one
//! turn, and LangChain's human-in-the-loop middleware pauses them in one interrupt expecting one
//! decision per action, in order.
//!
//! A batch is an approval with `actions` (1 to [`MAX_ACTIONS`], each with its allowed decisions
//! and `args_schema`, checked as one action is). Each action is decided as a single approval
//! would be: [`Question::action_view`] is the one-action approval it stands for, so the checks
//! of a decision (allowed, schema, edit, respond) are the single approval's, not a copy. The
//! first decision on an action wins ([`apply_decisions`]: the state machine every store makes
//! atomic, as votes are), and the question resolves when every action has a decision, through
//! the same claim-once path as any answer ([`completing_claim`], as a met quorum does). The
//! batch has one digest, over its actions' digests in order, so a button's command names the
//! batch and an action number and stays within Telegram's 64 bytes.
//!
//! With a quorum, every member decides every action; their complete list is their vote
//! ([`crate::tally`]), and the quorum is met when `needs` lists agree.

mod read;
pub mod render;

use crate::Error;
use crate::actor::Decider;
use crate::approval::{Action, ApprovalReply};
use crate::decision::Decision;
use crate::id::RuleId;
use crate::question::{Claim, Kind, Question, Transition};
use crate::time::Millis;

pub use crate::actions::{BatchAction, Entry, answer_of, digest};
pub use crate::question::Choice;
pub use read::{BatchItem, BatchReply};

pub use crate::actions::MAX_ACTIONS;

/// What [`apply_decisions`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecideOutcome {
    /// Recorded; some actions are still undecided.
    Recorded,
    /// Recorded, and with them every action is decided: [`completing_claim`] resolves it.
    Complete,
    /// This action was decided already; nothing changed.
    Decided(usize),
    /// The question is no longer pending; nothing changed.
    AlreadyResolved,
}

impl DecideOutcome {
    /// True when the entries were recorded.
    pub fn is_recorded(self) -> bool {
        matches!(self, DecideOutcome::Recorded | DecideOutcome::Complete)
    }
}

/// The state machine of a batch's decisions, as every store applies it atomically: the first
/// decision on each action wins, all of `entries` or none.
pub fn apply_decisions(question: &mut Question, entries: &[Entry]) -> DecideOutcome {
    if !question.is_pending() {
        return DecideOutcome::AlreadyResolved;
    }
    let mut seen = Vec::new();
    for entry in entries {
        let taken = question
            .actions
            .get(entry.action.wrapping_sub(1))
            .is_none_or(|a| a.decision.is_some());
        if taken || seen.contains(&entry.action) {
            return DecideOutcome::Decided(entry.action);
        }
        seen.push(entry.action);
    }
    for entry in entries {
        question.actions[entry.action - 1].decision = Some(entry.clone());
    }
    if is_complete(question) {
        DecideOutcome::Complete
    } else {
        DecideOutcome::Recorded
    }
}

/// True when every action of a batch (without a quorum) has its decision.
pub fn is_complete(question: &Question) -> bool {
    question.quorum.is_none()
        && question.is_batch()
        && question.actions.iter().all(|a| a.decision.is_some())
}

/// The claim that resolves a batch whose every action is decided: by whoever decided last,
/// answering with the decisions recorded. `None` while an action is undecided.
pub fn completing_claim(question: &Question) -> Option<Claim> {
    if !is_complete(question) {
        return None;
    }
    let last = question
        .actions
        .iter()
        .filter_map(|a| a.decision.as_ref())
        .max_by_key(|e| e.at)?;
    Some(Claim::new(
        Transition::Decide {
            choices: Vec::new(),
        },
        last.decider(),
        last.at,
    ))
}

impl Question {
    /// True for an approval of several actions (a batch).
    pub fn is_batch(&self) -> bool {
        !self.actions.is_empty()
    }

    /// The batch digest people see (and buttons carry): its first 8 hex characters.
    pub fn batch_short_digest(&self) -> String {
        let digest = self.batch_digest.as_deref().unwrap_or_default();
        digest.chars().take(crate::approval::SHORT_DIGEST).collect()
    }

    /// The single approval action `n` of this batch stands for: its action, its decisions and
    /// schema, this question's id, people and quorum. Every check of a decision on the action
    /// is this approval's.
    pub fn action_view(&self, n: usize) -> Result<Question, Error> {
        let Some(item) = n.checked_sub(1).and_then(|i| self.actions.get(i)) else {
            return Err(Error::NotFit {
                reason: format!(
                    "There is no action {n}; this approval has actions 1-{}. Nothing was decided.",
                    self.actions.len()
                ),
            });
        };
        let mut view = self.clone();
        view.actions = Vec::new();
        view.batch_digest = None;
        view.kind = Kind::Approval;
        view.action = Some(item.action.clone());
        view.allowed = item.allowed.clone();
        view.args_schema = item.args_schema.clone();
        Ok(view)
    }

    /// The decisions recorded on this batch so far, in action order.
    pub fn decided(&self) -> Vec<Entry> {
        self.actions
            .iter()
            .filter_map(|a| a.decision.clone())
            .collect()
    }

    /// The entry `choice` records when `decider` makes it at `at`.
    pub fn entry_of(&self, choice: &Choice, decider: &Decider, at: Millis) -> Entry {
        let wire = decider.wire();
        let action = &self.actions[choice.action - 1].action;
        let mut entry = Entry {
            action: choice.action,
            decision: Decision::Reject,
            by: wire.by,
            by_name: wire.by_name,
            via: wire.via,
            at,
            args: None,
            proposed_args: None,
            digest: None,
            message: None,
            text: None,
            rule_id: decider.rule().cloned(),
            by_rule: decider.rule().is_some(),
            everywhere: false,
        };
        match &choice.then {
            Transition::Answer { value } => {
                let reply = ApprovalReply::of_answer(value).unwrap_or(ApprovalReply::Once);
                entry.args = Some(action.args.clone());
                entry.digest = Some(action.digest());
                if reply.creates_rule() && !entry.by_rule {
                    entry.decision = Decision::Always;
                    entry.everywhere = reply == ApprovalReply::AlwaysEverywhere;
                    entry.rule_id = Some(rule_for(&self.id, choice.action));
                } else {
                    entry.decision = Decision::Once;
                }
            }
            Transition::Edit { args } => {
                entry.decision = Decision::Edit;
                entry.proposed_args = Some(action.args.clone());
                entry.digest = Some(Action::new(action.tool.clone(), args.clone()).digest());
                entry.args = Some(args.clone());
            }
            Transition::Respond { text } => {
                entry.decision = Decision::Respond;
                entry.text = Some(text.clone());
            }
            Transition::Decline { message } => entry.message = message.clone(),
            _ => {}
        }
        entry
    }

    /// The entries `choices` record when `decider` makes them at `at`.
    pub fn entries_of(&self, choices: &[Choice], decider: &Decider, at: Millis) -> Vec<Entry> {
        choices
            .iter()
            .map(|c| self.entry_of(c, decider, at))
            .collect()
    }
}

/// The id of the rule an "always" on action `n` of batch `id` creates.
pub fn rule_for(id: &crate::id::QuestionId, n: usize) -> RuleId {
    RuleId::new(format!("rule-{id}-{n}"))
}

#[cfg(test)]
pub(crate) mod tests;
