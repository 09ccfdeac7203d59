//! Approvals: "may the agent run `rm -rf build/`?"
//!
//! An approval question carries the [`Action`] it is about — a tool name and its arguments — and
//! is bound to the action's [`Action::digest`]: a reply that names another digest is refused, and
//! the function holding an [`Approval`] can check that it covers the very action it is about to
//! run ([`Approval::covers`]), so an approval never stretches to an action nobody saw.
//!
//! Replies are *allow once*, *allow always* (which creates a [`Rule`], for the session or
//! everywhere) or *reject* with optional feedback, which reaches the function as the rejection's
//! text. Later approvals a rule matches are allowed without asking.

use crate::Error;
use crate::id::{QuestionId, RuleId};
use crate::identity::Identity;
use crate::text::Lines;
use crate::time::Millis;
use crate::value::Answer;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The word that rejects an approval (`/answer <id> reject [feedback]`).
pub const REJECT: &str = "reject";

/// A reply that allows an approval. Stored and sent as the answer's text (`"once"`, `"always"`,
/// `"always everywhere"`), as it always has been.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApprovalReply {
    /// Allow this once.
    Once,
    /// Allow, and let a rule allow the same action again in this session.
    AlwaysInSession,
    /// Allow, and let a rule allow the same action again everywhere.
    AlwaysEverywhere,
}

impl ApprovalReply {
    /// The answer's text.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalReply::Once => "once",
            ApprovalReply::AlwaysInSession => "always",
            ApprovalReply::AlwaysEverywhere => "always everywhere",
        }
    }

    /// Reads lower-case words (`once`, `always`, `always session`, `always everywhere`).
    pub fn from_words(words: &[&str]) -> Option<Self> {
        match words {
            ["once"] => Some(ApprovalReply::Once),
            ["always"] | ["always", "session"] => Some(ApprovalReply::AlwaysInSession),
            ["always", "everywhere"] => Some(ApprovalReply::AlwaysEverywhere),
            _ => None,
        }
    }

    /// The reply a stored answer holds, if it is one.
    pub fn of_answer(answer: &Answer) -> Option<Self> {
        match answer {
            Answer::Text(text) => [
                ApprovalReply::Once,
                ApprovalReply::AlwaysInSession,
                ApprovalReply::AlwaysEverywhere,
            ]
            .into_iter()
            .find(|reply| reply.as_str() == text),
            _ => None,
        }
    }

    /// True for the "always" replies, which create a rule.
    pub fn creates_rule(self) -> bool {
        self != ApprovalReply::Once
    }
}

impl From<ApprovalReply> for Answer {
    fn from(reply: ApprovalReply) -> Self {
        Answer::Text(reply.as_str().to_owned())
    }
}

/// How many hex characters of the digest people see (and buttons carry).
pub const SHORT_DIGEST: usize = 8;
/// Longest argument value shown in a message before `/show` is needed.
const ARG_CHARS: usize = 120;

/// What an approval is about: a tool and its arguments. In JSON it also carries its `digest`
/// (computed, never read back), so clients can bind their replies to it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Action {
    /// The tool's name (`shell`, `http.post`, `deploy`).
    pub tool: String,
    /// Its arguments, as JSON (usually an object).
    #[serde(default)]
    pub args: serde_json::Value,
}

impl Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Action", 3)?;
        out.serialize_field("tool", &self.tool)?;
        out.serialize_field("args", &self.args)?;
        out.serialize_field("digest", &self.digest())?;
        out.end()
    }
}

impl Action {
    /// An action of `tool` with `args`.
    pub fn new(tool: impl Into<String>, args: serde_json::Value) -> Self {
        Action {
            tool: tool.into(),
            args,
        }
    }

