//! Slack modals: an approval rejected with a reason, an approval's arguments edited, and a form
//! answered whole.
//!
//! Buttons stay commands (`blocks.rs` draws them): "Reject with a reason…" carries the Reject button's own command and
//! the modal only adds the reason typed into it; "Fill in the form…" carries `/show <id>`. A
//! click on either opens a modal at once with the interaction's `trigger_id` (valid for 3 s),
//! so nothing is read but the question. The modal's submission (`view_submission`) becomes what
//! a typed reply would be — the command plus the reason, or `/answer <id> <the form's JSON>`,
//! the JSON made by core's [`askbridge_core::form::FormSchema::read_submitted`] from the inputs
//! — and takes the one reply path of the [`Inbox`]. A value that does not fit is answered on its
//! field (`response_action: errors`, keyed by block id); a refusal (a stranger, a question that
//! ended) replaces the modal with the line saying why. Filling a form field by field in the
//! thread stays available: the message keeps its field buttons.
//!
//! An approval's Edit button, when its `args_schema` is flat, opens the same inputs for the
//! arguments, prefilled with the proposed values (core's `Question::edit_form`), and carries its
//! own command (`/answer <id> edit #digest`): the submission is that command with the arguments'
//! JSON, the typed edit, checked by the same grammar. Without a flat schema the button stays a
//! command and the arguments are typed as JSON.
//!
//! Slack refuses a whole view that breaks a limit, so they are kept here, and the fake Slack
//! checks them: a title, submit and close text of at most 24 characters, at most 100 blocks, a
//! label or hint of at most 2,000, a placeholder of at most 150, an option's value of at most
//! 150, at most 10 checkboxes, a text input's `max_length` of at most 3,000, `private_metadata`
//! of at most 3,000.

use crate::blocks::{EDIT_ACTION, REASON_ACTION, SECTION_CHARS, escaped_within};
use crate::inputs::{INPUT_CHARS, plain};
use crate::sending::SlackChannel;
use crate::{SURFACE, Slack};
use askbridge_core::command::{Command, CommandLine};
use askbridge_core::form::{FieldType, FormSchema};
use askbridge_core::render;
use askbridge_core::{IdRef, Identity, Inbound, Inbox, Millis, Question, QuestionId, Target, Tone};
use serde_json::{Map, Value, json};
use slack_morphism::prelude::*;
use std::sync::Arc;

/// The callback id of the reason modal.
pub const REASON_CALLBACK: &str = "askbridge-reason";
/// The callback id of the form modal.
pub const FORM_CALLBACK: &str = "askbridge-form";
/// The callback id of the modal editing an approval's arguments.
pub const EDIT_CALLBACK: &str = "askbridge-edit";
/// Slack's limit on a view's title, submit and close texts, in characters.
pub const TITLE_CHARS: usize = 24;
/// Slack's limit on a modal's blocks.
pub const VIEW_BLOCKS: usize = 100;
/// Slack's limit on an input's label and hint, in characters.
pub const LABEL_CHARS: usize = 2000;
/// The block and action id of the reason's input.
const REASON: &str = "reason";
/// The action id of every form field's input (its block id tells the fields apart).
const VALUE: &str = "value";

/// The block id of field number `index`: field names may be anything, indexes fit any limit.
pub fn field_block(index: usize) -> String {
    format!("field-{index}")
}

/// The question a modal opener's command names.
pub fn opened_question(command: &str) -> Option<QuestionId> {
    let id = match CommandLine::parse(command).ok()??.command {
        Command::Answer(answer) => answer.id,
        Command::Show(show) => show.id,
        _ => return None,
    };
    match id {
        IdRef::Full(id) => Some(id),
        IdRef::Prefix(_) => None,
    }
}

/// What a modal carries back in its `private_metadata`: where it was opened, for which
/// question, and (for a reason) the command the reason completes.
pub fn metadata(channel: &str, question: &QuestionId, command: Option<&str>) -> String {
    json!({"channel": channel, "question": question, "command": command}).to_string()
}

fn modal(callback: &str, title: &str, submit: &str, meta: String, blocks: Vec<Value>) -> Value {
    json!({
        "type": "modal", "callback_id": callback, "private_metadata": meta,
        "title": plain(title, TITLE_CHARS), "submit": plain(submit, TITLE_CHARS),
        "close": plain("Cancel", TITLE_CHARS), "blocks": blocks,
    })
}

