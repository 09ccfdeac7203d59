//! A form in chat: the words and buttons of each field as it is asked, one at a time.
//!
//! The question's own message asks the first field (so a tap there starts filling it in); each
//! reply asks the next. Buttons carry plain commands like every button: `/answer <id> <n>` picks
//! choice `n` of the field asked now, `/skip <id>` leaves an optional field out, `/back <id>`
//! returns to the field before.

use crate::Error;
use crate::button::{Button, ButtonRole};
use crate::form::{Draft, FieldType, FormSchema};
use crate::id::IdRef;
use crate::question::Question;

/// The line naming field `at` of `form` and what it expects.
pub fn field_line(question: &Question, form: &FormSchema, at: usize) -> String {
    let Some((name, field)) = form.properties.get(at) else {
        return String::new();
    };
    let mut line = format!(
        "📝 Field {} of {}: {}",
        at + 1,
        form.properties.len(),
        form.title(name)
    );
    // An approval's arguments being edited: each default is the proposed value, kept by /skip.
    let editing = question.kind == crate::question::Kind::Approval;
    let kept = field.default.as_ref().map(|value| match value {
        serde_json::Value::String(text) => crate::text::visible(text).into_owned(),
        other => other.to_string(),
    });
    let skip = match (&kept, editing) {
        (Some(value), true) => {
            line.push_str(&format!(
                " (proposed: {})",
                crate::text::shorten(value, 200)
            ));
            "to keep the proposed value"
        }
        _ if !form.is_required(name) => {
            line.push_str(" (optional)");
            "to leave it out"
        }
        _ => "",
    };
    if let Some(description) = &field.description {
        line.push_str(&format!("\n{description}"));
    }
    line.push_str(&format!("\nReply with {}.", field.expects()));
    let mut moves = Vec::new();
    if !form.is_required(name) {
        moves.push(format!("/skip {} {skip}", question.id));
    }
    if at > 0 {
        moves.push(format!("/back {} for the field before", question.id));
    }
    if !moves.is_empty() {
        line.push_str(&format!(" Or {}.", moves.join(", or ")));
    }
    line
}

/// The buttons for field `at`: its choices (yes/no for a boolean), then Skip and Back where
/// they apply.
pub fn field_buttons(question: &Question, form: &FormSchema, at: usize) -> Vec<Button> {
    let Some((name, field)) = form.properties.get(at) else {
        return Vec::new();
    };
    let id = &question.id;
    let mut buttons = Vec::new();
    match field.kind {
        FieldType::Boolean => {
            buttons.push(Button::new(
                "Yes",
                format!("/answer {id} yes"),
                ButtonRole::Accept,
            ));
            buttons.push(Button::new(
                "No",
                format!("/answer {id} no"),
                ButtonRole::Refuse,
            ));
        }
        FieldType::String if !field.choices().is_empty() => {
            for index in 0..field.choices().len() {
                let payload = format!("/answer {id} {}", index + 1);
                let role = ButtonRole::Choice { selected: false };
                buttons.push(
                    Button::new(field.choice_label(index), payload, role).for_option(index + 1),
                );
            }
        }
        _ => {}
    }
    if !form.is_required(name) {
        // Editing an approval's arguments, skipping a field keeps its proposed value.
        let editing = question.kind == crate::question::Kind::Approval && field.default.is_some();
        buttons.push(Button::new(
            if editing { "Keep" } else { "Skip" },
            format!("/skip {id}"),
            ButtonRole::Refuse,
        ));
    }
    if at > 0 {
        buttons.push(Button::new(
            "Back",
            format!("/back {id}"),
            ButtonRole::Refuse,
        ));
    }
    buttons
}

/// What a person's draft holds so far, one line per field given ("Environment: staging").
pub fn draft_summary(form: &FormSchema, draft: &Draft) -> String {
    form.properties
        .iter()
        .filter_map(|(name, _)| {
            draft.values.get(name).map(|value| match value {
                serde_json::Value::String(text) => format!("{}: {text}", form.title(name)),
                other => format!("{}: {other}", form.title(name)),
            })
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `/back [id]` or `/skip [id]`: a move while filling a form in chat. The id may be left out
/// when one form is open in the chat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepCommand {
    /// The form.
    pub id: Option<IdRef>,
    /// Back to the field before (else skip the field asked now).
    pub back: bool,
}

impl StepCommand {
    /// Reads the words after `/back` or `/skip`.
    pub fn parse(args: &str, back: bool) -> Result<Self, Error> {
        let id = match args.split_whitespace().next() {
            Some(word) => Some(IdRef::parse(word)?),
            None => None,
        };
        Ok(StepCommand { id, back })
    }
}

impl std::fmt::Display for StepCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.back { "/back" } else { "/skip" })?;
        match &self.id {
            Some(id) => write!(f, " {id}"),
            None => Ok(()),
        }
    }
}

/// A move while filling a form in chat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A reply or a tap: the value of the field asked now.
    Value(String),
    /// Back to the field before.
    Back,
    /// Leave the (optional) field asked now out.
    Skip,
}

/// What a [`Step`] did to a draft.
#[derive(Clone, Debug, PartialEq)]
pub enum Stepped {
    /// The draft moved on (or back): ask the field it is at now. `noted` says what was kept.
    Next {
        /// "Environment: staging", "Notes: skipped", or "Replicas: 2 (kept)" (a default).
        noted: Option<String>,
    },
    /// Nothing changed, and why (a value that does not fit, a required field skipped).
    Refused(String),
    /// Every field is done: the form's answer.
    Complete(serde_json::Map<String, serde_json::Value>),
}

