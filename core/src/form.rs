//! Forms: a question whose answer is an object of typed fields, described by the flat schema MCP
//! elicitation uses (`{"type": "object", "properties": {...}, "required": [...]}` with string,
//! number, integer and boolean fields, enums, multi-select enums, formats, bounds and defaults).
//!
//! Over HTTP and on the ops page a form is answered as one object ([`FormSchema::fit`]). In chat
//! it is filled in one field at a time ([`Draft`]): each value is read from a reply or a tap
//! ([`Field::read`]) and checked at once, so a value that does not fit is answered with why,
//! before the next field is asked. Properties keep the order they were written in: that is the
//! order chat asks them.

use crate::error::Error;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// Most fields one form may have.
pub const MAX_FIELDS: usize = 20;

/// A form's schema: its fields in order, and which are required.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormSchema {
    /// Always `object`.
    #[serde(rename = "type", default = "object")]
    pub kind: String,
    /// The fields, in the order they are asked.
    #[serde(serialize_with = "write_fields", deserialize_with = "read_fields")]
    pub properties: Vec<(String, Field)>,
    /// The names of the fields that must be given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
}

fn object() -> String {
    "object".to_owned()
}

/// What a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// Text (with `enum`, one of the choices).
    String,
    /// Any number.
    Number,
    /// A whole number.
    Integer,
    /// Yes or no.
    Boolean,
    /// Several of `items.enum` (a multi-select).
    Array,
}

/// The choices of a multi-select field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Items {
    /// Always `string`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The choices.
    #[serde(rename = "enum")]
    pub choices: Vec<String>,
}

/// One field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Field {
    /// What it holds.
    #[serde(rename = "type")]
    pub kind: FieldType,
    /// Its label (the field's name when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A line of help.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// For strings: `email`, `uri`, `date` or `date-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Shortest text, in characters.
    #[serde(rename = "minLength", default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<usize>,
    /// Longest text, in characters.
    #[serde(rename = "maxLength", default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<usize>,
    /// Smallest number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    /// Largest number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
    /// For strings: the choices.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    /// Labels for the choices, in the same order.
    #[serde(rename = "enumNames", default, skip_serializing_if = "Option::is_none")]
    pub choice_names: Option<Vec<String>>,
    /// For arrays: the choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Items>,
    /// For arrays: fewest choices.
    #[serde(rename = "minItems", default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<usize>,
    /// For arrays: most choices.
    #[serde(rename = "maxItems", default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<usize>,
    /// The value when none is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

fn write_fields<S: Serializer>(fields: &[(String, Field)], out: S) -> Result<S::Ok, S::Error> {
    let mut map = out.serialize_map(Some(fields.len()))?;
    for (name, field) in fields {
        map.serialize_entry(name, field)?;
    }
    map.end()
}

