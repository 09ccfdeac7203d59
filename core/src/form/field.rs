//! Reading and checking one field's value: from a chat reply or a tap ([`Field::read`]), or
//! from a JSON value ([`Field::fit`]). Kept apart from the schema's types because every rule of
//! what a value may be lives here, and a change to one of them should be read in one place.

use super::{DEFAULT_MAX_LENGTH, Field, FieldType};
use crate::text::{Lines, refusal};
use serde_json::Value;

/// A value repeated in a refusal: shortened, and with anything that could act on a terminal or
/// reorder the message shown as an escape.
fn quoted(text: &str) -> String {
    crate::text::shorten(&crate::text::printable(text), 40)
}

impl Field {
    /// The choices a person picks among (a string enum's or a multi-select's).
    pub fn choices(&self) -> &[String] {
        match (&self.choices, &self.items) {
            (Some(choices), _) => choices,
            (None, Some(items)) => &items.choices,
            _ => &[],
        }
    }

    /// The label shown for choice `index`.
    pub fn choice_label(&self, index: usize) -> &str {
        self.choice_names
            .as_ref()
            .and_then(|names| names.get(index))
            .or_else(|| self.choices().get(index))
            .map_or("", String::as_str)
    }

    /// What a value must be, in words ("a whole number from 1 to 10").
    pub fn expects(&self) -> String {
        let range = |what: &str| match (self.minimum, self.maximum) {
            (Some(min), Some(max)) => format!("{what} from {min} to {max}"),
            (Some(min), None) => format!("{what} of at least {min}"),
            (None, Some(max)) => format!("{what} of at most {max}"),
            (None, None) => what.to_owned(),
        };
        let labels = |n: usize| {
            (0..n)
                .map(|i| self.choice_label(i))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self.kind {
            FieldType::Boolean => "yes or no".to_owned(),
            FieldType::Integer => range("a whole number"),
            FieldType::Number => range("a number"),
            FieldType::Array => format!(
                "one or more of: {} (separated by commas)",
                labels(self.choices().len())
            ),
            FieldType::String if !self.choices().is_empty() => {
                format!("one of: {}", labels(self.choices().len()))
            }
            FieldType::String => match self.format.as_deref() {
                Some("email") => "an email address".to_owned(),
                Some("uri") => "a URL (https://…)".to_owned(),
                Some("date") => "a date (YYYY-MM-DD)".to_owned(),
                Some("date-time") => "a date and time (YYYY-MM-DDTHH:MM)".to_owned(),
                _ => match self.min_length {
                    Some(min) => format!("text of {min} to {} characters", self.longest()),
                    None => format!("text of at most {} characters", self.longest()),
                },
            },
        }
    }

    /// Reads a typed reply (or a button's payload) as this field's value: numbers, yes/no,
    /// a choice by label, value or number, several choices separated by commas.
    pub fn read(&self, text: &str) -> Result<Value, String> {
        let text = text.trim();
        let value = match self.kind {
            FieldType::Boolean => match text.to_lowercase().as_str() {
                "yes" | "y" | "true" | "1" | "on" => Value::Bool(true),
                "no" | "n" | "false" | "0" | "off" => Value::Bool(false),
                _ => return Err(format!("\"{}\" is not {}", quoted(text), self.expects())),
            },
            FieldType::Integer => match text.replace('_', "").parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => return Err(format!("\"{}\" is not {}", quoted(text), self.expects())),
            },
            FieldType::Number => match text.replace(',', ".").parse::<f64>() {
                Ok(n) if n.is_finite() => Value::from(n),
                _ => return Err(format!("\"{}\" is not {}", quoted(text), self.expects())),
            },
            FieldType::String if !self.choices().is_empty() => Value::String(self.pick(text)?),
            FieldType::String => Value::String(text.to_owned()),
            FieldType::Array => {
                let picked: Result<Vec<Value>, String> = text
                    .split(',')
                    .map(str::trim)
                    .filter(|part| !part.is_empty())
                    .map(|part| self.pick(part).map(Value::String))
                    .collect();
                Value::Array(picked?)
            }
        };
        self.fit(&value)
    }

