//! Questions, their outcomes, and the one state machine every store applies.
//!
//! A question is `pending` until exactly one resolution wins: `answered`, `declined`, `expired` or
//! `cancelled`. [`Question::apply`] is that state machine as a pure function: the memory and
//! embedded stores call it under their lock or transaction, and the Redis store's script does the
//! same steps on the server (the shared conformance suite checks that they agree). Keeping the
//! rule in one place is what makes "first answer wins" mean the same thing on every store.

use crate::approval::Action;
use crate::id::QuestionId;
use crate::time::Millis;
use crate::{Error, identity};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// Default time a question stays open: 30 minutes, as in the seed design.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Longest time a question may stay open.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// Most options a question may have: what one Discord select menu holds, and few enough that
/// every multi-choice button payload fits Telegram's 64 bytes.
pub const MAX_OPTIONS: usize = 25;
/// Longest option label, in characters (buttons show a shortened form).
pub const MAX_LABEL_CHARS: usize = 100;
/// Longest prompt, in characters.
pub const MAX_PROMPT_CHARS: usize = 1000;
/// Longest detail, in characters (chat messages shorten it and point to `/show`).
pub const MAX_DETAIL_CHARS: usize = 8000;
/// Longest session id, in characters.
pub const MAX_SESSION_CHARS: usize = 128;
/// Most answerers or targets on one question.
pub const MAX_PEOPLE: usize = 100;
/// Longest free-text answer or decline message, in characters.
pub const MAX_ANSWER_CHARS: usize = 4000;

/// What sort of question this is; it decides which answers fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Pick among options and/or type free text.
    #[default]
    Ask,
    /// Yes or no.
    Confirm,
    /// May an action run? Allow once, allow always, or reject.
    Approval,
}

/// Where a question is in its life. Every state but `Pending` is final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a person.
    Pending,
    /// Someone answered.
    Answered,
    /// Someone declined to answer (or rejected an approval).
    Declined,
    /// The deadline passed first.
    Expired,
    /// Its session was stopped.
    Cancelled,
}

impl Status {
    /// The name used in JSON and in query strings.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Answered => "answered",
            Status::Declined => "declined",
            Status::Expired => "expired",
            Status::Cancelled => "cancelled",
        }
    }

    /// Reads a status name.
    pub fn parse(text: &str) -> Option<Status> {
        [
            Status::Pending,
            Status::Answered,
            Status::Declined,
            Status::Expired,
            Status::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An answer's value: a boolean for confirm, a list for multi, text otherwise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Answer {
    /// Yes or no.
    Bool(bool),
    /// Several choices (multi).
    List(Vec<String>),
    /// One choice or free text.
    Text(String),
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Bool(true) => f.write_str("yes"),
            Answer::Bool(false) => f.write_str("no"),
            Answer::List(items) => f.write_str(&items.join(", ")),
            Answer::Text(text) => f.write_str(text),
        }
    }
}

/// How a question left `pending`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    /// The answer (for `expired`, the default if there was one).
    pub value: Option<Answer>,
    /// The identity that resolved it (`telegram:42`, `console`, `api`, `askbridge` for timeouts).
    pub by: String,
    /// A human name for `by`, when the surface knows one (`@alice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_name: Option<String>,
    /// The surface it came through (`telegram`, `discord`, `console`, `api`, `timeout`).
    pub via: String,
    /// When.
    pub at: Millis,
    /// A decline's (or cancel's) message.
    pub message: Option<String>,
    /// For approvals: the rule that allowed it, or that its "always" created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<String>,
}

/// A question, as stored and as sent over the HTTP API.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Unique, random id.
    pub id: QuestionId,
    /// The run or conversation it belongs to; cancelling the session cancels the question.
    pub session_id: String,
    /// Ask, confirm or approval.
    pub kind: Kind,
    /// The question itself.
    pub prompt: String,
    /// Longer context shown under the prompt.
    pub detail: Option<String>,
    /// Option labels, in order; option numbers are 1-based positions in this list.
    pub options: Vec<String>,
    /// Several options may be chosen.
    pub multi: bool,
    /// Free text is accepted besides the options.
    pub allow_custom: bool,
    /// When it was asked.
    pub created_at: Millis,
    /// When it expires if nobody answers.
    pub expires_at: Millis,
    /// What a waiter gets on timeout; `None` means the waiter gets a timeout error.
    pub default: Option<Answer>,
    /// Who may answer; empty means anyone who can reach a surface showing it.
    pub answerers: Vec<String>,
    /// Where it is shown (`telegram:<chat id>`, `discord:<channel id>`, `console`).
    pub targets: Vec<String>,
    /// Where it is in its life.
    pub status: Status,
    /// How it was resolved, once it is.
    pub resolution: Option<Resolution>,
    /// The follow-up run waiting on it, if a chat-started run asked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Where the resolved question is POSTed (signed), so HTTP callers need not long-poll.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    /// What an approval is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
}

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
    /// Seconds until it expires; [`DEFAULT_TIMEOUT`] when absent.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// See [`Question::default`].
    #[serde(default)]
    pub default: Option<Answer>,
    /// See [`Question::answerers`].
    #[serde(default)]
    pub answerers: Vec<String>,
    /// See [`Question::targets`].
    #[serde(default)]
    pub targets: Vec<String>,
    /// See [`Question::run_id`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
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
        S: Into<String>,
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
        S: Into<String>,
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
        check_shape(self.kind, &options, self.multi, self.allow_custom)?;
        for list in [("answerers", &self.answerers), ("targets", &self.targets)] {
            check_identities(list.0, list.1)?;
        }
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
                && fitted != Answer::Text(crate::answer::APPROVE_ONCE.into())
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

