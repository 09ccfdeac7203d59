//! Who resolves a question: a person or program on some surface ([`Actor`]), an "always allow"
//! rule, or the deadline ([`Decider`]).
//!
//! Records and API clients have always seen who decided as two strings, `by` and `via` (`by:
//! "telegram:42", via: "telegram"`; `by: "rule:<id>", via: "rule"`; `by: "askbridge", via:
//! "timeout"`). [`Decider`] is the typed form the code works with; [`Decider::wire`] and
//! [`Decider::from_wire`] keep those strings exactly as they were, so nothing stored or sent
//! changes.

use crate::error::Error;
use crate::id::RuleId;
use crate::identity::Identity;
use crate::text::Lines;
use serde::{Deserialize, Serialize};

/// The `via` of decisions made by rules.
pub const RULE_VIA: &str = "rule";
/// The `via` of expiries.
pub const TIMEOUT_VIA: &str = "timeout";

/// A person or program acting through a surface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// Identity (`telegram:42`).
    pub by: Identity,
    /// Display name (`@alice`), if known.
    pub by_name: Option<String>,
    /// Surface (`telegram`).
    pub via: String,
}

impl Actor {
    /// An actor with no display name.
    pub fn new(by: impl Into<Identity>, via: impl Into<String>) -> Self {
        Actor {
            by: by.into(),
            by_name: None,
            via: via.into(),
        }
    }

    /// The HTTP API (every HTTP caller acts as `api`).
    pub fn api() -> Self {
        Actor::new(Identity::api(), crate::identity::API)
    }

    /// askbridge itself, for what it does on its own (`via` says why: `stop` for a stopped
    /// session).
    pub fn askbridge(via: impl Into<String>) -> Self {
        Actor::new(Identity::askbridge(), via)
    }

    /// Sets the display name. A name the text policy refuses (a platform's user may call
    /// themselves anything) is kept visible rather than dropped: its control, direction and
    /// invisible characters shown as escapes, so it cannot garble the outcome line it ends up in.
    /// Programs are refused such names instead ([`check_name`]).
    pub fn named(mut self, name: Option<String>) -> Self {
        self.by_name = name.map(|name| {
            let name = match crate::text::refusal(&name, Lines::One) {
                Some(_) => crate::text::visible(&name).into_owned(),
                None => name,
            };
            crate::text::shorten(&name, MAX_NAME_CHARS)
        });
        self
    }
}

/// Longest display name, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// Checks a display name a program gives (the HTTP API's `by`): the text policy for one line,
/// at most [`MAX_NAME_CHARS`] characters.
pub fn check_name(name: &str) -> Result<(), Error> {
    match crate::text::unfit(name, Lines::One, (1, MAX_NAME_CHARS)) {
        Some(reason) => Err(Error::Invalid {
            field: "by",
            reason,
        }),
        None => Ok(()),
    }
}

/// Who decided a question's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decider {
    /// A person or program (including askbridge stopping a session).
    Actor(Actor),
    /// An "always allow" rule allowed an approval.
    Rule(RuleId),
    /// The deadline passed.
    Deadline,
}

impl From<Actor> for Decider {
    fn from(actor: Actor) -> Self {
        Decider::Actor(actor)
    }
}

/// `by`, `by_name` and `via` as stored and sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireDecider {
    /// The identity (`telegram:42`, `rule:<id>`, `askbridge`).
    pub by: Identity,
    /// A display name.
    pub by_name: Option<String>,
    /// The surface (`telegram`, `rule`, `timeout`).
    pub via: String,
}

impl Decider {
    /// The `by`/`by_name`/`via` strings records have always carried.
    pub fn wire(&self) -> WireDecider {
        match self {
            Decider::Actor(actor) => WireDecider {
                by: actor.by.clone(),
                by_name: actor.by_name.clone(),
                via: actor.via.clone(),
            },
            Decider::Rule(rule) => WireDecider {
                by: Identity::of_rule(rule),
                by_name: None,
                via: RULE_VIA.to_owned(),
            },
            Decider::Deadline => WireDecider {
                by: Identity::askbridge(),
                by_name: None,
                via: TIMEOUT_VIA.to_owned(),
            },
        }
    }

    /// Reads the strings back.
    pub fn from_wire(wire: WireDecider) -> Self {
        if wire.via == RULE_VIA
            && let Some(rule) = wire.by.rule()
        {
            return Decider::Rule(rule);
        }
        if wire.via == TIMEOUT_VIA && wire.by == Identity::askbridge() {
            return Decider::Deadline;
        }
        Decider::Actor(Actor {
            by: wire.by,
            by_name: wire.by_name,
            via: wire.via,
        })
    }

    /// The person or program, when one decided.
    pub fn actor(&self) -> Option<&Actor> {
        match self {
            Decider::Actor(actor) => Some(actor),
            _ => None,
        }
    }

    /// The rule, when one decided.
    pub fn rule(&self) -> Option<&RuleId> {
        match self {
            Decider::Rule(rule) => Some(rule),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_held_to_the_text_policy() {
        let named = |name: &str| Actor::api().named(Some(name.into())).by_name.unwrap();
        assert_eq!(named("@alice"), "@alice");
        assert_eq!(named("\u{202E}ecila"), "\\u{202e}ecila");
        assert_eq!(named("\u{3164}"), "\\u{3164}");
        assert_eq!(named(&"a".repeat(300)).chars().count(), MAX_NAME_CHARS);
        assert!(check_name("ops:alice").is_ok());
        for bad in [
            "\u{202E}x",
            "a\u{1b}[2J",
            "\u{2800}",
            "a\u{2028}b",
            &"a".repeat(101),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_decider_keeps_its_strings() {
        let deciders = [
            Decider::Actor(Actor::new("telegram:42", "telegram").named(Some("@alice".into()))),
            Decider::Actor(Actor::askbridge("stop")),
            Decider::Actor(Actor::api()),
            Decider::Rule(RuleId::new("rule-k3f9x2m8qa")),
            Decider::Deadline,
        ];
        for decider in deciders {
            assert_eq!(Decider::from_wire(decider.wire()), decider);
        }
        let rule = Decider::Rule(RuleId::new("rule-x")).wire();
        assert_eq!(
            (rule.by.as_str(), rule.via.as_str()),
            ("rule:rule-x", "rule")
        );
        let timeout = Decider::Deadline.wire();
        assert_eq!(
            (timeout.by.as_str(), timeout.via.as_str()),
            ("askbridge", "timeout")
        );
    }
}
