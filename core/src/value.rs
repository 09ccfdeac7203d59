//! The value of an answer. A leaf module (it imports nothing from the crate), so approvals,
//! questions and journals can all name answers without importing one another.

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// An answer's value: a boolean for confirm, a list for multi, text otherwise. Written as the
/// JSON value it holds (see the `Deserialize` impl below for reading).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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

/// Reads the JSON value for what it is: a boolean, a list of texts, a text or an object. Why not
/// `#[serde(untagged)]`, which reads the same values: it buffered every answer into serde's
/// `Content` and tried the variants in turn, and a text answer failed as a boolean and as a list
/// first, each failure an error with a formatted message. Answers are read with every request
/// that answers and every run's journal (callgrind of `--runs`, 2026-12-07).
impl<'de> Deserialize<'de> for Answer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnswerVisitor)
    }
}

struct AnswerVisitor;

impl<'de> Visitor<'de> for AnswerVisitor {
    type Value = Answer;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an answer: true or false, a text, a list of texts, or a form's fields")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Answer, E> {
        Ok(Answer::Bool(value))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Answer, E> {
        Ok(Answer::Text(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Answer, E> {
        Ok(Answer::Text(text))
    }

    // A list and a form are read by their own types' `Deserialize`, handed what is left.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Answer, A::Error> {
        Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Answer::List)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Answer, A::Error> {
        serde_json::Map::deserialize(de::value::MapAccessDeserializer::new(map)).map(Answer::Object)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_reads_as_the_value_it_was_written_as() {
        let answers = [
            Answer::Bool(true),
            Answer::Text("date-fns".into()),
            Answer::Text(String::new()),
            Answer::List(vec!["a".into(), "b".into()]),
            Answer::List(Vec::new()),
            Answer::Object(
                json!({"name": "x", "count": 2})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        ];
        for answer in answers {
            let text = serde_json::to_string(&answer).unwrap();
            assert_eq!(serde_json::from_str::<Answer>(&text).unwrap(), answer);
            // From a tree, and from inside what serde buffers first (an internally tagged
            // enum, as a run's journal is).
            let value = serde_json::to_value(&answer).unwrap();
            assert_eq!(serde_json::from_value::<Answer>(value).unwrap(), answer);
            #[derive(Debug, Deserialize, PartialEq)]
            #[serde(tag = "type")]
            enum Tagged {
                Answered { answer: Option<Answer> },
            }
            let json = format!(r#"{{"type": "Answered", "answer": {text}}}"#);
            let Tagged::Answered { answer: read } = serde_json::from_str(&json).unwrap();
            assert_eq!(read, Some(answer));
        }
    }

    #[test]
    fn a_value_that_is_no_answer_is_refused_saying_what_an_answer_is() {
        for bad in ["5", "null", "1.5"] {
            let error = serde_json::from_str::<Answer>(bad).unwrap_err().to_string();
            assert!(
                error.contains("expected an answer: true or false"),
                "{bad}: {error}"
            );
        }
        // A list holds texts only.
        let error = serde_json::from_str::<Answer>(r#"["a", 1]"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("expected a string"), "{error}");
    }
}