    /// A digest of exactly this action: SHA-256 of its canonical JSON (object keys sorted), as
    /// 16 hex characters.
    pub fn digest(&self) -> String {
        // Objects keep the order they were written in (forms need it), so keys are sorted here:
        // equal actions serialise identically whoever wrote them.
        let action = serde_json::json!({"tool": self.tool, "args": sorted(&self.args)});
        let canonical = serde_json::to_vec(&action).expect("JSON values serialise");
        Sha256::digest(&canonical)[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The digest people see.
    pub fn short_digest(&self) -> String {
        self.digest()[..SHORT_DIGEST].to_owned()
    }

    /// Checks the action is well formed: a tool name people can read (the text policy, one
    /// line, 1-100 characters) and arguments of at most 32 kB. The arguments are kept as given,
    /// whatever characters they hold: they are what will run, so they are shown escaped
    /// ([`Action::arguments`]) rather than refused or changed.
    pub fn check(&self) -> Result<(), Error> {
        if let Some(reason) = crate::text::unfit(&self.tool, Lines::One, (1, 100)) {
            return Err(Error::Invalid {
                field: "action",
                reason: format!("the action's tool name {reason}"),
            });
        }
        if serde_json::to_vec(&self.args).map_or(0, |v| v.len()) > 32_000 {
            return Err(Error::Invalid {
                field: "action",
                reason: "the action's arguments are over 32 kB".into(),
            });
        }
        Ok(())
    }

    /// Each argument as `name`/value text, as people are shown it (top-level keys of an object;
    /// the whole value under `args` otherwise). Control, direction and invisible characters are
    /// shown as `\u{..}` escapes ([`crate::text::visible`]): what is read is what will run.
    pub fn arguments(&self) -> Vec<(String, String)> {
        let shown = |text: &str| crate::text::visible(text).into_owned();
        match &self.args {
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(k, v)| (shown(k), shown(&value_text(v))))
                .collect(),
            serde_json::Value::Null => Vec::new(),
            other => vec![("args".to_owned(), shown(&value_text(other)))],
        }
    }

    /// The tool's name as people are shown it (escaped as the arguments are: a name stored
    /// before the text policy may hold anything).
    pub fn tool_shown(&self) -> std::borrow::Cow<'_, str> {
        crate::text::visible(&self.tool)
    }

    /// The readable block shown in messages: the tool and its arguments, long values shortened.
    pub fn block(&self, full: bool) -> String {
        let mut text = format!("Action: {}", self.tool_shown());
        for (name, value) in self.arguments() {
            let value = if full {
                value
            } else {
                crate::text::shorten(&value, ARG_CHARS)
            };
            text.push_str(&format!("\n  {name}: {value}"));
        }
        text.push_str(&format!("\n(digest {})", self.short_digest()));
        text
    }
}

/// A JSON value as text: strings bare, anything else as compact JSON.
fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Where a rule applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Scope {
    /// Within one session (one run, one conversation).
    Session {
        /// The session.
        session_id: String,
    },
    /// Everywhere.
    Everywhere,
}

/// "Always allow": later approvals of the very same action (tool and arguments, compared by
/// digest, so an extra argument or a changed value is another action) are allowed without asking.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// Id (derived from the approval that created it).
    pub id: RuleId,
    /// The action it allows again.
    pub action: Action,
    /// Where it applies.
    pub scope: Scope,
    /// Who created it; it only decides approvals this identity may answer.
    pub created_by: Identity,
    /// When.
    pub created_at: Millis,
    /// The approval whose "always" created it.
    pub question_id: Option<QuestionId>,
    /// How many agreeing votes made it, when a quorum did (0: one person). It decides an
    /// approval with a quorum only if it was made by at least as many.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quorum: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Rule {
    /// Does it allow `action` in `session_id`?
    pub fn matches(&self, session_id: &str, action: &Action) -> bool {
        let in_scope = match &self.scope {
            Scope::Everywhere => true,
            Scope::Session { session_id: scoped } => scoped == session_id,
        };
        in_scope && self.action.digest() == action.digest()
    }

    /// One line for `/rules` and logs.
    pub fn describe(&self) -> String {
        let scope = match &self.scope {
            Scope::Everywhere => "everywhere".to_owned(),
            Scope::Session { session_id } => format!("in session {session_id}"),
        };
        let args = crate::text::visible(&self.action.args.to_string()).into_owned();
        let args = crate::text::shorten(&args, 120);
        format!("{}: {} {args} {scope}", self.id, self.action.tool_shown())
    }
}

/// An approval edited before it was allowed: what was proposed and what may run instead. Kept
/// in the resolution (so every store's audit trail records both, apart).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edited {
    /// The action as the agent proposed it.
    pub proposed: Action,
    /// The action as the person approved it: the one to run.
    pub approved: Action,
}

/// How an approval went, as the function that asked sees it. `Edited` and `Responded` are
/// answers too: the first runs other arguments, the second runs nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Approval {
    /// Allowed this once.
    Once {
        /// Digest of the approved action.
        digest: String,
    },
    /// Allowed, and a rule now allows it again.
    Always {
        /// The rule created.
        rule_id: RuleId,
        /// Digest of the approved action.
        digest: String,
    },
    /// Allowed without asking by an existing rule.
    ByRule {
        /// The rule that matched.
        rule_id: RuleId,
        /// Digest of the approved action.
        digest: String,
    },
    /// Allowed with changed arguments: run `action`, not the proposed one.
    Edited {
        /// The action to run (the proposed tool, the person's arguments).
        action: Action,
        /// Digest of the proposed action.
        proposed_digest: String,
    },
    /// Answered in the tool's place: `text` is the tool's result, and nothing runs.
    Responded {
        /// The person's text.
        text: String,
    },
}