/// Reads `properties` keeping the order they were written in (a JSON map would sort them).
fn read_fields<'de, D: Deserializer<'de>>(input: D) -> Result<Vec<(String, Field)>, D::Error> {
    struct Ordered;
    impl<'de> Visitor<'de> for Ordered {
        type Value = Vec<(String, Field)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of fields")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut fields = Vec::new();
            while let Some(entry) = map.next_entry::<String, Field>()? {
                fields.push(entry);
            }
            Ok(fields)
        }
    }
    input.deserialize_map(Ordered)
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
                _ => match (self.min_length, self.max_length) {
                    (Some(min), Some(max)) => format!("text of {min} to {max} characters"),
                    (None, Some(max)) => format!("text of at most {max} characters"),
                    (Some(min), None) => format!("text of at least {min} characters"),
                    (None, None) => "text".to_owned(),
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
                _ => return Err(format!("\"{text}\" is not {}", self.expects())),
            },
            FieldType::Integer => match text.replace('_', "").parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => return Err(format!("\"{text}\" is not {}", self.expects())),
            },
            FieldType::Number => match text.replace(',', ".").parse::<f64>() {
                Ok(n) if n.is_finite() => Value::from(n),
                _ => return Err(format!("\"{text}\" is not {}", self.expects())),
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
    fn pick(&self, text: &str) -> Result<String, String> {
        let choices = self.choices();
        if let Ok(n) = text.parse::<usize>() {
            if (1..=choices.len()).contains(&n) {
                return Ok(choices[n - 1].clone());
            }
        }
        (0..choices.len())
            .find(|&i| {
                choices[i].eq_ignore_ascii_case(text)
                    || self.choice_label(i).eq_ignore_ascii_case(text)
            })
            .map(|i| choices[i].clone())
            .ok_or_else(|| format!("\"{text}\" is not {}", self.expects()))
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

    fn fit_text(&self, text: &str) -> Result<String, String> {
        let text = text.trim().to_owned();
        let choices = self.choices();
        if !choices.is_empty() {
            return match choices.iter().find(|c| **c == text) {
                Some(choice) => Ok(choice.clone()),
                None => Err(format!("\"{text}\" is not {}", self.expects())),
            };
        }
        let chars = text.chars().count();
        if self.min_length.is_some_and(|min| chars < min)
            || self.max_length.is_some_and(|max| chars > max)
        {
            return Err(format!("expected {}", self.expects()));
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
            Err(format!("\"{text}\" is not {}", self.expects()))
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

impl FormSchema {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
    }

    /// Is field `name` required?
    pub fn is_required(&self, name: &str) -> bool {
        self.required.iter().any(|r| r == name)
    }

    /// The label of field `name`.
    pub fn title<'a>(&'a self, name: &'a str) -> &'a str {
        self.field(name)
            .and_then(|f| f.title.as_deref())
            .unwrap_or(name)
    }

    /// Checks a whole answer: known fields only, each fitting, the required ones present;
    /// defaults fill the optional ones left out.
    pub fn fit(&self, answer: &Map<String, Value>) -> Result<Map<String, Value>, String> {
        if let Some(unknown) = answer.keys().find(|k| self.field(k).is_none()) {
            return Err(format!("the form has no field \"{unknown}\""));
        }
        let mut out = Map::new();
        for (name, field) in &self.properties {
            match answer.get(name).filter(|v| !v.is_null()) {
                Some(value) => {
                    let fitted = field
                        .fit(value)
                        .map_err(|why| format!("{}: {why}", self.title(name)))?;
                    out.insert(name.clone(), fitted);
                }
                None if self.is_required(name) => {
                    return Err(format!("{} is required", self.title(name)));
                }
                None => {
                    if let Some(default) = &field.default {
                        out.insert(name.clone(), default.clone());
                    }
                }
            }
        }
        Ok(out)
    }

    /// Checks the schema itself when a form is asked.
    pub fn check(&self) -> Result<(), Error> {
        let invalid = |reason: String| Error::Invalid {
            field: "form",
            reason,
        };
        if self.kind != "object" {
            return Err(invalid("type must be \"object\"".into()));
        }
        if self.properties.is_empty() || self.properties.len() > MAX_FIELDS {
            return Err(invalid(format!("needs 1 to {MAX_FIELDS} properties")));
        }
        let mut seen: Vec<&str> = Vec::new();
        for (name, field) in &self.properties {
            let ok_name = !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok_name || seen.contains(&name.as_str()) {
                return Err(invalid(format!(
                    "property name \"{name}\" must be 1-64 letters, digits, _ or -, once"
                )));
            }
            seen.push(name);
            let choices = field.choices();
            let needs_choices = field.kind == FieldType::Array;
            if needs_choices && choices.is_empty() {
                return Err(invalid(format!("{name}: a multi-select needs items.enum")));
            }
            if choices.len() > 25
                || choices
                    .iter()
                    .any(|c| c.is_empty() || c.chars().count() > 100)
            {
                return Err(invalid(format!(
                    "{name}: 1 to 25 choices of 1 to 100 characters"
                )));
            }
            if let Some(default) = &field.default {
                field
                    .fit(default)
                    .map_err(|why| invalid(format!("{name}: default: {why}")))?;
            }
        }
        if let Some(unknown) = self.required.iter().find(|r| self.field(r).is_none()) {
            return Err(invalid(format!(
                "required names \"{unknown}\", which is not a property"
            )));
        }
        Ok(())
    }
}

/// One person's form being filled in, in chat: the field asked now, and the values so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    /// The index of the field asked now (the number of fields answered or skipped).
    pub at: usize,
    /// The values given so far.
    pub values: Map<String, Value>,
}
