//! What a person may decide about an approval, and the one place that says whether a decision
//! is allowed and whether edited arguments may run.
//!
//! LangChain's human-in-the-loop middleware (what most Python agents use) offers approve, edit
//! (run it with changed arguments), reject with feedback and respond (the person's text becomes
//! the tool's result); askbridge adds "always" (a rule). The asker names the [`Decision`]s a
//! person may choose (`allowed`; by default once, always and reject, as before), and every
//! surface offers exactly those: a decision outside them, typed or posted, is refused here.
//!
//! Edited arguments are checked against the approval's `args_schema` when it is askbridge's
//! flat form schema ([`crate::form`]: the same checker as a form's answer, and the same fields
//! filled one by one in chat); otherwise (no schema, a richer JSON Schema, arguments that are
//! not an object) the new value must have the proposed value's JSON types, key for key.
//! A refusal names the argument at fault ([`Error::Argument`]).

use crate::Error;
use crate::approval::Action;
use crate::form::FormSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One decision a person may make on an approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Allow this once.
    Once,
    /// Allow, and create a rule (for the session, or everywhere).
    Always,
    /// Allow with changed arguments.
    Edit,
    /// Reject, with optional feedback.
    Reject,
    /// Answer in the tool's place: the person's text is its result.
    Respond,
}

/// The decisions an approval offers when its asker names none: today's behaviour.
pub const DEFAULT_DECISIONS: [Decision; 3] = [Decision::Once, Decision::Always, Decision::Reject];

/// Every decision, in the order surfaces offer them.
pub const ALL_DECISIONS: [Decision; 5] = [
    Decision::Once,
    Decision::Always,
    Decision::Edit,
    Decision::Respond,
    Decision::Reject,
];

impl Decision {
    /// Its word (`once`, `always`, `edit`, `reject`, `respond`).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Once => "once",
            Decision::Always => "always",
            Decision::Edit => "edit",
            Decision::Reject => "reject",
            Decision::Respond => "respond",
        }
    }

    /// True for edit and respond: the person's own words (the arguments to run with, the
    /// tool's result) come with the decision, so it is one person's answer and is typed, never
    /// a bare word or a link.
    pub fn carries_words(self) -> bool {
        matches!(self, Decision::Edit | Decision::Respond)
    }

    /// Reads a word, in any case.
    pub fn parse(word: &str) -> Option<Decision> {
        ALL_DECISIONS
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(word.trim()))
    }

    /// Reads a comma-separated list (`once,edit,reject`), naming a word that is none.
    pub fn parse_list(text: &str) -> Result<Vec<Decision>, String> {
        text.split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(|w| {
                Decision::parse(w).ok_or_else(|| {
                    format!("\"{w}\" is not a decision; use once, always, edit, reject or respond")
                })
            })
            .collect()
    }
}

/// The words of `decisions`, as "once, edit or reject".
pub fn words(decisions: &[Decision]) -> String {
    let words: Vec<&str> = decisions.iter().map(|d| d.as_str()).collect();
    words_of(&words)
}

/// `parts` joined as "a, b or c".
pub fn words_of(words: &[&str]) -> String {
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => words.join(""),
    }
}

/// Checks an approval request's `allowed` and `args_schema` when it is asked. Returns the
/// decisions to store (in the order surfaces offer them).
pub fn check_request(
    approval: bool,
    allowed: Option<&[Decision]>,
    args_schema: Option<&Value>,
    action: Option<&Action>,
    quorum: bool,
) -> Result<Vec<Decision>, Error> {
    let invalid = |field: &'static str, reason: &str| Error::Invalid {
        field,
        reason: reason.to_owned(),
    };
    if !approval {
        if allowed.is_some() {
            return Err(invalid("allowed", "only approvals take allowed decisions"));
        }
        if args_schema.is_some() {
            return Err(invalid("args_schema", "only approvals take an args_schema"));
        }
        return Ok(Vec::new());
    }
    let given = allowed.unwrap_or(&DEFAULT_DECISIONS);
    let decisions: Vec<Decision> = ALL_DECISIONS
        .into_iter()
        .filter(|d| given.contains(d))
        .collect();
    if decisions.is_empty() {
        return Err(invalid(
            "allowed",
            "name at least one of once, always, edit, reject, respond",
        ));
    }
    if quorum && decisions.iter().any(|d| d.carries_words()) {
        return Err(invalid(
            "allowed",
            "edit and respond are one person's answer, so an approval with a quorum cannot offer them",
        ));
    }
    if let (Some(schema), Some(action)) = (args_schema, action) {
        check_schema(schema, action)?;
    }
    Ok(decisions)
}