fn prompt_section(question: &Question) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn",
           "text": escaped_within(&format!("*{}*", question.prompt), SECTION_CHARS)}})
}

/// The reason modal: the question, then the reason's input.
pub fn reason_view(question: &Question, meta: String) -> Value {
    let input = json!({
        "type": "input", "block_id": REASON, "label": plain("Reason", LABEL_CHARS),
        "element": {"type": "plain_text_input", "action_id": REASON, "multiline": true,
                    "max_length": INPUT_CHARS},
    });
    let blocks = vec![prompt_section(question), input];
    modal(REASON_CALLBACK, "Reject", "Reject", meta, blocks)
}

/// The form modal: the question, then one input block per field, of the field's type.
pub fn form_view(question: &Question, form: &FormSchema, meta: String) -> Value {
    modal(
        FORM_CALLBACK,
        "Answer",
        "Submit",
        meta,
        inputs(question, form),
    )
}

/// The modal editing an approval's arguments: its edit form's inputs, each prefilled with the
/// proposed value; submitting approves the action with these arguments.
pub fn edit_view(question: &Question, form: &FormSchema, meta: String) -> Value {
    let blocks = inputs(question, form);
    modal(
        EDIT_CALLBACK,
        "Edit before approving",
        "Approve",
        meta,
        blocks,
    )
}

/// The question, then one input block per field of `form`, of the field's type.
fn inputs(question: &Question, form: &FormSchema) -> Vec<Value> {
    let mut blocks = vec![prompt_section(question)];
    for (index, (name, field)) in form.properties.iter().enumerate().take(VIEW_BLOCKS - 1) {
        let mut block = json!({
            "type": "input", "block_id": field_block(index),
            "label": plain(form.title(name), LABEL_CHARS), "element": crate::inputs::element(field, VALUE),
            // A boolean's unchecked box is an answer ("no"), so Slack must not insist on it.
            "optional": !form.is_required(name) || field.kind == FieldType::Boolean,
        });
        if let Some(description) = &field.description {
            block["hint"] = plain(description, LABEL_CHARS);
        }
        blocks.push(block);
    }
    blocks
}

/// The inputs of a submitted form modal (`view.state.values`), field by field, as core reads
/// them: each field's entries (a text, a chosen option's value, checked boxes' values).
pub fn submitted_fields(form: &FormSchema, values: &Value) -> Vec<(String, Vec<String>)> {
    form.properties
        .iter()
        .enumerate()
        .map(|(index, (name, field))| {
            let state = &values[field_block(index)][VALUE];
            let mut entries = entries(state);
            if field.kind == FieldType::Boolean {
                entries = vec![if entries.is_empty() { "no" } else { "yes" }.to_owned()];
            }
            (name.clone(), entries)
        })
        .collect()
}

/// The entries of one input's state.
fn entries(state: &Value) -> Vec<String> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    if let Some(options) = state["selected_options"].as_array() {
        return options.iter().filter_map(|o| text(&o["value"])).collect();
    }
    [
        &state["value"],
        &state["selected_option"]["value"],
        &state["selected_date"],
    ]
    .into_iter()
    .find_map(text)
    .into_iter()
    .collect()
}

/// The reason typed into a submitted reason modal.
pub fn submitted_reason(values: &Value) -> Option<String> {
    values[REASON][REASON]["value"]
        .as_str()
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
}

/// The answer to a submission whose inputs do not fit: each error on its field's block.
pub fn field_errors(form: &FormSchema, errors: &[(String, String)]) -> Value {
    let mut keyed = Map::new();
    for (name, why) in errors {
        let index = form.properties.iter().position(|(n, _)| n == name);
        let block = field_block(index.unwrap_or(0));
        keyed
            .entry(block)
            .or_insert_with(|| json!(render::shorten(why, LABEL_CHARS)));
    }
    json!({"response_action": "errors", "errors": keyed})
}

/// The answer to a submission that was refused or needs saying: the modal replaced by `text`.
pub fn said(text: &str) -> Value {
    json!({"response_action": "update", "view": {
        "type": "modal", "title": plain("askbridge", TITLE_CHARS),
        "close": plain("Close", TITLE_CHARS),
        "blocks": [{"type": "section", "text": {"type": "mrkdwn",
                    "text": escaped_within(text, SECTION_CHARS)}}],
    }})
}

