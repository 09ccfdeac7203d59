//! Requests to ask something ([`NewQuestion`]): what the HTTP API and the Rust API accept, and
//! the checks that turn one into a pending [`Question`].
//!
//! Validation lives beside the request rather than in [`crate::question`] because it needs the
//! answer rules (a default must be a valid answer), which themselves need the question: keeping
//! the two apart is what keeps the modules free of import cycles.

use crate::Error;
use crate::approval::{Action, ApprovalReply};
use crate::id::{QuestionId, RunId};
use crate::identity::{Identity, Target, is_well_formed};
use crate::question::{
    Answer, Kind, MAX_DETAIL_CHARS, MAX_LABEL_CHARS, MAX_OPTIONS, MAX_PEOPLE, MAX_PROMPT_CHARS,
    MAX_SESSION_CHARS, MAX_TIMEOUT, Question, Status,
};
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

    /// Makes this an approval of `action`.
    pub fn approve(mut self, action: Action) -> Self {
        self.kind = Kind::Approval;
        self.action = Some(action);
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
        check_text("prompt", &prompt, 1, MAX_PROMPT_CHARS)?;
        let detail = self
            .detail
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty());
        if let Some(detail) = &detail {
            check_text("detail", detail, 1, MAX_DETAIL_CHARS)?;
        }
        let options: Vec<String> = self.options.iter().map(|o| o.trim().to_owned()).collect();
        if let Some(why) = options
            .iter()
            .find_map(|o| crate::text::unprintable(o, false))
        {
            return Err(Error::Invalid {
                field: "options",
                reason: why.into(),
            });
        }
        check_shape(self.kind, &options, self.multi, self.allow_custom)?;
        check_identities("answerers", self.answerers.iter().map(Identity::as_str))?;
        check_identities("targets", self.targets.iter().map(Target::as_str))?;
        if let Some(url) = &self.callback_url {
            check_url("callback_url", url)?;
        }
        match (&self.kind, &self.action) {
            (Kind::Approval, Some(action)) => action.check()?,
            (Kind::Approval, None) => {
                return Err(Error::Invalid {
                    field: "action",
                    reason:
                        "an approval needs the action it approves: {\"tool\": ..., \"args\": {...}}"
                            .into(),
                });
            }
            (_, Some(_)) => {
                return Err(Error::Invalid {
                    field: "action",
                    reason: "only approvals carry an action".into(),
                });
            }
            (_, None) => {}
        }
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
            answerers: dedup(self.answerers),
            targets: dedup(self.targets),
            status: Status::Pending,
            resolution: None,
            run_id: self.run_id,
            callback_url: self.callback_url,
            action: self.action,
        };
        if let Some(default) = self.default {
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
            question.default = Some(fitted);
        }
        Ok(question)
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

/// Checks a session id: 1-128 characters of letters, digits and `. _ : - / @` (no braces, no
/// spaces: session ids end up in store keys).
pub fn check_session_id(session_id: &str) -> Result<(), Error> {
    let ok = !session_id.is_empty()
        && session_id.chars().count() <= MAX_SESSION_CHARS
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:-/@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Error::Invalid {
            field: "session_id",
            reason: format!(
                "must be 1-{MAX_SESSION_CHARS} characters of letters, digits and . _ : - / @"
            ),
        })
    }
}

fn check_text(field: &'static str, text: &str, min: usize, max: usize) -> Result<(), Error> {
    if let Some(why) = crate::text::unprintable(text, true) {
        return Err(Error::Invalid {
            field,
            reason: why.into(),
        });
    }
    let chars = text.chars().count();
    if chars < min {
        return Err(Error::Invalid {
            field,
            reason: "must not be empty".into(),
        });
    }
    if chars > max {
        return Err(Error::Invalid {
            field,
            reason: format!("is {chars} characters long; the limit is {max}"),
        });
    }
    Ok(())
}

fn check_shape(
    kind: Kind,
    options: &[String],
    multi: bool,
    allow_custom: bool,
) -> Result<(), Error> {
    let invalid = |field, reason: &str| {
        Err(Error::Invalid {
            field,
            reason: reason.to_owned(),
        })
    };
    match kind {
        Kind::Confirm | Kind::Approval if !options.is_empty() => {
            return invalid(
                "options",
                "confirm and approval questions have fixed replies",
            );
        }
        Kind::Confirm | Kind::Approval if multi || allow_custom => {
            return invalid(
                "multi",
                "confirm and approval questions take one fixed reply",
            );
        }
        Kind::Ask if multi && options.is_empty() => {
            return invalid("multi", "a multi-choice question needs options");
        }
        _ => {}
    }
    if options.len() > MAX_OPTIONS {
        return Err(Error::Invalid {
            field: "options",
            reason: format!("{} options; the limit is {MAX_OPTIONS}", options.len()),
        });
    }
    for (index, label) in options.iter().enumerate() {
        check_text("options", label, 1, MAX_LABEL_CHARS)?;
        if label.contains('\n') {
            return invalid("options", "an option label must be one line");
        }
        if multi && label.contains(',') {
            return invalid(
                "options",
                "labels of a multi-choice question may not contain commas",
            );
        }
        if options[..index]
            .iter()
            .any(|o| o.eq_ignore_ascii_case(label))
        {
            return Err(Error::Invalid {
                field: "options",
                reason: format!("`{label}` appears twice"),
            });
        }
    }
    Ok(())
}

fn check_identities<'a>(
    field: &'static str,
    mut list: impl ExactSizeIterator<Item = &'a str>,
) -> Result<(), Error> {
    if list.len() > MAX_PEOPLE {
        return Err(Error::Invalid {
            field,
            reason: format!("{} entries; the limit is {MAX_PEOPLE}", list.len()),
        });
    }
    match list.find(|entry| !is_well_formed(entry)) {
        Some(bad) => Err(Error::Invalid {
            field,
            reason: format!(
                "`{bad}` is not of the form `console`, `api` or `<surface>:<id>` (e.g. `telegram:42`)"
            ),
        }),
        None => Ok(()),
    }
}

fn check_url(field: &'static str, url: &str) -> Result<(), Error> {
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() <= 2000
        && !url.chars().any(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(Error::Invalid {
            field,
            reason: "must be an http:// or https:// URL".into(),
        })
    }
}

fn dedup<T: PartialEq>(list: Vec<T>) -> Vec<T> {
    let mut seen = Vec::with_capacity(list.len());
    for item in list {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}