fn check_identities(field: &'static str, list: &[String]) -> Result<(), Error> {
    if list.len() > MAX_PEOPLE {
        return Err(Error::Invalid {
            field,
            reason: format!("{} entries; the limit is {MAX_PEOPLE}", list.len()),
        });
    }
    match list.iter().find(|entry| !identity::is_well_formed(entry)) {
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

fn dedup(list: Vec<String>) -> Vec<String> {
    let mut seen = Vec::with_capacity(list.len());
    for item in list {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

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
    /// The deadline passed.
    Expire,
    /// The session was stopped.
    Cancel {
        /// Why, if anyone said.
        reason: Option<String>,
    },
}

/// Who resolves a question, and through which surface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// Identity (`telegram:42`).
    pub by: String,
    /// Display name (`@alice`), if known.
    pub by_name: Option<String>,
    /// Surface (`telegram`).
    pub via: String,
}

impl Actor {
    /// An actor with no display name.
    pub fn new(by: impl Into<String>, via: impl Into<String>) -> Self {
        Actor {
            by: by.into(),
            by_name: None,
            via: via.into(),
        }
    }

    /// The actor that expires questions.
    pub fn timeout() -> Self {
        Actor::new("askbridge", "timeout")
    }
}

/// One attempt to resolve a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// What it does.
    pub transition: Transition,
    /// Who does it.
    pub actor: Actor,
    /// When it happens (it decides whether the deadline has passed).
    pub at: Millis,
    /// For approvals: the rule allowing it, or the rule its "always" creates.
    #[serde(default)]
    pub rule_id: Option<String>,
}

impl Claim {
    /// A claim with no rule, at `at`.
    pub fn new(transition: Transition, actor: Actor, at: Millis) -> Self {
        Claim {
            transition,
            actor,
            at,
            rule_id: None,
        }
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
        let (status, value, message) = match &claim.transition {
            Transition::Answer { value } => (Status::Answered, Some(value.clone()), None),
            Transition::Decline { message } => (Status::Declined, None, message.clone()),
            Transition::Cancel { reason } => (Status::Cancelled, None, reason.clone()),
            Transition::Expire => unreachable!("handled above"),
        };
        let resolution = Resolution {
            value,
            by: claim.actor.by.clone(),
            by_name: claim.actor.by_name.clone(),
            via: claim.actor.via.clone(),
            at: claim.at,
            message,
            rule_id: claim.rule_id.clone(),
        };
        (status, resolution)
    }

    /// The status and resolution of expiring at `at`: the default, if any, is the value.
    pub fn expiry_resolution(&self, at: Millis) -> (Status, Resolution) {
        let actor = Actor::timeout();
        let resolution = Resolution {
            value: self.default.clone(),
            by: actor.by,
            by_name: None,
            via: actor.via,
            at,
            message: None,
            rule_id: None,
        };
        (Status::Expired, resolution)
    }

    /// May `sender`, writing in `chat` (a target such as `telegram:-100`, or `api` for the HTTP
    /// API, which reaches every question), answer this question?
    ///
    /// Deny by default: a question with answerers accepts only them; one without accepts anyone
    /// who can see it, i.e. anyone writing in a chat it is shown in.
    pub fn may_answer(&self, sender: &str, chat: &str) -> bool {
        if !self.answerers.is_empty() {
            return self.answerers.iter().any(|a| a == sender);
        }
        // An approval without approvers is approvable by nobody: being able to see it (say,
        // in a group) never makes anyone an approver.
        if self.kind == Kind::Approval {
            return false;
        }
        chat == identity::API || self.targets.iter().any(|t| t == chat)
    }

    /// How long until the deadline, from `now`.
    pub fn remaining(&self, now: Millis) -> Duration {
        self.expires_at.since(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(options: &[&str]) -> Question {
        NewQuestion {
            options: options.iter().map(|o| o.to_string()).collect(),
            targets: vec!["telegram:-100".into()],
            ..NewQuestion::new("s1", "Which library?")
        }
        .into_question(QuestionId::random(), Millis(1_000_000), DEFAULT_TIMEOUT)
        .unwrap()
    }

    fn claim(transition: Transition, at: u64) -> Claim {
        Claim::new(
            transition,
            Actor::new("telegram:42", "telegram"),
            Millis(at),
        )
    }

    fn answer(text: &str) -> Transition {
        Transition::Answer {
            value: Answer::Text(text.into()),
        }
    }

    #[test]
    fn first_claim_wins_and_later_ones_change_nothing() {
        let mut q = sample(&["dayjs", "luxon"]);
        assert_eq!(
            q.apply(&claim(answer("dayjs"), 1_000_001)),
            ClaimOutcome::Won
        );
        let after_first = q.clone();
        assert_eq!(
            q.apply(&claim(answer("luxon"), 1_000_002)),
            ClaimOutcome::AlreadyResolved
        );
        assert_eq!(
            q.apply(&claim(Transition::Decline { message: None }, 1_000_003)),
            ClaimOutcome::AlreadyResolved
        );
        assert_eq!(
            q.apply(&claim(Transition::Expire, 9_000_000)),
            ClaimOutcome::AlreadyResolved
        );
        assert_eq!(q, after_first);
        let resolution = q.resolution.unwrap();
        assert_eq!(q.status, Status::Answered);
        assert_eq!(resolution.value, Some(Answer::Text("dayjs".into())));
        assert_eq!(resolution.by, "telegram:42");
        assert_eq!(resolution.via, "telegram");
    }

    #[test]
    fn a_claim_after_the_deadline_expires_the_question_with_its_default() {
        let mut q = sample(&["dayjs", "luxon"]);
        q.default = Some(Answer::Text("luxon".into()));
        let late = q.expires_at.0;
        assert_eq!(
            q.apply(&claim(answer("dayjs"), late)),
            ClaimOutcome::Expired
        );
        assert_eq!(q.status, Status::Expired);
        let resolution = q.resolution.unwrap();
        assert_eq!(resolution.value, Some(Answer::Text("luxon".into())));
        assert_eq!(resolution.via, "timeout");
    }

    #[test]
    fn decline_and_cancel_keep_their_messages() {
        let mut q = sample(&[]);
        q.apply(&claim(
            Transition::Decline {
                message: Some("not now".into()),
            },
            1_000_001,
        ));
        assert_eq!(q.status, Status::Declined);
        assert_eq!(q.resolution.unwrap().message.as_deref(), Some("not now"));
        let mut q = sample(&[]);
        q.apply(&claim(Transition::Cancel { reason: None }, 1_000_001));
        assert_eq!(q.status, Status::Cancelled);
    }

    #[test]
    fn answerers_are_deny_by_default() {
        let mut q = sample(&["a"]);
        assert!(q.may_answer("telegram:7", "telegram:-100"));
        assert!(
            !q.may_answer("telegram:7", "telegram:-200"),
            "a chat not shown in"
        );
        assert!(q.may_answer("api", "api"));
        q.answerers = vec!["telegram:42".into()];
        assert!(q.may_answer("telegram:42", "telegram:-200"));
        assert!(!q.may_answer("telegram:7", "telegram:-100"));
        assert!(!q.may_answer("api", "api"));
    }

    #[test]
    fn validation_names_the_field() {
        let err = |request: NewQuestion| match request.into_question(
            QuestionId::random(),
            Millis(0),
            DEFAULT_TIMEOUT,
        ) {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("expected a validation error, got {other:?}"),
        };
        assert_eq!(err(NewQuestion::new("", "x")), "session_id");
        assert_eq!(err(NewQuestion::new("s", "  ")), "prompt");
        let dup = NewQuestion {
            options: vec!["A".into(), "a".into()],
            ..NewQuestion::new("s", "x")
        };
        assert_eq!(err(dup), "options");
        let too_many = NewQuestion {
            options: (0..26).map(|n| format!("o{n}")).collect(),
            ..NewQuestion::new("s", "x")
        };
        assert_eq!(err(too_many), "options");
        let confirm_with_options = NewQuestion {
            kind: Kind::Confirm,
            options: vec!["a".into()],
            ..NewQuestion::new("s", "x")
        };
        assert_eq!(err(confirm_with_options), "options");
        let zero = NewQuestion {
            timeout_s: Some(0.0),
            ..NewQuestion::new("s", "x")
        };
        assert_eq!(err(zero), "timeout_s");
        let bad_target = NewQuestion {
            targets: vec!["nowhere".into()],
            ..NewQuestion::new("s", "x")
        };
        assert_eq!(err(bad_target), "targets");
        let bad_default = NewQuestion {
            options: vec!["a".into()],
            default: Some(Answer::Text("b".into())),
            ..NewQuestion::new("s", "x")
        };
        assert_eq!(err(bad_default), "default");
        let bad_callback = NewQuestion {
            callback_url: Some("ftp://x".into()),
            ..NewQuestion::new("s", "x")
        };
        assert_eq!(err(bad_callback), "callback_url");
    }

    #[test]
    fn json_shape_is_stable() {
        let q = sample(&["a", "b"]);
        let json = serde_json::to_value(&q).unwrap();
        for field in [
            "id",
            "session_id",
            "kind",
            "prompt",
            "detail",
            "options",
            "multi",
            "allow_custom",
            "created_at",
            "expires_at",
            "default",
            "answerers",
            "targets",
            "status",
            "resolution",
        ] {
            assert!(json.get(field).is_some(), "missing {field}");
        }
        assert_eq!(json["status"], "pending");
        assert_eq!(json["kind"], "ask");
        let back: Question = serde_json::from_value(json).unwrap();
        assert_eq!(back, q);
    }
}
