//! Requests to ask something ([`NewQuestion`]): what the HTTP API and the Rust API accept, and
//! the checks that turn one into a pending [`Question`].
//!
//! Validation lives beside the request rather than in [`crate::question`] because it needs the
//! answer rules (a default must be a valid answer), which themselves need the question: keeping
//! the two apart is what keeps the modules free of import cycles.

use crate::Error;
use crate::actions::BatchAction;
use crate::approval::{Action, ApprovalReply};
pub use crate::checks::check_session_id;
use crate::checks::{check_identities, check_shape, check_text, check_url, dedup};
use crate::decision::Decision;
use crate::form::FormSchema;
use crate::id::{QuestionId, RunId};
use crate::identity::{Identity, Target};
use crate::nudge::{self, Escalation};
use crate::question::{
    Answer, Kind, MAX_DETAIL_CHARS, MAX_PROMPT_CHARS, MAX_TIMEOUT, Question, Status,
};
use crate::quorum::{self, Quorum};
use crate::text::Lines;
use crate::time::Millis;
use serde::{Deserialize, Serialize};
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

    /// Checks every field and builds the pending question. `default_timeout` applies when the
    /// request names none.
    pub fn into_question(
        self,
        id: QuestionId,
        now: Millis,
        default_timeout: Duration,
    ) -> Result<Question, Error> {
        let timeout = self.checked_timeout(default_timeout)?;
        check_session_id(&self.session_id)?;
        let prompt = self.prompt.trim().to_owned();
        check_text("prompt", &prompt, Lines::Many, (1, MAX_PROMPT_CHARS))?;
        let detail = self
            .detail
            .as_deref()
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty());
        if let Some(detail) = &detail {
            check_text("detail", detail, Lines::Many, (1, MAX_DETAIL_CHARS))?;
        }
        let options = self.checked_options()?;
        check_identities("answerers", self.answerers.iter().map(Identity::as_str))?;
        check_identities("targets", self.targets.iter().map(Target::as_str))?;
        if let Some(url) = &self.callback_url {
            check_url("callback_url", url)?;
        }
        self.check_form()?;
        let reminders = nudge::check_reminders(self.remind_after_s, self.reminders, timeout)?;
        let answerers = self.checked_answerers()?;
        nudge::check_escalation(&self.escalate, timeout)?;
        self.check_action()?;
        let allowed = crate::decision::check_request(
            self.kind == Kind::Approval && self.actions.is_empty(),
            self.allowed.as_deref(),
            self.args_schema.as_ref(),
            self.action.as_ref(),
            self.quorum.is_some(),
        )?;
        let actions = match self.actions {
            actions if actions.is_empty() => Vec::new(),
            actions => crate::actions::check_actions(actions, self.quorum.is_some())?,
        };
        let batch_digest = (!actions.is_empty()).then(|| crate::actions::digest(&actions));
        let mut question = Question {
            id,
            session_id: self.session_id,
            kind: self.kind,
            prompt,
            detail,
            options,
            multi: self.multi,
            // A question without options can only be answered in words.
            allow_custom: self.allow_custom || (self.kind == Kind::Ask && self.options.is_empty()),
            created_at: now,
            expires_at: now.after(timeout),
            default: None,
            answerers: dedup(answerers),
            targets: dedup(self.targets),
            status: Status::Pending,
            resolution: None,
            run_id: self.run_id,
            callback_url: self.callback_url,
            action: self.action,
            reminders,
            escalate: self.escalate,
            quorum: self.quorum,
            votes: Vec::new(),
            form: self.form,
            allowed,
            args_schema: self.args_schema,
            actions,
            batch_digest,
        };
        if let Some(default) = self.default {
            question.default = Some(fitted_default(&question, default)?);
        }
        Ok(question)
    }

    /// The options, trimmed, printable, and as many as the kind takes.
    fn checked_options(&self) -> Result<Vec<String>, Error> {
        let options: Vec<String> = self.options.iter().map(|o| o.trim().to_owned()).collect();
        check_shape(self.kind, &options, self.multi, self.allow_custom)?;
        Ok(options)
    }

    /// A form, on a form and nothing else.
    fn check_form(&self) -> Result<(), Error> {
        match (&self.kind, &self.form) {
            (Kind::Form, Some(form)) => form.check(),
            (Kind::Form, None) => Err(Error::Invalid {
                field: "form",
                reason: "a form needs its fields: {\"type\": \"object\", \"properties\": {...}}"
                    .into(),
            }),
            (_, Some(_)) => Err(Error::Invalid {
                field: "form",
                reason: "only questions of kind \"form\" carry a form".into(),
            }),
            (_, None) => Ok(()),
        }
    }

    /// Who may answer: the answerers, or with a quorum the quorum's members (who may not be
    /// named twice over, nor joined by escalation steps).
    fn checked_answerers(&self) -> Result<Vec<Identity>, Error> {
        let Some(quorum) = &self.quorum else {
            return Ok(self.answerers.clone());
        };
        quorum::check(quorum)?;
        let same = self.answerers.len() == quorum.of.len()
            && self.answerers.iter().all(|a| quorum.of.contains(a));
        if !self.answerers.is_empty() && !same {
            return Err(Error::Invalid {
                field: "answerers",
                reason: "with a quorum, quorum.of names who may answer; leave answerers out".into(),
            });
        }
        if self.escalate.iter().any(|step| !step.answerers.is_empty()) {
            return Err(Error::Invalid {
                field: "escalate",
                reason: "escalation answerers cannot join a quorum; name them in quorum.of".into(),
            });
        }
        Ok(quorum.of.clone())
    }

    /// An action, on an approval and nothing else.
    fn check_action(&self) -> Result<(), Error> {
        if !self.actions.is_empty() {
            let reason = match (&self.kind, &self.action) {
                (Kind::Approval, None) => return Ok(()),
                (Kind::Approval, Some(_)) => "give either action or actions, not both",
                _ => "only approvals carry actions",
            };
            return Err(Error::Invalid {
                field: "actions",
                reason: reason.into(),
            });
        }
        match (&self.kind, &self.action) {
            (Kind::Approval, Some(action)) => action.check(),
            (Kind::Approval, None) => Err(Error::Invalid {
                field: "action",
                reason:
                    "an approval needs the action it approves: {\"tool\": ..., \"args\": {...}}"
                        .into(),
            }),
            (_, Some(_)) => Err(Error::Invalid {
                field: "action",
                reason: "only approvals carry an action".into(),
            }),
            (_, None) => Ok(()),
        }
    }

    fn checked_timeout(&self, default_timeout: Duration) -> Result<Duration, Error> {
        let Some(seconds) = self.timeout_s else {
            return Ok(default_timeout);
        };
        if !(seconds.is_finite() && seconds > 0.0 && seconds <= MAX_TIMEOUT.as_secs_f64()) {
            return Err(Error::Invalid {
                field: "timeout_s",
                reason: format!(
                    "must be more than 0 and at most {} seconds",
                    MAX_TIMEOUT.as_secs()
                ),
            });
        }
        Ok(Duration::from_secs_f64(seconds))
    }
}

/// The default answer of `question`, fitted to it: a valid answer, and for an approval only "once".
fn fitted_default(question: &Question, default: Answer) -> Result<Answer, Error> {
    if question.is_batch() {
        return Err(Error::Invalid {
            field: "default",
            reason: "a batch of actions takes no default; leave it out to deny on timeout".into(),
        });
    }
    let fitted = question.check_answer(default).map_err(|e| Error::Invalid {
        field: "default",
        reason: format!("the default must be a valid answer: {e}"),
    })?;
    // "Always" on timeout would promise a rule nobody created.
    if question.kind == Kind::Approval
        && ApprovalReply::of_answer(&fitted) != Some(ApprovalReply::Once)
    {
        return Err(Error::Invalid {
            field: "default",
            reason: "an approval's default can only be \"once\" (allow on timeout); leave it out to deny".into(),
        });
    }
    Ok(fitted)
}
