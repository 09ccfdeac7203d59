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
use crate::actor::{Actor, Decider};
use crate::approval::{Action, ApprovalReply};
use crate::decision::Decision;
use crate::id::RuleId;
use crate::identity::Identity;
use crate::question::{Claim, Kind, Question, Transition};
use crate::time::Millis;
use crate::value::Answer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use read::BatchReply;

/// Most actions in one batch: a message people can read through, and few enough that every
/// button's command fits Telegram's 64 bytes.
pub const MAX_ACTIONS: usize = 20;

/// One action of a batch, with what it offers and, once decided, its decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchAction {
    /// Its number, from 1, in the order asked (set when the batch is checked).
    #[serde(default)]
    pub n: usize,
    /// The tool and its arguments (with its digest, in JSON).
    #[serde(flatten)]
    pub action: Action,
    /// The decisions a person may make on it (once, always, reject when none are named).
    #[serde(default)]
    pub allowed: Vec<Decision>,
    /// The JSON Schema edited arguments must fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_schema: Option<Value>,
    /// Its decision, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Entry>,
}

impl BatchAction {
    /// An action of a batch, offering the default decisions.
    pub fn new(action: Action) -> Self {
        BatchAction {
            n: 0,
            action,
            allowed: Vec::new(),
            args_schema: None,
            decision: None,
        }
    }
}

/// The decision on one action of a batch, as stored and sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The action's number.
    pub action: usize,
    /// What was decided.
    pub decision: Decision,
    /// Who decided (`rule:<id>` for a rule).
    pub by: Identity,
    /// Their display name, when the surface gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_name: Option<String>,
    /// Through which surface.
    pub via: String,
    /// When.
    pub at: Millis,
    /// For once, always and edit: the arguments to run with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// For edit: the arguments proposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_args: Option<Value>,
    /// For once, always and edit: the digest of the action to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// A rejection's feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A response's text: the tool's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The rule an "always" creates, or the rule that decided it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<RuleId>,
    /// True when a rule decided it before anyone was asked.
    #[serde(default, skip_serializing_if = "is_false")]
    pub by_rule: bool,
    /// For always: the rule applies everywhere, not only in the session.
    #[serde(default, skip_serializing_if = "is_false")]
    pub everywhere: bool,
}

fn is_false(value: &bool) -> bool {
    !value
}

impl Entry {
    /// Who decided, as a resolution names them.
    pub fn decider(&self) -> Decider {
        match (&self.rule_id, self.by_rule) {
            (Some(rule), true) => Decider::Rule(rule.clone()),
            _ => Decider::Actor(Actor {
                by: self.by.clone(),
                by_name: self.by_name.clone(),
                via: self.via.clone(),
            }),
        }
    }

    /// The name to show for who decided (`@alice`, `rule r1`, `telegram:42`).
    pub fn who(&self) -> String {
        match (&self.rule_id, self.by_rule, &self.by_name) {
            (Some(rule), true, _) => format!("rule {rule}"),
            (_, _, Some(name)) => name.clone(),
            _ => self.by.to_string(),
        }
    }

    /// True for the decisions that let the action run (once, always, edit).
    pub fn runs(&self) -> bool {
        matches!(
            self.decision,
            Decision::Once | Decision::Always | Decision::Edit
        )
    }
}

/// One decision asked for an action: the single-action transition it stands for (an answer
/// `once`/`always`, an edit, a response, a rejection), already checked against that action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The action's number.
    pub action: usize,
    /// What is decided about it.
    pub then: Transition,
}

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

/// The batch digest: SHA-256 over the actions' digests in order, as 16 hex characters.
pub fn digest(actions: &[BatchAction]) -> String {
    let mut hasher = Sha256::new();
    for action in actions {
        hasher.update(action.action.digest().as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

/// The words of a batch's decisions, in order: a resolved batch's answer (`["once", "edit",
/// "reject"]`).
pub fn answer_of(entries: &[Entry]) -> Answer {
    Answer::List(
        entries
            .iter()
            .map(|e| e.decision.as_str().to_owned())
            .collect(),
    )
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

/// Checks a request's actions (on an approval without `action`): 1 to [`MAX_ACTIONS`], each
/// checked as one action is, and numbers them. Returns the actions to store and their digest.
pub(crate) fn check_actions(
    actions: Vec<BatchAction>,
    quorum: bool,
) -> Result<Vec<BatchAction>, Error> {
    let invalid = |reason: String| Error::Invalid {
        field: "actions",
        reason,
    };
    if actions.is_empty() || actions.len() > MAX_ACTIONS {
        return Err(invalid(format!(
            "name 1 to {MAX_ACTIONS} actions, each {{\"tool\": ..., \"args\": {{...}}}}"
        )));
    }
    let mut checked = Vec::with_capacity(actions.len());
    for (index, mut item) in actions.into_iter().enumerate() {
        let n = index + 1;
        let at = |error: Error| match error {
            Error::Invalid { field, reason } => invalid(format!("action {n}: {field} {reason}")),
            other => other,
        };
        item.action.check().map_err(at)?;
        let allowed = (!item.allowed.is_empty()).then_some(item.allowed.as_slice());
        item.allowed = crate::decision::check_request(
            true,
            allowed,
            item.args_schema.as_ref(),
            Some(&item.action),
            quorum,
        )
        .map_err(at)?;
        item.n = n;
        item.decision = None;
        checked.push(item);
    }
    Ok(checked)
}

#[cfg(test)]
mod tests;