impl Approval {
    /// True when this approval is for exactly `action`.
    pub fn covers(&self, action: &Action) -> bool {
        let digest = match self {
            Approval::Once { digest }
            | Approval::Always { digest, .. }
            | Approval::ByRule { digest, .. } => digest.clone(),
            Approval::Edited { action, .. } => action.digest(),
            Approval::Responded { .. } => return false,
        };
        digest == action.digest()
    }
}

/// `value` with every object's keys in sorted order, at every depth.
fn sorted(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            serde_json::Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(sorted).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digests_are_canonical_and_specific() {
        let a = Action::new("shell", json!({"command": "rm -rf build/", "cwd": "/repo"}));
        let b: Action = serde_json::from_str(
            r#"{"args": {"cwd": "/repo", "command": "rm -rf build/"}, "tool": "shell"}"#,
        )
        .unwrap();
        assert_eq!(a.digest(), b.digest(), "key order does not matter");
        assert_eq!(a.digest().len(), 16);
        let c = Action::new("shell", json!({"command": "rm -rf /", "cwd": "/repo"}));
        assert_ne!(a.digest(), c.digest());
    }

    #[test]
    fn json_carries_the_digest_but_never_trusts_one() {
        let a = Action::new("shell", json!({"command": "ls"}));
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["digest"], a.digest());
        let forged: Action = serde_json::from_value(
            json!({"tool": "shell", "args": {"command": "ls"}, "digest": "0000"}),
        )
        .unwrap();
        assert_eq!(forged, a);
    }

    #[test]
    fn blocks_shorten_long_values() {
        let a = Action::new("shell", json!({"command": "x".repeat(500), "n": 3}));
        let block = a.block(false);
        assert!(
            block.starts_with("Action: shell\n  command: xxx"),
            "{block}"
        );
        assert!(block.contains("…") && block.contains("\n  n: 3"), "{block}");
        assert!(a.block(true).contains(&"x".repeat(500)));
    }

    #[test]
    fn arguments_are_kept_but_shown_escaped_and_tool_names_follow_the_policy() {
        let command = "ls build/ \u{202E}~ fr- mr\r\u{1b}[2K";
        let a = Action::new(
            "shell",
            json!({"command": command, "\u{200B}cwd": "/\u{3164}"}),
        );
        assert!(a.check().is_ok(), "arguments are kept as given");
        let block = a.block(true);
        assert!(
            block.contains("command: ls build/ \\u{202e}~ fr- mr\\u{d}\\u{1b}[2K"),
            "{block}"
        );
        assert!(block.contains("\\u{200b}cwd: /\\u{3164}"), "{block}");
        assert_eq!(a.args["command"], command);
        for tool in ["she\u{202E}ll", "a\rb", "\u{3164}", "", "x\ny"] {
            assert!(Action::new(tool, json!({})).check().is_err(), "{tool:?}");
        }
    }

    #[test]
    fn rules_match_only_their_exact_action_in_their_scope() {
        let action = Action::new("shell", json!({"command": "make"}));
        let rule = Rule {
            id: "r1".into(),
            action: action.clone(),
            scope: Scope::Session {
                session_id: "s1".into(),
            },
            created_by: "telegram:1".into(),
            created_at: Millis(0),
            question_id: None,
            quorum: 0,
        };
        assert!(rule.matches("s1", &action));
        assert!(!rule.matches("s2", &action), "another session");
        for other in [
            json!({"command": "make", "env": {"LD_PRELOAD": "x.so"}}),
            json!({"command": "make all"}),
            json!({"command": 1}),
            json!({}),
        ] {
            assert!(
                !rule.matches("s1", &Action::new("shell", other.clone())),
                "{other}"
            );
        }
        assert!(!rule.matches("s1", &Action::new("python", json!({"command": "make"}))));
        let everywhere = Rule {
            scope: Scope::Everywhere,
            ..rule
        };
        assert!(everywhere.matches("s9", &action));
    }

    #[test]
    fn approvals_cover_their_action_only() {
        let action = Action::new("shell", json!({"command": "ls"}));
        let approval = Approval::Once {
            digest: action.digest(),
        };
        assert!(approval.covers(&action));
        assert!(!approval.covers(&Action::new("shell", json!({"command": "ls -la"}))));
    }
}
