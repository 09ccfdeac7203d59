//! A modal's input for one form field: the element of the field's type (a select for a choice,
//! checkboxes for several choices or a yes/no, a number input with the bounds, a date picker, an
//! email or URL input, a text input with the length bound), starting at the field's default,
//! which for an approval's edit is the proposed argument (core's `Question::edit_form`): the
//! person changes what should differ and submits the rest as proposed.
//!
//! Apart from the modal's layout because Slack refuses the whole view (`invalid_arguments`) for
//! one bad element, and each element takes its initial value in its own kind: a select's
//! `initial_option` must be one of its options exactly, checkboxes and multi-selects take
//! `initial_options`, a number its text, a date `YYYY-MM-DD`, a text at most its `max_length`. A
//! default that cannot be shown that way is left out: the input starts empty, and an empty
//! optional field still submits as its default (`FormSchema::read_submitted`).

use crate::blocks::OPTION_TEXT_CHARS;
use askbridge_core::form::{Field, FieldType};
use askbridge_core::render;
use serde_json::{Value, json};

/// Slack's limit on a select option's value, in characters.
pub(crate) const OPTION_VALUE_CHARS: usize = 150;
/// Slack's limit on the options of a checkboxes element.
pub(crate) const CHECKBOXES: usize = 10;
/// Slack's limit on a text input's `max_length`.
pub(crate) const INPUT_CHARS: usize = 3000;

/// A plain text object, shortened to Slack's `max` characters.
pub(crate) fn plain(text: &str, max: usize) -> Value {
    json!({"type": "plain_text", "text": render::shorten(text, max)})
}

fn options(field: &Field) -> Vec<Value> {
    // Values are the choices' numbers, which read back as those choices (see `Field::read`),
    // whatever the choices' length.
    (0..field.choices().len())
        .map(|i| {
            json!({"text": plain(field.choice_label(i), OPTION_TEXT_CHARS),
                   "value": (i + 1).to_string()})
        })
        .collect()
}

/// A field's input element, its action id `action`, starting at the field's default.
pub(crate) fn element(field: &Field, action: &str) -> Value {
    let mut element = match field.kind {
        FieldType::Boolean => json!({"type": "checkboxes",
            "options": [{"text": plain("Yes", OPTION_TEXT_CHARS), "value": "yes"}]}),
        FieldType::Array if field.choices().len() <= CHECKBOXES => {
            json!({"type": "checkboxes", "options": options(field)})
        }
        FieldType::Array => json!({"type": "multi_static_select", "options": options(field)}),
        FieldType::String if !field.choices().is_empty() => {
            json!({"type": "static_select", "options": options(field)})
        }
        FieldType::Integer | FieldType::Number => {
            let mut number = json!({"type": "number_input",
                                    "is_decimal_allowed": field.kind == FieldType::Number});
            if let Some(min) = field.minimum {
                number["min_value"] = json!(min.to_string());
            }
            if let Some(max) = field.maximum {
                number["max_value"] = json!(max.to_string());
            }
            number
        }
        FieldType::String => match field.format.as_deref() {
            Some("email") => json!({"type": "email_text_input"}),
            Some("uri") => json!({"type": "url_text_input"}),
            Some("date") => json!({"type": "datepicker"}),
            _ => {
                let longest = field
                    .max_length
                    .unwrap_or(askbridge_core::form::DEFAULT_MAX_LENGTH)
                    .min(INPUT_CHARS);
                json!({"type": "plain_text_input", "max_length": longest,
                       "multiline": longest > 150,
                       "placeholder": plain(&field.expects(), OPTION_VALUE_CHARS)})
            }
        },
    };
    prefill(field, &mut element);
    element["action_id"] = json!(action);
    element
}

