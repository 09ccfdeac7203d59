//! Requests to ask something ([`NewQuestion`]): what the HTTP API and the Rust API accept, and
//! the checks that turn one into a pending [`Question`].
//!
//! Validation lives beside the request rather than in [`crate::question`] because it needs the
//! answer rules (a default must be a valid answer), which themselves need the question: keeping
//! the two apart is what keeps the modules free of import cycles.
//!
//! The parts: this module holds the request's shape and its builders; `check.rs` the checks.

mod check;

use crate::actions::BatchAction;
use crate::approval::Action;
pub use crate::checks::check_session_id;
use crate::decision::Decision;
use crate::form::FormSchema;
use crate::id::RunId;
use crate::identity::{Identity, Target};
use crate::nudge::Escalation;
use crate::question::{Answer, Kind};
use crate::quorum::Quorum;
use serde::{Deserialize, Serialize};
// The fields' docs link to the question's (the checks that use it are in `check.rs`).
#[cfg(doc)]
use crate::question::Question;
use std::time::Duration;

/// A request to ask something: what the HTTP API and the Rust API accept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewQuestion {
    /// See [`Question::session_id`]. (Absent means empty, which validation refuses by name; flows
    /// fill it in themselves.)
    #[serde(default)]
    pub session_id: String,
    /// See [`Question::kind`].
    #[serde(default)]
    pub kind: Kind,
    /// See [`Question::prompt`].
    pub prompt: String,
    /// See [`Question::detail`].
    #[serde(default)]
    pub detail: Option<String>,
    /// See [`Question::options`].
    #[serde(default)]
    pub options: Vec<String>,
    /// See [`Question::multi`].
    #[serde(default)]
    pub multi: bool,
    /// See [`Question::allow_custom`].
    #[serde(default)]
    pub allow_custom: bool,
    /// Seconds until it expires; [`crate::question::DEFAULT_TIMEOUT`] when absent.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// See [`Question::default`].
    #[serde(default)]
    pub default: Option<Answer>,
    /// See [`Question::answerers`].
    #[serde(default)]
    pub answerers: Vec<Identity>,
    /// See [`Question::targets`].
    #[serde(default)]
    pub targets: Vec<Target>,
    /// See [`Question::run_id`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// See [`Question::callback_url`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    /// See [`Question::action`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// See [`Question::actions`]: a batch's actions, on an approval without `action`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<BatchAction>,
    /// Seconds unanswered before a reminder (and between reminders); none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_after_s: Option<f64>,
    /// How many reminders at most (1 unless given; at most [`crate::nudge::MAX_REMINDERS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminders: Option<u32>,
    /// See [`Question::escalate`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalate: Vec<Escalation>,
    /// See [`Question::form`]: the fields of a `form` question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<FormSchema>,
    /// See [`Question::quorum`]. Its members become the answerers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<Quorum>,
    /// See [`Question::allowed`]: the decisions an approval offers (default once, always,
    /// reject).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Decision>>,
    /// See [`Question::args_schema`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_schema: Option<serde_json::Value>,
}

impl NewQuestion {
    /// A question with `prompt` in `session_id` and every other field at its default.
    pub fn new(session_id: impl Into<String>, prompt: impl Into<String>) -> Self {
        NewQuestion {
            session_id: session_id.into(),
            prompt: prompt.into(),
            ..NewQuestion::default()
        }
    }

    /// A question asking `prompt`, for a session to fill in ([`NewQuestion::session`]).
    pub fn ask(prompt: impl Into<String>) -> Self {
        NewQuestion::new("", prompt)
    }

    /// A yes/no question.
    pub fn confirm(prompt: impl Into<String>) -> Self {
        NewQuestion::ask(prompt).kind(Kind::Confirm)
    }

    /// Sets the session.
    pub fn session(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = session_id.into();
        self
    }

    /// Sets the kind.
    pub fn kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets the detail shown under the prompt.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Sets the option labels.
    pub fn options<I, S>(mut self, options: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.options = options.into_iter().map(Into::into).collect();
        self
    }

    /// Lets several options be chosen; the answer is a list.
    pub fn multi(mut self) -> Self {
        self.multi = true;
        self
    }

    /// Accepts free text besides the options.
    pub fn allow_custom(mut self) -> Self {
        self.allow_custom = true;
        self
    }

    /// Sets how long the question stays open.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_s = Some(timeout.as_secs_f64());
        self
    }

    /// Sets what a waiter gets on timeout.
    pub fn default_answer(mut self, answer: Answer) -> Self {
        self.default = Some(answer);
        self
    }

    /// Restricts who may answer.
    pub fn answerers<I, S>(mut self, answerers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Identity>,
    {
        self.answerers = answerers.into_iter().map(Into::into).collect();
        self
    }

    /// Makes this an approval of several actions, decided one by one (a batch).
    pub fn approve_all(mut self, actions: impl IntoIterator<Item = BatchAction>) -> Self {
        self.kind = Kind::Approval;
        self.actions = actions.into_iter().collect();
        self
    }

    /// Makes this an approval of `action`.
    pub fn approve(mut self, action: Action) -> Self {
        self.kind = Kind::Approval;
        self.action = Some(action);
        self
    }

    /// Offers these decisions on an approval ([`crate::decision`]).
    pub fn allow<I: IntoIterator<Item = Decision>>(mut self, decisions: I) -> Self {
        self.allowed = Some(decisions.into_iter().collect());
        self
    }

    /// The JSON Schema edited arguments must fit (askbridge's flat form schema is edited field
    /// by field in chat).
    pub fn args_schema(mut self, schema: serde_json::Value) -> Self {
        self.args_schema = Some(schema);
        self
    }

    /// Sets where the question is shown.
    pub fn targets<I, S>(mut self, targets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Target>,
    {
        self.targets = targets.into_iter().map(Into::into).collect();
        self
    }

    /// Re-announces the question every `after` while unanswered, `times` times at most.
    pub fn remind(mut self, after: Duration, times: u32) -> Self {
        self.remind_after_s = Some(after.as_secs_f64());
        self.reminders = Some(times);
        self
    }

    /// Adds an escalation step: after `after` unanswered, also shown on `targets`, and
    /// `answerers` may answer too.
    pub fn escalate<T, A>(mut self, after: Duration, targets: T, answerers: A) -> Self
    where
        T: IntoIterator<Item: Into<Target>>,
        A: IntoIterator<Item: Into<Identity>>,
    {
        self.escalate.push(Escalation {
            after_s: after.as_secs_f64(),
            targets: targets.into_iter().map(Into::into).collect(),
            answerers: answerers.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Makes this a form with `schema`'s fields ([`crate::form`]).
    pub fn form(mut self, schema: FormSchema) -> Self {
        self.kind = Kind::Form;
        self.form = Some(schema);
        self
    }

    /// Needs `needs` of `of` to agree ([`crate::quorum`]); they become the answerers.
    pub fn quorum<I, S>(mut self, needs: u32, of: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Identity>,
    {
        let of: Vec<Identity> = of.into_iter().map(Into::into).collect();
        self.answerers = of.clone();
        self.quorum = Some(Quorum { needs, of });
        self
    }
}
