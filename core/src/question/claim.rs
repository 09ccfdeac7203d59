//! The state machine: a claim (a transition, who makes it, when) and what applying it to a
//! pending question does. Kept apart from the question's shape so that the one rule every store
//! applies ([`Question::apply`]) reads on its own.

use super::{Kind, Question, Status};
use crate::actor::Decider;
use crate::approval::{Action, ApprovalReply, Edited};
use crate::id::RuleId;
use crate::resolution::Resolution;
use crate::time::Millis;
use crate::value::Answer;
use serde::{Deserialize, Serialize};

/// What a resolution does to a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Transition {
    /// Resolve with an answer (already checked with [`Question::check_answer`]).
    Answer {
        /// The answer.
        value: Answer,
    },
    /// Resolve as declined, with an optional message for the asker.
    Decline {
        /// Why, in the decliner's words.
        message: Option<String>,
    },
    /// Allow an approval with changed arguments (already checked with
    /// [`Question::check_edit`]).
    Edit {
        /// The arguments to run with.
        args: serde_json::Value,
    },
    /// Answer an approval in the tool's place (checked with [`Question::check_response`]).
    Respond {
        /// The person's text: the tool's result.
        text: String,
    },
    /// Decide actions of a batch ([`crate::batch`]): recorded without resolving while some are
    /// undecided; as a claim, it resolves a batch with its decisions (those recorded and
    /// `choices`, which a quorum's completing claim carries).
    Decide {
        /// The decisions, each checked against its action.
        choices: Vec<Choice>,
    },
    /// The deadline passed.
    Expire,
    /// The session was stopped.
    Cancel {
        /// Why, if anyone said.
        reason: Option<String>,
    },
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

/// One attempt to resolve a question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// What it does.
    pub transition: Transition,
    /// Who does it.
    pub decider: Decider,
    /// When it happens (it decides whether the deadline has passed).
    pub at: Millis,
}

impl Claim {
    /// A claim by `decider` at `at`.
    pub fn new(transition: Transition, decider: impl Into<Decider>, at: Millis) -> Self {
        Claim {
            transition,
            decider: decider.into(),
            at,
        }
    }

    /// An expiry at `at`.
    pub fn expire(at: Millis) -> Self {
        Claim::new(Transition::Expire, Decider::Deadline, at)
    }
}

/// What [`Question::apply`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimOutcome {
    /// The claim won: the question now carries its resolution.
    Won,
    /// The question was already resolved; nothing changed.
    AlreadyResolved,
    /// The deadline had passed: the question is now expired instead, and the claim lost.
    Expired,
}

impl Question {
    /// True while nobody has resolved it.
    pub fn is_pending(&self) -> bool {
        self.status == Status::Pending
    }

    /// The state machine: applies `claim` if the question is pending, turning a late claim into
    /// an expiry. Pure; stores make it atomic.
    pub fn apply(&mut self, claim: &Claim) -> ClaimOutcome {
        if !self.is_pending() {
            return ClaimOutcome::AlreadyResolved;
        }
        let late = claim.at >= self.expires_at && claim.transition != Transition::Expire;
        let (status, resolution) = if late {
            self.expiry_resolution(claim.at)
        } else {
            self.resolution_for(claim)
        };
        self.status = status;
        self.resolution = Some(resolution);
        if late {
            ClaimOutcome::Expired
        } else {
            ClaimOutcome::Won
        }
    }

    /// The status and resolution `claim` would give (ignoring the deadline).
    pub fn resolution_for(&self, claim: &Claim) -> (Status, Resolution) {
        if claim.transition == Transition::Expire {
            return self.expiry_resolution(claim.at);
        }
        let mut edited = None;
        let mut decisions = self.decided();
        let (status, value, message) = match &claim.transition {
            Transition::Decide { choices } => {
                decisions.extend(self.entries_of(choices, &claim.decider, claim.at));
                decisions.sort_by_key(|e| e.action);
                let value = crate::actions::answer_of(&decisions);
                (Status::Answered, Some(value), None)
            }
            Transition::Answer { value } => (Status::Answered, Some(value.clone()), None),
            Transition::Edit { args } => {
                edited = self.action.as_ref().map(|proposed| Edited {
                    proposed: proposed.clone(),
                    approved: Action::new(proposed.tool.clone(), args.clone()),
                });
                (Status::Answered, Some(Answer::Text("edit".into())), None)
            }
            Transition::Respond { text } => (
                Status::Answered,
                Some(Answer::Text("respond".into())),
                Some(text.clone()),
            ),
            Transition::Decline { message } => (Status::Declined, None, message.clone()),
            Transition::Cancel { reason } => (Status::Cancelled, None, reason.clone()),
            Transition::Expire => unreachable!("handled above"),
        };
        let rule_id = match &claim.decider {
            Decider::Rule(rule) => Some(rule.clone()),
            // The one place that decides whether a claim creates a rule: a person's "always"
            // (never an edit or a response, whose answers are no `ApprovalReply`).
            Decider::Actor(_) if self.kind == Kind::Approval => value
                .as_ref()
                .and_then(ApprovalReply::of_answer)
                .filter(|reply| reply.creates_rule())
                .map(|_| RuleId::for_question(&self.id)),
            _ => None,
        };
        let resolution = Resolution {
            value,
            decider: claim.decider.clone(),
            at: claim.at,
            message,
            rule_id,
            // Every vote cast, whether a quorum completed it or a member's "no" ended it.
            votes: self.votes.clone(),
            edited,
            decisions,
        };
        (status, resolution)
    }

    /// The status and resolution of expiring at `at`: the default, if any, is the value.
    pub fn expiry_resolution(&self, at: Millis) -> (Status, Resolution) {
        let resolution = Resolution {
            value: self.default.clone(),
            decider: Decider::Deadline,
            at,
            message: None,
            rule_id: None,
            votes: self.votes.clone(),
            edited: None,
            decisions: self.decided(),
        };
        (Status::Expired, resolution)
    }
}