/// `element` (made for `field` by the modal, with its `options`) given the field's default as
/// its initial value, where it can carry it.
fn prefill(field: &Field, element: &mut Value) {
    let Some(default) = &field.default else {
        return;
    };
    let option = |value: &Value| -> Option<Value> {
        let at = field
            .choices()
            .iter()
            .position(|c| value.as_str() == Some(c))?;
        element["options"].get(at).cloned()
    };
    match (element["type"].as_str().unwrap_or_default(), field.kind) {
        ("checkboxes", FieldType::Boolean) if default == &Value::Bool(true) => {
            element["initial_options"] = json!([element["options"][0].clone()]);
        }
        ("checkboxes", FieldType::Boolean) => {}
        ("checkboxes" | "multi_static_select", _) => {
            let chosen: Option<Vec<Value>> = default
                .as_array()
                .map(|values| values.iter().filter_map(option).collect());
            if let Some(chosen) = chosen.filter(|c| !c.is_empty()) {
                element["initial_options"] = Value::Array(chosen);
            }
        }
        ("static_select", _) => {
            if let Some(chosen) = option(default) {
                element["initial_option"] = chosen;
            }
        }
        ("number_input", _) if default.is_number() => {
            element["initial_value"] = json!(default.to_string());
        }
        ("datepicker", _) => {
            if let Some(date) = default.as_str().filter(|d| is_date(d)) {
                element["initial_date"] = json!(date);
            }
        }
        (_, FieldType::String) => {
            let longest = element["max_length"].as_u64().unwrap_or(u64::MAX);
            if let Some(text) = default
                .as_str()
                .filter(|t| t.chars().count() as u64 <= longest)
            {
                element["initial_value"] = json!(text);
            }
        }
        _ => {}
    }
}

/// `YYYY-MM-DD`, the only date Slack's datepicker starts at.
fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::form::FormSchema;

    fn field(schema: Value) -> Field {
        let form: FormSchema =
            serde_json::from_value(json!({"type": "object", "properties": {"f": schema}})).unwrap();
        form.properties[0].1.clone()
    }

    fn options(values: &[&str]) -> Value {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| json!({"text": {"type": "plain_text", "text": v}, "value": (i + 1).to_string()}))
            .collect()
    }

    #[test]
    fn each_element_takes_the_default_in_its_own_kind() {
        let choice = field(json!({"type": "string", "enum": ["a", "b"], "default": "b"}));
        let mut select = json!({"type": "static_select", "options": options(&["a", "b"])});
        prefill(&choice, &mut select);
        assert_eq!(select["initial_option"], select["options"][1]);

        let many = field(
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]},
                                "default": ["a", "c"]}),
        );
        let mut boxes = json!({"type": "checkboxes", "options": options(&["a", "b", "c"])});
        prefill(&many, &mut boxes);
        assert_eq!(
            boxes["initial_options"],
            json!([boxes["options"][0], boxes["options"][2]])
        );

        let number = field(json!({"type": "integer", "default": 2}));
        let mut input = json!({"type": "number_input"});
        prefill(&number, &mut input);
        assert_eq!(input["initial_value"], "2");

        let yes = field(json!({"type": "boolean", "default": true}));
        let mut check = json!({"type": "checkboxes", "options": options(&["Yes"])});
        prefill(&yes, &mut check);
        assert_eq!(check["initial_options"], json!([check["options"][0]]));

        let date = field(json!({"type": "string", "format": "date", "default": "2026-12-31"}));
        let mut picker = json!({"type": "datepicker"});
        prefill(&date, &mut picker);
        assert_eq!(picker["initial_date"], "2026-12-31");
    }

    #[test]
    fn a_default_the_element_cannot_carry_is_left_out() {
        let choice = field(json!({"type": "string", "enum": ["a"], "default": "z"}));
        let mut select = json!({"type": "static_select", "options": options(&["a"])});
        prefill(&choice, &mut select);
        assert!(select.get("initial_option").is_none());

        let text = field(json!({"type": "string", "default": "x".repeat(20)}));
        let mut input = json!({"type": "plain_text_input", "max_length": 10});
        prefill(&text, &mut input);
        assert!(input.get("initial_value").is_none());

        let no = field(json!({"type": "boolean", "default": false}));
        let mut check = json!({"type": "checkboxes", "options": options(&["Yes"])});
        prefill(&no, &mut check);
        assert!(check.get("initial_options").is_none());

        let date = field(json!({"type": "string", "format": "date", "default": "tomorrow"}));
        let mut picker = json!({"type": "datepicker"});
        prefill(&date, &mut picker);
        assert!(picker.get("initial_date").is_none());
    }
}