/// An `args_schema` must be a JSON object; when it is the flat form schema, it must be one
/// somebody can fill in, and the proposed arguments must fit it (so "keep the proposed value"
/// is always a value that may run).
fn check_schema(schema: &Value, action: &Action) -> Result<(), Error> {
    let invalid = |reason: String| Error::Invalid {
        field: "args_schema",
        reason,
    };
    if !schema.is_object() {
        return Err(invalid("must be a JSON Schema object".into()));
    }
    if serde_json::to_vec(schema).map_or(0, |v| v.len()) > 32_000 {
        return Err(invalid("is over 32 kB".into()));
    }
    let Some(form) = flat(schema) else {
        return Ok(());
    };
    form.check().map_err(|error| match error {
        Error::Invalid { reason, .. } => invalid(reason),
        other => other,
    })?;
    match &action.args {
        Value::Object(args) => fit_fields(&form, args)
            .map(|_| ())
            .map_err(|e| invalid(format!("the proposed arguments do not fit it: {e}"))),
        _ => Ok(()),
    }
}

/// The schema as askbridge's flat form schema, when it is one.
pub(crate) fn flat(schema: &Value) -> Option<FormSchema> {
    serde_json::from_value(schema.clone()).ok()
}

/// `given` checked field by field against `form`, naming the argument at fault.
pub(crate) fn fit_fields(
    form: &FormSchema,
    given: &Map<String, Value>,
) -> Result<Map<String, Value>, Error> {
    if let Some(unknown) = given.keys().find(|k| form.field(k).is_none()) {
        return Err(argument(
            &format!(
                "args.{}",
                crate::text::shorten(&crate::text::visible(unknown), 64)
            ),
            "is not one of the tool's arguments",
        ));
    }
    let mut out = Map::new();
    for (name, field) in &form.properties {
        match given.get(name) {
            Some(value) => {
                let fitted = field
                    .fit(value)
                    .map_err(|why| argument(&format!("args.{name}"), &why))?;
                out.insert(name.clone(), fitted);
            }
            None if form.is_required(name) => {
                return Err(argument(&format!("args.{name}"), "is required"));
            }
            None => {}
        }
    }
    Ok(out)
}

/// Refuses `new` unless it has `proposed`'s JSON type, recursively: an object the same keys,
/// an array items of a type among the proposed items'. A proposed `null` takes anything.
pub(crate) fn same_types(proposed: &Value, new: &Value, at: &str) -> Result<(), Error> {
    match (proposed, new) {
        (Value::Null, _) => Ok(()),
        (Value::Object(was), Value::Object(now)) => {
            if let Some(key) = now.keys().find(|k| !was.contains_key(*k)) {
                return Err(argument(
                    &format!("{at}.{key}"),
                    "was not proposed; an edit changes values, not names",
                ));
            }
            for (key, value) in was {
                let Some(changed) = now.get(key) else {
                    return Err(argument(&format!("{at}.{key}"), "is missing"));
                };
                same_types(value, changed, &format!("{at}.{key}"))?;
            }
            Ok(())
        }
        (Value::Array(was), Value::Array(now)) => {
            for (index, item) in now.iter().enumerate() {
                let at = format!("{at}[{index}]");
                let fits = was.is_empty() || was.iter().any(|w| same_types(w, item, &at).is_ok());
                if !fits {
                    let first = was.iter().find(|w| type_name(w) == type_name(item));
                    return match first {
                        Some(w) => same_types(w, item, &at),
                        None => Err(argument(
                            &at,
                            &format!("expected {}, got {}", type_name(&was[0]), type_name(item)),
                        )),
                    };
                }
            }
            Ok(())
        }
        _ if type_name(proposed) == type_name(new) => Ok(()),
        _ => Err(argument(
            at,
            &format!("expected {}, got {}", type_name(proposed), type_name(new)),
        )),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn argument(field: &str, reason: &str) -> Error {
    Error::Argument {
        field: field.to_owned(),
        reason: reason.to_owned(),
    }
}