    /// The choice `text` names: its value, its label or its number (1-based).
    pub(super) fn pick(&self, text: &str) -> Result<String, String> {
        let choices = self.choices();
        if let Ok(n) = text.parse::<usize>()
            && (1..=choices.len()).contains(&n)
        {
            return Ok(choices[n - 1].clone());
        }
        (0..choices.len())
            .find(|&i| {
                choices[i].eq_ignore_ascii_case(text)
                    || self.choice_label(i).eq_ignore_ascii_case(text)
            })
            .map(|i| choices[i].clone())
            .ok_or_else(|| format!("\"{}\" is not {}", quoted(text), self.expects()))
    }

    /// Checks a value given as JSON (over HTTP, or read from a reply).
    pub fn fit(&self, value: &Value) -> Result<Value, String> {
        let wrong = || Err(format!("expected {}", self.expects()));
        match (self.kind, value) {
            (FieldType::Boolean, Value::Bool(_)) => Ok(value.clone()),
            (FieldType::Integer, Value::Number(n)) if n.is_i64() || n.is_u64() => {
                self.in_range(n.as_f64().unwrap_or_default())?;
                Ok(value.clone())
            }
            (FieldType::Number, Value::Number(n)) => {
                self.in_range(n.as_f64().unwrap_or_default())?;
                Ok(value.clone())
            }
            (FieldType::String, Value::String(text)) => self.fit_text(text).map(Value::String),
            (FieldType::Array, Value::Array(items)) => {
                let choices = self.choices();
                if items.iter().any(|item| {
                    !item
                        .as_str()
                        .is_some_and(|s| choices.iter().any(|c| c == s))
                }) {
                    return wrong();
                }
                let n = items.len();
                if self.min_items.is_some_and(|min| n < min)
                    || self.max_items.is_some_and(|max| n > max)
                {
                    return Err(format!(
                        "choose {} of them",
                        match (self.min_items, self.max_items) {
                            (Some(a), Some(b)) => format!("{a} to {b}"),
                            (Some(a), None) => format!("at least {a}"),
                            (None, Some(b)) => format!("at most {b}"),
                            (None, None) => "any".to_owned(),
                        }
                    ));
                }
                Ok(value.clone())
            }
            _ => wrong(),
        }
    }

    fn in_range(&self, n: f64) -> Result<(), String> {
        if self.minimum.is_some_and(|min| n < min) || self.maximum.is_some_and(|max| n > max) {
            return Err(format!("{n} is out of range: expected {}", self.expects()));
        }
        Ok(())
    }

    /// The longest text answer, in characters: the schema's `maxLength`, else the default.
    fn longest(&self) -> usize {
        self.max_length.unwrap_or(DEFAULT_MAX_LENGTH)
    }

    /// Checks a text value: one of the choices, or free text held to the rules free-text
    /// answers follow (the text policy, several lines allowed) and to the field's length bound.
    fn fit_text(&self, text: &str) -> Result<String, String> {
        let text = text.trim().to_owned();
        let choices = self.choices();
        if !choices.is_empty() {
            return match choices.iter().find(|c| **c == text) {
                Some(choice) => Ok(choice.clone()),
                None => Err(format!("\"{}\" is not {}", quoted(&text), self.expects())),
            };
        }
        let chars = text.chars().count();
        if self.min_length.is_some_and(|min| chars < min) || chars > self.longest() {
            return Err(format!("{chars} characters; expected {}", self.expects()));
        }
        if let Some(why) = refusal(&text, Lines::Many) {
            return Err(format!("the text {why}"));
        }
        let fits = match self.format.as_deref() {
            Some("email") => {
                let mut parts = text.split('@');
                let (user, host) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                !user.is_empty()
                    && host.contains('.')
                    && parts.next().is_none()
                    && !text.contains(char::is_whitespace)
            }
            Some("uri") => {
                (text.starts_with("https://") || text.starts_with("http://"))
                    && !text.contains(char::is_whitespace)
                    && text.len() > 8
            }
            Some("date") => is_date(&text),
            Some("date-time") => {
                text.len() >= 16 && is_date(&text[..10]) && matches!(&text[10..11], "T" | " ")
            }
            _ => true,
        };
        if fits {
            Ok(text)
        } else {
            Err(format!("\"{}\" is not {}", quoted(&text), self.expects()))
        }
    }
}

fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    matches!(parts.as_slice(), [y, m, d]
        if y.len() == 4 && m.len() == 2 && d.len() == 2
        && y.parse::<u32>().is_ok()
        && m.parse::<u32>().is_ok_and(|m| (1..=12).contains(&m))
        && d.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d)))
}