/// Applies `step` to `draft` (pure: the caller stores the draft).
pub fn step(form: &FormSchema, draft: &mut Draft, step: Step) -> Stepped {
    let Some((name, field)) = form.properties.get(draft.at) else {
        return complete(form, draft);
    };
    let title = form.title(name).to_owned();
    let noted = match step {
        Step::Value(text) => match field.read(&text) {
            Ok(value) => {
                let shown = match &value {
                    serde_json::Value::String(text) => text.clone(),
                    serde_json::Value::Bool(yes) => if *yes { "yes" } else { "no" }.to_owned(),
                    other => other.to_string(),
                };
                draft.values.insert(name.clone(), value);
                format!("{title}: {shown}")
            }
            Err(why) => return Stepped::Refused(format!("That does not fit {title}: {why}.")),
        },
        Step::Skip if form.is_required(name) => {
            return Stepped::Refused(format!("{title} is required; it cannot be skipped."));
        }
        Step::Skip => {
            draft.values.remove(name);
            // A field with a default takes it (an edited approval's: the proposed value).
            match &field.default {
                Some(serde_json::Value::String(text)) => {
                    format!("{title}: {} (kept)", crate::text::visible(text))
                }
                Some(other) => format!("{title}: {other} (kept)"),
                None => format!("{title}: skipped"),
            }
        }
        Step::Back if draft.at == 0 => {
            return Stepped::Refused("This is the first field; there is none before it.".into());
        }
        Step::Back => {
            draft.at -= 1;
            return Stepped::Next { noted: None };
        }
    };
    draft.at += 1;
    if draft.at >= form.properties.len() {
        return complete(form, draft);
    }
    Stepped::Next { noted: Some(noted) }
}

fn complete(form: &FormSchema, draft: &mut Draft) -> Stepped {
    match form.fit(&draft.values) {
        Ok(values) => Stepped::Complete(values),
        Err(why) => {
            draft.at = form.properties.len().saturating_sub(1);
            Stepped::Refused(why)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> FormSchema {
        serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "env": {"type": "string", "title": "Environment", "enum": ["staging", "production"]},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "notify": {"type": "boolean", "default": false}
            },
            "required": ["env", "replicas"]
        }))
        .unwrap()
    }

    #[test]
    fn fields_keep_their_order_and_a_form_fills_one_field_at_a_time() {
        let form = form();
        let names: Vec<&str> = form.properties.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["env", "replicas", "notify"],
            "written order, not sorted"
        );
        let mut draft = Draft::default();
        assert!(matches!(
            step(&form, &mut draft, Step::Back),
            Stepped::Refused(_)
        ));
        assert!(
            matches!(step(&form, &mut draft, Step::Skip), Stepped::Refused(why) if why.contains("required"))
        );
        assert_eq!(
            step(&form, &mut draft, Step::Value("2".into())),
            Stepped::Next {
                noted: Some("Environment: production".into())
            },
            "a choice by its number"
        );
        let refused = step(&form, &mut draft, Step::Value("eleven".into()));
        assert!(
            matches!(&refused, Stepped::Refused(why) if why.contains("whole number from 1 to 10")),
            "{refused:?}"
        );
        assert_eq!(draft.at, 1, "a value that does not fit changes nothing");
        assert!(matches!(
            step(&form, &mut draft, Step::Value("11".into())),
            Stepped::Refused(_)
        ));
        step(&form, &mut draft, Step::Value("3".into()));
        assert_eq!(
            step(&form, &mut draft, Step::Back),
            Stepped::Next { noted: None }
        );
        step(&form, &mut draft, Step::Value("4".into()));
        match step(&form, &mut draft, Step::Skip) {
            Stepped::Complete(values) => assert_eq!(
                serde_json::Value::Object(values),
                json!({"env": "production", "replicas": 4, "notify": false}),
                "the skipped field takes its default"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn typed_values_are_read_by_their_field() {
        let form = form();
        let field = |name: &str| form.field(name).unwrap().clone();
        assert_eq!(field("notify").read("Yes").unwrap(), json!(true));
        assert!(field("notify").read("perhaps").is_err());
        assert_eq!(field("env").read("STAGING").unwrap(), json!("staging"));
        assert!(field("env").read("qa").is_err());
        let email: crate::form::Field =
            serde_json::from_value(json!({"type": "string", "format": "email"})).unwrap();
        assert!(email.read("a@b.io").is_ok());
        assert!(email.read("not an email").is_err());
        let date: crate::form::Field =
            serde_json::from_value(json!({"type": "string", "format": "date"})).unwrap();
        assert!(date.read("2026-12-04").is_ok());
        assert!(date.read("2026-13-04").is_err());
        let many: crate::form::Field = serde_json::from_value(
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2}),
        )
        .unwrap();
        assert_eq!(many.read("a, 3").unwrap(), json!(["a", "c"]));
        assert!(many.read("a,b,c").is_err(), "at most two");
        let bad: FormSchema = serde_json::from_value(
            json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]}),
        )
        .unwrap();
        assert!(bad.check().is_err());
    }
}
