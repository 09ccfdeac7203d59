//! Questions, their outcomes, and the one state machine every store applies.
//!
//! A question is `pending` until exactly one resolution wins: `answered`, `declined`, `expired` or
//! `cancelled`. [`Question::apply`] is that state machine as a pure function: the memory and
//! embedded stores call it under their lock or transaction, and the Redis store's script does the
//! same steps on the server (the shared conformance suite checks that they agree). Keeping the
//! rule in one place is what makes "first answer wins" mean the same thing on every store.
//!
//! The parts: this module holds a question's shape (its kind, status, fields and limits);
//! `claim` the state machine (claims and what applying one does); `audience` who a question
//! reaches over time (who may answer, where it is shown, when it is nudged).

mod audience;
mod claim;

pub use claim::{Choice, Claim, ClaimOutcome, Transition};

use crate::actions::BatchAction;
use crate::approval::Action;
use crate::decision::Decision;
use crate::form::FormSchema;
use crate::id::{QuestionId, RunId};
use crate::identity::{Identity, Target};
use crate::nudge::{Escalation, Reminders};
use crate::quorum::{Quorum, Vote};
pub use crate::resolution::Resolution;
use crate::time::Millis;
pub use crate::value::Answer;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

pub use crate::limits::{MAX_ANSWER_CHARS, MAX_DETAIL_CHARS, MAX_LABEL_CHARS, MAX_PROMPT_CHARS};

/// Default time a question stays open: 30 minutes, as in the seed design.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Longest time a question may stay open.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// Most options a question may have: what one Discord select menu holds, and few enough that
/// every multi-choice button payload fits Telegram's 64 bytes.
pub const MAX_OPTIONS: usize = 25;
/// Longest session id, in characters.
pub const MAX_SESSION_CHARS: usize = 128;
/// Most answerers or targets on one question.
pub const MAX_PEOPLE: usize = 100;

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
    /// Fill in typed fields ([`crate::form`]); the answer is an object.
    Form,
}

/// Where a question is in its life. Every state but `Pending` is final.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a person.
    #[default]
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

/// A question, as stored and as sent over the HTTP API. (Stores may leave out empty fields; they
/// read back as their defaults.)
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
    #[serde(default)]
    pub options: Vec<String>,
    /// Several options may be chosen.
    #[serde(default)]
    pub multi: bool,
    /// Free text is accepted besides the options.
    #[serde(default)]
    pub allow_custom: bool,
    /// When it was asked.
    pub created_at: Millis,
    /// When it expires if nobody answers.
    pub expires_at: Millis,
    /// What a waiter gets on timeout; `None` means the waiter gets a timeout error.
    pub default: Option<Answer>,
    /// Who may answer; empty means anyone who can reach a surface showing it.
    #[serde(default)]
    pub answerers: Vec<Identity>,
    /// Where it is shown (`telegram:<chat id>`, `discord:<channel id>`, `console`).
    #[serde(default)]
    pub targets: Vec<Target>,
    /// Where it is in its life.
    #[serde(default)]
    pub status: Status,
    /// How it was resolved, once it is.
    pub resolution: Option<Resolution>,
    /// The follow-up run waiting on it, if a chat-started run asked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// Where the resolved question is POSTed (signed), so HTTP callers need not long-poll.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    /// What an approval is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// Reminders while it is unanswered ([`crate::nudge`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminders: Option<Reminders>,
    /// Escalation steps while it is unanswered: more places, more people ([`crate::nudge`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalate: Vec<Escalation>,
    /// How many of whom must agree ([`crate::quorum`]); its members are the answerers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<Quorum>,
    /// The votes cast so far on a question with a quorum ([`crate::tally`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<Vote>,
    /// A form's fields ([`crate::form`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<FormSchema>,
    /// The decisions an approval offers ([`crate::decision`]); empty means once, always and
    /// reject (approvals stored before there was a choice).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<Decision>,
    /// The JSON Schema of an approval's arguments, which edited arguments must fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_schema: Option<serde_json::Value>,
    /// A batch's actions ([`crate::batch`]), each with its decision once made; empty for
    /// every other question.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<BatchAction>,
    /// A batch's digest, over its actions' digests in order ([`crate::batch::digest`]).
    #[serde(default, rename = "digest", skip_serializing_if = "Option::is_none")]
    pub batch_digest: Option<String>,
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::actor::Actor;
    use crate::request::NewQuestion;

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
        assert_eq!(resolution.by(), "telegram:42");
        assert_eq!(resolution.via(), "telegram");
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
        assert_eq!(resolution.via(), "timeout");
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
        let now = q.created_at;
        let may =
            |q: &Question, who: &str, chat: &str| q.may_answer(&who.into(), &chat.into(), now);
        assert!(may(&q, "telegram:7", "telegram:-100"));
        assert!(
            !may(&q, "telegram:7", "telegram:-200"),
            "a chat not shown in"
        );
        assert!(may(&q, "api", "api"));
        q.answerers = vec!["telegram:42".into()];
        assert!(may(&q, "telegram:42", "telegram:-200"));
        assert!(!may(&q, "telegram:7", "telegram:-100"));
        assert!(!may(&q, "api", "api"));
    }

    #[test]
    fn an_escalation_step_widens_who_may_answer_once_reached() {
        let mut q = sample(&["a"]);
        q.answerers = vec!["telegram:42".into()];
        q.escalate = vec![Escalation {
            after_s: 60.0,
            targets: vec!["discord:9".into()],
            answerers: vec!["discord:7".into()],
        }];
        let (before, after) = (
            q.created_at.after(Duration::from_secs(59)),
            q.created_at.after(Duration::from_secs(60)),
        );
        let boss = (&"discord:7".into(), &"discord:9".into());
        assert!(!q.may_answer(boss.0, boss.1, before));
        assert!(q.may_answer(boss.0, boss.1, after));
        assert!(q.may_answer(&"telegram:42".into(), &"telegram:-100".into(), after));
        assert!(
            !q.may_answer(&"discord:8".into(), boss.1, after),
            "the step names its answerers"
        );
        assert_eq!(q.targets_at(before), vec![Target::new("telegram:-100")]);
        assert_eq!(q.targets_at(after).len(), 2);
        assert_eq!(q.next_due(&[]), q.created_at.after(Duration::from_secs(60)));
        assert_eq!(q.next_due(&["escalate:0".into()]), q.expires_at);
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
