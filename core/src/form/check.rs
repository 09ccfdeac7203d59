//! Checking a form's schema when the form is asked: every string in it is one a person reads
//! (titles, descriptions, choices and their labels), so each is held to the text policy and a
//! length; and every field must be one somebody can fill in (bounds that leave no value, choices
//! given twice, formats askbridge does not check). A refusal names the property and the keyword,
//! so the asker can fix the one thing at fault.

use super::{
    DEFAULT_MAX_LENGTH, FORMATS, Field, FieldType, FormSchema, MAX_CHOICES, MAX_DESCRIPTION_CHARS,
    MAX_FIELDS, MAX_MAX_LENGTH, MAX_TITLE_CHARS,
};
use crate::error::Error;
use crate::text::{Lines, unfit};

/// Why a field cannot be asked, as `keyword: reason`.
type Refusal = String;

impl FormSchema {
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
                    "property name \"{}\" must be 1-64 letters, digits, _ or -, once",
                    crate::text::shorten(&crate::text::visible(name), 64)
                )));
            }
            seen.push(name);
            field
                .refusal()
                .map_or(Ok(()), |why| Err(invalid(format!("{name}: {why}"))))?;
        }
        if let Some(unknown) = self.required.iter().find(|r| self.field(r).is_none()) {
            return Err(invalid(format!(
                "required names \"{}\", which is not a property",
                crate::text::shorten(&crate::text::visible(unknown), 64)
            )));
        }
        Ok(())
    }
}

/// `text` held to the text policy and `max` characters, as a refusal naming `keyword`.
fn text_refusal(keyword: &str, text: &str, lines: Lines, max: usize) -> Option<Refusal> {
    unfit(text, lines, (1, max)).map(|why| format!("{keyword} {why}"))
}

impl Field {
    /// Why this field cannot be asked, if it cannot.
    fn refusal(&self) -> Option<Refusal> {
        self.text_refusal()
            .or_else(|| self.keyword_refusal())
            .or_else(|| self.choices_refusal())
            .or_else(|| self.bounds_refusal())
            .or_else(|| {
                let default = self.default.as_ref()?;
                self.fit(default).err().map(|why| format!("default: {why}"))
            })
    }

    /// Titles and descriptions: read by people, so held to the text policy.
    fn text_refusal(&self) -> Option<Refusal> {
        let title = self.title.as_deref();
        let description = self.description.as_deref();
        title
            .and_then(|t| text_refusal("title", t, Lines::One, MAX_TITLE_CHARS))
            .or_else(|| {
                description.and_then(|d| {
                    text_refusal("description", d, Lines::Many, MAX_DESCRIPTION_CHARS)
                })
            })
    }

    /// Keywords that do not apply to the field's type, and formats askbridge does not check.
    fn keyword_refusal(&self) -> Option<Refusal> {
        let string = self.kind == FieldType::String;
        if let Some(format) = &self.format {
            if !string {
                return Some("format applies to string fields only".into());
            }
            if !FORMATS.contains(&format.as_str()) {
                return Some(format!(
                    "format \"{}\" is not one askbridge checks; use one of {}",
                    crate::text::shorten(&crate::text::visible(format), 40),
                    FORMATS.join(", ")
                ));
            }
        }
        if self.choices.is_some() && !string {
            return Some("enum applies to string fields; a multi-select uses items.enum".into());
        }
        if self.items.is_some() != (self.kind == FieldType::Array) {
            return Some("items (with items.enum) goes with type \"array\", and only there".into());
        }
        if let Some(items) = &self.items
            && items.kind != "string"
        {
            return Some("items.type must be \"string\"".into());
        }
        None
    }

    /// The choices and their labels: read by people, given once each, labels one per choice.
    fn choices_refusal(&self) -> Option<Refusal> {
        let choices = self.choices();
        let keyword = if self.kind == FieldType::Array {
            "items.enum"
        } else {
            "enum"
        };
        if self.kind == FieldType::Array && choices.is_empty() {
            return Some("a multi-select needs items.enum".into());
        }
        if choices.len() > MAX_CHOICES || (self.choices.is_some() && choices.is_empty()) {
            return Some(format!("{keyword} needs 1 to {MAX_CHOICES} choices"));
        }
        for (index, choice) in choices.iter().enumerate() {
            if let Some(why) = text_refusal(keyword, choice, Lines::One, MAX_TITLE_CHARS) {
                return Some(why);
            }
            if choices[..index].contains(choice) {
                return Some(format!(
                    "{keyword} gives \"{choice}\" twice; each choice once"
                ));
            }
        }
        let Some(names) = &self.choice_names else {
            return None;
        };
        if names.len() != choices.len() {
            return Some(format!(
                "enumNames has {} labels for {} choices; give one label per choice",
                names.len(),
                choices.len()
            ));
        }
        names
            .iter()
            .find_map(|name| text_refusal("enumNames", name, Lines::One, MAX_TITLE_CHARS))
    }

