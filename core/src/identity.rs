//! Who and where: [`Identity`] (a person or program that answers) and [`Target`] (a place a
//! question is shown), both `<surface>:<address>` on the wire.
//!
//! A person is `telegram:42` or `discord:1234` (the platform's user id), and a place is
//! `telegram:-1001234` or `discord:5678` (a chat or channel id). The console and the HTTP API are
//! single places and single identities, `console` and `api`. The text form keeps the JSON readable
//! and lets new surfaces appear without a change here; the two types keep a sender from being
//! passed where a chat is expected (`may_answer(sender, chat)` cannot be called the wrong way
//! round).
//!
//! Values are not checked on construction, so that stored records always load; requests are
//! checked with [`is_well_formed`] where they enter (question validation, query parameters).

use crate::id::RuleId;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::fmt;

/// The HTTP API, as an identity and as a surface that reaches every question.
pub const API: &str = "api";
/// The terminal of the process running askbridge.
pub const CONSOLE: &str = "console";

/// True for `console`, `api`, or `<surface>:<address>` with a lower-case surface name and an
/// address of letters, digits and `-_.@` that its surface could give (Telegram and Discord ids are
/// integers written in canonical decimal, Slack ids upper case).
pub fn is_well_formed(text: &str) -> bool {
    if text == API || text == CONSOLE {
        return true;
    }
    let Some((surface, address)) = text.split_once(':') else {
        return false;
    };
    let surface_ok = surface.starts_with(|c: char| c.is_ascii_lowercase())
        && surface
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let address_ok = !address.is_empty()
        && address.len() <= 64
        && address
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
    surface_ok && address_ok && fits_surface(surface, address)
}

/// Could `surface` ever give `address`? Telegram and Discord ids are integers, written in
/// decimal with no leading zero (`telegram:042` is no one, though it reads as `telegram:42`);
/// Slack ids are upper-case letters and digits; on any surface an address that is a number is
/// written the one way. Two spellings of one person would make two quorum members of one.
fn fits_surface(surface: &str, address: &str) -> bool {
    match surface {
        "telegram" | "discord" => canonical_integer(address).as_deref() == Some(address),
        "slack" => address
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()),
        _ => canonical_integer(address).is_none_or(|canonical| canonical == address),
    }
}

/// `address` written as an integer is written canonically (`-0042` gives `-42`, `00` gives
/// `0`); `None` when it is not an integer.
fn canonical_integer(address: &str) -> Option<String> {
    let digits = address.strip_prefix('-').unwrap_or(address);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let trimmed = digits.trim_start_matches('0');
    Some(match trimmed {
        "" => "0".to_owned(),
        _ if digits.len() < address.len() => format!("-{trimmed}"),
        _ => trimmed.to_owned(),
    })
}

/// Why `text` is not a well-formed identity or target, in words that say what would work.
pub fn malformed(text: &str) -> String {
    if let Some((surface, address)) = text.split_once(':')
        && let Some(canonical) = canonical_integer(address)
        && canonical != address
    {
        return format!("`{text}` is not an id {surface} gives: write `{surface}:{canonical}`");
    }
    format!(
        "`{}` is not of the form `console`, `api` or `<surface>:<id>` that its surface gives (e.g. `telegram:42`)",
        crate::text::printable(text)
    )
}

/// The surface part: `telegram` for `telegram:42`, `console` for `console`.
pub fn surface_of(text: &str) -> &str {
    text.split_once(':').map_or(text, |(surface, _)| surface)
}

/// The address part: `42` for `telegram:42`, `None` for `console`.
pub fn address_of(text: &str) -> Option<&str> {
    text.split_once(':').map(|(_, address)| address)
}

/// Defines a `<surface>:<address>` newtype with the same accessors and conversions.
macro_rules! address_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps `text` (unchecked; see [`is_well_formed`]).
            pub fn new(text: impl Into<String>) -> Self {
                $name(text.into())
            }

            /// `<surface>:<address>`.
            pub fn compose(surface: &str, address: impl fmt::Display) -> Self {
                $name(format!("{surface}:{address}"))
            }

            /// The HTTP API.
            pub fn api() -> Self {
                $name(API.to_owned())
            }

            /// The console.
            pub fn console() -> Self {
                $name(CONSOLE.to_owned())
            }

            /// The text form.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The surface part (`telegram` for `telegram:42`).
            pub fn surface(&self) -> &str {
                surface_of(&self.0)
            }

            /// The address part (`42` for `telegram:42`; `None` for `console`).
            pub fn address(&self) -> Option<&str> {
                address_of(&self.0)
            }

            /// See [`is_well_formed`].
            pub fn is_well_formed(&self) -> bool {
                is_well_formed(&self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                $name(text.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> Self {
                $name(text)
            }
        }

        impl From<&String> for $name {
            fn from(text: &String) -> Self {
                $name(text.clone())
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == *other
            }
        }
    };
}

address_type! {
    /// Someone (or something) that answers: `telegram:42`, `discord:1234`, `console`, `api`.
    Identity
}

address_type! {
    /// A place a question is shown and messages are written: `telegram:-1001234`,
    /// `discord:5678`, `console`; `api` for the HTTP API, which reaches every question.
    Target
}

/// The numeric addresses of those of `people` on `surface` (`telegram:42` gives 42), for an
/// adapter that mentions people by user id; others are left out.
pub fn numeric_ids_on(people: &[Identity], surface: &str) -> Vec<u64> {
    people
        .iter()
        .filter(|who| who.surface() == surface)
        .filter_map(|who| who.address()?.parse::<u64>().ok())
        .filter(|id| *id != 0)
        .collect()
}

impl Identity {
    /// The identity askbridge itself acts under (timeouts, stopped sessions).
    pub fn askbridge() -> Self {
        Identity("askbridge".to_owned())
    }

    /// The identity under which rule `rule` decides (`rule:<id>`), as records have always
    /// carried it.
    pub fn of_rule(rule: &RuleId) -> Self {
        Identity(format!("rule:{rule}"))
    }

    /// The rule a `rule:<id>` identity names.
    pub fn rule(&self) -> Option<RuleId> {
        self.0.strip_prefix("rule:").map(RuleId::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_identities_and_targets() {
        for good in [
            "api",
            "console",
            "telegram:42",
            "telegram:-1001234",
            "discord:1234",
            "web:ops@x",
        ] {
            assert!(is_well_formed(good), "{good}");
        }
        for bad in [
            "",
            "Telegram:1",
            "telegram:",
            ":1",
            "telegram 1",
            "telegram:a b",
            "nobody",
            "telegram:042",
            "telegram:-0",
            "telegram:00",
            "telegram:abc",
            "discord:12a",
            "slack:u042",
            "web:007",
        ] {
            assert!(!is_well_formed(bad), "{bad}");
        }
        assert!(malformed("telegram:042").contains("write `telegram:42`"));
        assert!(malformed("web:-007").contains("write `web:-7`"));
        let person = Identity::compose("telegram", -5);
        assert_eq!(person, "telegram:-5");
        assert_eq!(person.surface(), "telegram");
        assert_eq!(Target::console().surface(), "console");
        assert_eq!(Target::from("discord:9").address(), Some("9"));
        assert_eq!(Target::console().address(), None);
    }

    #[test]
    fn the_wire_form_is_the_plain_string() {
        let json = serde_json::to_string(&Identity::from("telegram:42")).unwrap();
        assert_eq!(json, "\"telegram:42\"");
        let back: Target = serde_json::from_str("\"telegram:-100\"").unwrap();
        assert_eq!(back.as_str(), "telegram:-100");
    }
}