/// A click on a modal opener, as the interaction gave it.
pub(crate) struct Click<'a> {
    pub(crate) channel: &'a str,
    pub(crate) user: &'a str,
    pub(crate) trigger: &'a str,
    pub(crate) action: &'a str,
    pub(crate) command: &'a str,
}

/// Opens the modal a click asks for, at once (its trigger lives 3 s); a person who may not
/// answer, or a question that ended, gets the line saying so instead, only they see it.
pub(crate) async fn open(slack: &Slack, inbox: &dyn Inbox, click: Click<'_>) {
    let question = match opened_question(click.command) {
        Some(id) => inbox.current(&id).await,
        None => None,
    };
    let chat = Target::compose(SURFACE, click.channel);
    let person = Identity::compose(SURFACE, click.user);
    let view = match &question {
        None => Err("This question no longer exists."),
        Some(q) if !q.is_pending() => Err("This question has ended; nothing can change it now."),
        Some(q) if !q.may_answer(&person, &chat, Millis::now()) => {
            Err("You can't answer this question.")
        }
        Some(q) => {
            // The reason and the edit complete the command their button carries.
            let completes = click.action == REASON_ACTION || click.action == EDIT_ACTION;
            let meta = metadata(click.channel, &q.id, completes.then_some(click.command));
            match (click.action, &q.form) {
                (REASON_ACTION, _) => Ok(reason_view(q, meta)),
                (EDIT_ACTION, _) => match crate::batch::subject(q, Some(click.command))
                    .and_then(|q| Some((q.edit_form().filter(|_| q.edits_in_fields())?, q)))
                {
                    Some((form, q)) => Ok(edit_view(&q, &form, meta)),
                    None => Err("This approval's arguments are edited as JSON: edit {...}."),
                },
                (_, Some(form)) => Ok(form_view(q, form, meta)),
                (_, None) => Err("That question is not a form."),
            }
        }
    };
    let sender = SlackChannel::new(Arc::clone(&slack.client));
    let result = match view {
        Ok(view) => sender.open_view(click.trigger, view).await,
        Err(line) => {
            let (channel, user) = (
                SlackChannelId(click.channel.into()),
                SlackUserId(click.user.into()),
            );
            sender.ephemeral(&channel, &user, line).await
        }
    };
    if let Err(error) = result {
        tracing::warn!(%error, "cannot open a Slack modal");
    }
}

/// The person who submitted a modal.
pub(crate) struct Submitter {
    pub(crate) id: String,
    pub(crate) name: Option<String>,
}

