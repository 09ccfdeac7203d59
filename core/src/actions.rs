//! A batch's actions and their decisions, as stored and sent ([`crate::batch`] holds the rules:
//! reading, recording, completing). Apart from the rules so that the question and its
//! resolution can hold these records without importing the rules that read questions.

use crate::Error;
use crate::actor::{Actor, Decider};
use crate::approval::Action;
use crate::decision::Decision;
use crate::id::RuleId;
use crate::identity::Identity;
use crate::time::Millis;
use crate::value::Answer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

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

/// How one action of a batch went, as the function that asked sees it: each variant is an
/// answer the caller must handle (run the action, run it with other arguments, use the text as
/// its result, or tell the model it was rejected).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ActionOutcome {
    /// Allowed as proposed (once, always, or by a rule): run `action`.
    Approved {
        /// The action to run, as proposed.
        action: Action,
        /// The rule its "always" created, or the rule that allowed it.
        rule_id: Option<RuleId>,
        /// True when a rule allowed it without asking.
        by_rule: bool,
    },
    /// Allowed with changed arguments: run `action`, not the proposed one.
    Edited {
        /// The action to run (the proposed tool, the person's arguments).
        action: Action,
        /// The action as proposed.
        proposed: Action,
    },
    /// Answered in the tool's place: `text` is its result, and nothing runs.
    Responded {
        /// The person's text.
        text: String,
    },
    /// Rejected, with the person's feedback if any.
    Rejected {
        /// Why, in the person's words.
        message: Option<String>,
    },
}

impl ActionOutcome {
    /// What `entry` means for `action` (the batch's action it decides).
    pub fn of(entry: &Entry, action: &Action) -> Self {
        let args = entry.args.clone().unwrap_or_else(|| action.args.clone());
        match entry.decision {
            Decision::Once | Decision::Always => ActionOutcome::Approved {
                action: Action::new(action.tool.clone(), args),
                rule_id: entry.rule_id.clone(),
                by_rule: entry.by_rule,
            },
            Decision::Edit => ActionOutcome::Edited {
                action: Action::new(action.tool.clone(), args),
                proposed: action.clone(),
            },
            Decision::Respond => ActionOutcome::Responded {
                text: entry.text.clone().unwrap_or_default(),
            },
            Decision::Reject => ActionOutcome::Rejected {
                message: entry.message.clone(),
            },
        }
    }
}
