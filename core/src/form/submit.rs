//! A form answered whole from inputs submitted field by field (a Slack modal's input blocks, a
//! web form's fields): the same answer the form's JSON typed in one reply would be, with what is
//! wrong said field by field, so a surface can show each error on its field.
//!
//! Each field's entries are read as a chat reply to that field is read ([`super::Field::read`]: a
//! choice by value, label or number, yes/no, numbers), so a modal and a typed reply cannot differ
//! on what a value means. The answer still goes through the question's own check when claimed.

use super::{FieldType, FormSchema};
use serde_json::{Map, Value};

/// A field's name and what is wrong with its value.
pub type FieldError = (String, String);

impl FormSchema {
    /// The whole answer from `submitted` (each field's name and its entries: one for a text,
    /// number or single choice, any number for a multi-select, none when left empty), with
    /// defaults filled for optional fields left empty; or, for each field whose entries do not
    /// fit (or that is required and empty), its name and why, in the form's order.
    pub fn read_submitted(
        &self,
        submitted: &[(String, Vec<String>)],
    ) -> Result<Map<String, Value>, Vec<FieldError>> {
        let mut answer = Map::new();
        let mut errors = Vec::new();
        if let Some((unknown, _)) = submitted.iter().find(|(n, _)| self.field(n).is_none()) {
            errors.push((
                unknown.clone(),
                format!("the form has no field \"{unknown}\""),
            ));
        }
        for (name, field) in &self.properties {
            let entries: Vec<&str> = submitted
                .iter()
                .filter(|(n, _)| n == name)
                .flat_map(|(_, entries)| entries.iter().map(|e| e.trim()))
                .filter(|e| !e.is_empty())
                .collect();
            let read = match (field.kind, entries.as_slice()) {
                (_, []) if self.is_required(name) => Err("this field is required".to_owned()),
                (_, []) => continue,
                (FieldType::Array, entries) => entries
                    .iter()
                    .map(|entry| field.pick(entry).map(Value::String))
                    .collect::<Result<Vec<_>, _>>()
                    .and_then(|picked| field.fit(&Value::Array(picked))),
                (_, [one]) => field.read(one),
                (_, _) => Err(format!("one value only: {}", field.expects())),
            };
            match read {
                Ok(value) => {
                    answer.insert(name.clone(), value);
                }
                Err(why) => errors.push((name.clone(), why)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        // Defaults for the optional fields left empty, and the whole-answer check.
        self.fit(&answer).map_err(|why| {
            let first = self.properties.first().map(|(n, _)| n.clone());
            vec![(first.unwrap_or_default(), why)]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> FormSchema {
        serde_json::from_value(json!({"type": "object", "properties": {
            "env": {"type": "string", "enum": ["staging", "production"], "enumNames": ["Staging", "Production"]},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "notify": {"type": "array", "items": {"type": "string", "enum": ["ops", "dev", "qa"]}},
            "by": {"type": "string", "format": "date", "default": "2026-12-31"}},
          "required": ["env", "replicas"]}))
        .unwrap()
    }

    fn entries(pairs: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        pairs
            .iter()
            .map(|(n, e)| (n.to_string(), e.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn entries_are_read_as_replies_and_defaults_filled() {
        let answer = form()
            .read_submitted(&entries(&[
                ("env", &["2"]),
                ("replicas", &[" 3 "]),
                ("notify", &["ops", "3"]),
                ("by", &[]),
            ]))
            .unwrap();
        assert_eq!(
            Value::Object(answer),
            json!({"env": "production", "replicas": 3, "notify": ["ops", "qa"], "by": "2026-12-31"})
        );
    }

    #[test]
    fn each_wrong_field_says_why_on_its_own() {
        let errors = form()
            .read_submitted(&entries(&[
                ("env", &[]),
                ("replicas", &["99"]),
                ("notify", &["ops"]),
                ("by", &["soon"]),
            ]))
            .unwrap_err();
        let names: Vec<&str> = errors.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["env", "replicas", "by"]);
        assert_eq!(errors[0].1, "this field is required");
        assert!(errors[1].1.contains("out of range"), "{}", errors[1].1);
        assert!(
            errors[2].1.contains("a date (YYYY-MM-DD)"),
            "{}",
            errors[2].1
        );
        let unknown = form()
            .read_submitted(&entries(&[
                ("env", &["1"]),
                ("replicas", &["1"]),
                ("x", &["1"]),
            ]))
            .unwrap_err();
        assert_eq!(unknown[0].0, "x");
    }
}
