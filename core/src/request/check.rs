//! The checks that turn a [`NewQuestion`] into a pending [`Question`]: every field against its
//! limits, the default against the answer rules, an approval's action against its schema. Apart
//! from the request's shape and builders (`mod.rs`) so that the rules a request must meet read in
//! one place.

use super::NewQuestion;
use crate::Error;
use crate::approval::ApprovalReply;
use crate::checks::{
    check_identities, check_session_id, check_shape, check_text, check_url, dedup,
};
use crate::id::QuestionId;
use crate::identity::{Identity, Target};
use crate::nudge;
use crate::question::{
    Answer, Kind, MAX_DETAIL_CHARS, MAX_PROMPT_CHARS, MAX_TIMEOUT, Question, Status,
};
use crate::quorum;
use crate::text::Lines;
use crate::time::Millis;
use std::time::Duration;

impl NewQuestion {
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
        let allow_custom = self.allows_custom();
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
            allow_custom,
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

    /// Whether the question it becomes takes free text: when asked to, and always for a question
    /// without options, which can only be answered in words. (A replayed ask's fingerprint reads
    /// it here too, `run::fingerprint_of`.)
    pub fn allows_custom(&self) -> bool {
        self.allow_custom || (self.kind == Kind::Ask && self.options.is_empty())
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