    /// Bounds that leave some value to give.
    fn bounds_refusal(&self) -> Option<Refusal> {
        if let (Some(min), Some(max)) = (self.minimum, self.maximum) {
            let empty = match self.kind {
                FieldType::Integer => min.ceil() > max.floor(),
                _ => min > max,
            };
            if empty {
                return Some(format!(
                    "minimum {min} and maximum {max} leave no value to give"
                ));
            }
        }
        if let Some(max) = self.max_length
            && max > MAX_MAX_LENGTH
        {
            return Some(format!(
                "maxLength {max} is over the limit of {MAX_MAX_LENGTH} characters \
                 (without maxLength, answers may be {DEFAULT_MAX_LENGTH})"
            ));
        }
        let longest = self.max_length.unwrap_or(DEFAULT_MAX_LENGTH);
        if let Some(min) = self.min_length
            && min > longest
        {
            return Some(format!(
                "minLength {min} is more than the longest answer allowed ({longest} characters)"
            ));
        }
        let choices = self.choices().len();
        let most = self.max_items.unwrap_or(choices).min(choices);
        if let Some(min) = self.min_items
            && min > most
        {
            return Some(format!(
                "minItems {min} is more than can be chosen ({most}: the choices, or maxItems)"
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn schema(field: Value) -> FormSchema {
        serde_json::from_value(json!({"type": "object", "properties": {"f": field}})).unwrap()
    }

    fn refusal(field: Value) -> Option<String> {
        match schema(field).check() {
            Ok(()) => None,
            Err(Error::Invalid { reason, .. }) => Some(reason),
            Err(other) => panic!("{other}"),
        }
    }

    #[test]
    fn fields_nobody_can_fill_are_refused_by_keyword() {
        for (field, keyword) in [
            (
                json!({"type": "number", "minimum": 2, "maximum": 1}),
                "minimum",
            ),
            (
                json!({"type": "integer", "minimum": 1.2, "maximum": 1.8}),
                "minimum",
            ),
            (
                json!({"type": "string", "minLength": 9, "maxLength": 8}),
                "minLength",
            ),
            (json!({"type": "string", "minLength": 4001}), "minLength"),
            (json!({"type": "string", "maxLength": 8001}), "maxLength"),
            (
                json!({"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": 2}),
                "minItems",
            ),
            (json!({"type": "string", "enum": ["a", "b", "a"]}), "twice"),
            (json!({"type": "string", "enum": []}), "enum"),
            (
                json!({"type": "string", "enum": ["a"], "enumNames": ["A", "B"]}),
                "enumNames",
            ),
            (json!({"type": "string", "format": "regex"}), "format"),
            (json!({"type": "boolean", "enum": ["a"]}), "enum"),
            (
                json!({"type": "string", "items": {"type": "string", "enum": ["a"]}}),
                "items",
            ),
            (json!({"type": "string", "title": "a\u{2029}b"}), "title"),
            (
                json!({"type": "string", "description": "\u{E0020}\u{E0020}"}),
                "description",
            ),
        ] {
            let why = refusal(field.clone()).unwrap_or_else(|| panic!("{field} was accepted"));
            assert!(
                why.starts_with("f: ") && why.contains(keyword),
                "{field}: {why}"
            );
        }
        for field in [
            json!({"type": "integer", "minimum": 1, "maximum": 1}),
            json!({"type": "string", "minLength": 8, "maxLength": 8, "description": "two\nlines"}),
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 2}),
            json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"], "format": "email"}),
        ] {
            assert_eq!(refusal(field.clone()), None, "{field}");
        }
    }

    #[test]
    fn text_answers_follow_the_free_text_rules_and_a_default_bound() {
        let form = schema(json!({"type": "string"}));
        let field = form.field("f").unwrap();
        assert!(field.fit(&json!("a\nb\tc")).is_ok());
        for bad in ["\u{1b}[2J", "a\rb", "\u{202E}x", "\u{3164}"] {
            assert!(field.fit(&json!(bad)).is_err(), "{bad:?}");
        }
        assert!(field.fit(&json!("x".repeat(DEFAULT_MAX_LENGTH))).is_ok());
        let why = field
            .fit(&json!("x".repeat(DEFAULT_MAX_LENGTH + 1)))
            .unwrap_err();
        assert!(why.contains("at most 4000"), "{why}");
        let email = schema(json!({"type": "string", "format": "email"}));
        let why = email
            .field("f")
            .unwrap()
            .fit(&json!("y".repeat(3000)))
            .unwrap_err();
        assert!(
            why.len() < 200,
            "a refusal does not repeat a long value: {why}"
        );
    }
}
