//! The value of an answer. A leaf module (it imports nothing from the crate), so approvals,
//! questions and journals can all name answers without importing one another.

use serde::{Deserialize, Serialize};
use std::fmt;

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
    /// A form's fields, by name.
    Object(serde_json::Map<String, serde_json::Value>),
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Bool(true) => f.write_str("yes"),
            Answer::Bool(false) => f.write_str("no"),
            Answer::List(items) => f.write_str(&items.join(", ")),
            Answer::Text(text) => f.write_str(text),
            Answer::Object(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| match value {
                        serde_json::Value::String(text) => format!("{name}: {text}"),
                        other => format!("{name}: {other}"),
                    })
                    .collect();
                f.write_str(&parts.join(", "))
            }
        }
    }
}
