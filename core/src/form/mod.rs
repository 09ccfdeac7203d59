//! Forms: a question whose answer is an object of typed fields, described by the flat schema MCP
//! elicitation uses (`{"type": "object", "properties": {...}, "required": [...]}` with string,
//! number, integer and boolean fields, enums, multi-select enums, formats, bounds and defaults).
//!
//! Over HTTP and on the ops page a form is answered as one object ([`FormSchema::fit`]). In chat
//! it is filled in one field at a time ([`Draft`]): each value is read from a reply or a tap
//! ([`Field::read`]) and checked at once, so a value that does not fit is answered with why,
//! before the next field is asked. Properties keep the order they were written in: that is the
//! order chat asks them.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

mod check;
mod field;
mod submit;

pub use submit::FieldError;

/// Most fields one form may have.
pub const MAX_FIELDS: usize = 20;
/// Longest text answer to a field whose schema gives no `maxLength`, in characters: the bound
/// of a free-text answer.
pub const DEFAULT_MAX_LENGTH: usize = crate::limits::MAX_ANSWER_CHARS;
/// Largest `maxLength` a schema may give, in characters: the bound of a question's detail.
pub const MAX_MAX_LENGTH: usize = crate::limits::MAX_DETAIL_CHARS;
/// Longest field title or choice (or choice label), in characters.
pub const MAX_TITLE_CHARS: usize = crate::limits::MAX_LABEL_CHARS;
/// Longest field description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Most choices one field may offer.
pub const MAX_CHOICES: usize = 25;
/// The string formats askbridge checks; a schema naming another is refused rather than
/// promising a check that does not happen.
pub const FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

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
}

/// One person's form being filled in, in chat: the field asked now, and the values so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    /// The index of the field asked now (the number of fields answered or skipped).
    pub at: usize,
    /// The values given so far.
    pub values: Map<String, Value>,
    /// For an approval of several actions: the action whose arguments are being edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<usize>,
    /// For an approval: the person tapped Respond, so their next message in the chat is their
    /// response (no fields are being filled).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub responding: bool,
}

impl Draft {
    /// The mark a Respond tap leaves: the sender's next message is the response.
    pub fn responding() -> Draft {
        Draft {
            responding: true,
            ..Draft::default()
        }
    }
}