/// A modal's submission: the answer it makes through the [`Inbox`], and what Slack should do
/// with the modal (close it, show errors on its fields, or show the line saying why not).
pub(crate) async fn submitted(inbox: Arc<dyn Inbox>, by: Submitter, view: &Value) -> Value {
    let meta: Value = view["private_metadata"]
        .as_str()
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or_default();
    let (Some(channel), Some(id)) = (
        meta["channel"].as_str(),
        meta["question"]
            .as_str()
            .and_then(|q| QuestionId::parse(q).ok()),
    ) else {
        return said("This form cannot be read; open it again from the question.");
    };
    let values = &view["state"]["values"];
    let text = match view["callback_id"].as_str() {
        Some(REASON_CALLBACK) => match (meta["command"].as_str(), submitted_reason(values)) {
            (Some(command), Some(reason)) => format!("{command} {reason}"),
            _ => {
                return json!({"response_action": "errors", "errors": {REASON: "A reason is needed."}});
            }
        },
        Some(callback @ (FORM_CALLBACK | EDIT_CALLBACK)) => {
            let edit = callback == EDIT_CALLBACK;
            let question = inbox.current(&id).await;
            let form = match &question {
                Some(q) if edit => {
                    crate::batch::subject(q, meta["command"].as_str()).and_then(|q| q.edit_form())
                }
                Some(q) => q.form.clone(),
                None => None,
            };
            let (Some(form), command) = (form, meta["command"].as_str()) else {
                return said("This question no longer exists.");
            };
            match (
                form.read_submitted(&submitted_fields(&form, values)),
                command,
            ) {
                (Ok(args), Some(command)) if edit => format!("{command} {}", Value::Object(args)),
                (Ok(answer), _) if !edit => format!("/answer {id} {}", Value::Object(answer)),
                (Ok(_), _) => {
                    return said("This form cannot be read; open it again from the question.");
                }
                (Err(errors), _) => return field_errors(&form, &errors),
            }
        }
        _ => return said("This form cannot be read; open it again from the question."),
    };
    let inbound = Inbound {
        via: SURFACE.into(),
        chat: Target::compose(SURFACE, channel),
        sender: Identity::compose(SURFACE, &by.id),
        sender_name: by.name.map(|name| format!("@{name}")),
        text,
        private: channel.starts_with('D'),
        // A modal answered with errors is submitted again: each submission counts.
        delivery_id: None,
        in_reply_to: None,
    };
    let handled = tokio::spawn(async move { inbox.handle(inbound).await });
    match tokio::time::timeout(crate::CLAIM_WAIT, handled).await {
        Ok(Ok(Some(reply)))
            if reply.tone != Tone::Done
                || reply.question.as_ref().is_some_and(|q| q.is_pending()) =>
        {
            said(&reply.text)
        }
        // Answered (the question's message shows it), or still being recorded: close it.
        _ => json!({"response_action": "clear"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::tests::question;
    use askbridge_core::{Action, NewQuestion};

    fn form() -> FormSchema {
        serde_json::from_value(json!({"type": "object", "properties": {
            "env": {"type": "string", "title": "Environment", "enum": ["staging", "production"]},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "notify": {"type": "boolean"},
            "when": {"type": "string", "format": "date"},
            "owner": {"type": "string", "format": "email"},
            "note": {"type": "string", "description": "d".repeat(1000)}},
          "required": ["env", "replicas"]}))
        .unwrap()
    }

    /// The view as slack-morphism sends it: nothing of ours is lost on the way.
    fn typed(view: &Value) -> Value {
        let view: SlackView = serde_json::from_value(view.clone()).unwrap();
        serde_json::to_value(view).unwrap()
    }

    #[test]
    fn a_form_modal_has_one_input_of_its_type_per_field() {
        let form = form();
        let q = question(NewQuestion::ask("Deploy?").form(form.clone()));
        let view = form_view(&q, &form, metadata("C1", &q.id, None));
        assert_eq!(typed(&view), view);
        let types: Vec<&str> = view["blocks"].as_array().unwrap()[1..]
            .iter()
            .map(|b| b["element"]["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "static_select",
                "number_input",
                "checkboxes",
                "datepicker",
                "email_text_input",
                "plain_text_input"
            ]
        );
        assert_eq!(view["blocks"][1]["optional"], false);
        assert_eq!(view["blocks"][3]["optional"], true);
        let hint = view["blocks"][6]["hint"]["text"].as_str().unwrap();
        assert!(hint.chars().count() <= LABEL_CHARS);
    }

    #[test]
    fn submitted_inputs_are_read_per_field() {
        let values = json!({
            "field-0": {"value": {"type": "static_select", "selected_option": {"value": "2"}}},
            "field-1": {"value": {"type": "number_input", "value": "3"}},
            "field-2": {"value": {"type": "checkboxes", "selected_options": []}},
            "field-3": {"value": {"type": "datepicker", "selected_date": "2026-12-24"}},
            "field-4": {"value": {"type": "email_text_input", "value": null}},
        });
        let fields = submitted_fields(&form(), &values);
        let answer = form().read_submitted(&fields).unwrap();
        assert_eq!(
            Value::Object(answer),
            json!({"env": "production", "replicas": 3, "notify": false, "when": "2026-12-24"})
        );
    }

    #[test]
    fn an_approval_gets_a_reason_opener_carrying_its_reject_command() {
        let action = Action::new("shell", json!({"command": "ls"}));
        let q = question(NewQuestion::ask("Run it?").approve(action));
        let opener = serde_json::to_value(crate::blocks::opener(&q).unwrap()).unwrap();
        let value = opener["value"].as_str().unwrap();
        assert!(value.starts_with("/answer k3f9x2m8qa reject #"), "{value}");
        assert_eq!(opened_question(value).unwrap(), q.id);
        let view = reason_view(&q, metadata("C1", &q.id, Some(value)));
        assert_eq!(typed(&view), view);
        assert!(crate::blocks::opener(&question(NewQuestion::confirm("Ship?"))).is_none());
    }
}
