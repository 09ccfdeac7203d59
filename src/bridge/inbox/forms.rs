//! Forms filled in one field at a time in chat, and an approval's arguments edited the same way.
//!
//! The question's message asks the first field; each reply (a plain message, `/answer <id>
//! <value>`, a tap) gives the value of the field asked now and gets the next field back, with
//! its buttons. `/skip` and `/back` move without a value. Each person's draft is in the store
//! ([`crate::store::Drafts`]), so any process can take the next reply and a restart loses
//! nothing; the draft is stored when the message is committed, never while it is only read for
//! a tap's toast. When the last field is in, the whole object is submitted through the same path
//! as an answer over HTTP: checked against the form, claimed once, first answer wins.
//!
//! An approval whose `args_schema` is the flat form schema is edited with the same machinery
//! ([`Question::edit_form`]: each field prefilled with the proposed value, which `/skip`
//! keeps). Editing starts with the Edit button or a bare `/answer <id> edit`, which stores an
//! empty draft; while the draft is there, replies fill its fields, and the completed arguments
//! go through the reply path as the decision `edit`. An action of a batch is edited the same
//! way, as the single approval it stands for; its draft names the action.

use super::answerable;
use super::commands::Turn;
use super::commands::{done, refusal_reply};
use crate::Error;
use crate::bridge::resolve::{Attempt, ProgramReply, Said};
use askbridge_core::batch::{BatchItem, BatchReply};
use askbridge_core::command::StepCommand;
use askbridge_core::fill::{self, Step, Stepped};
use askbridge_core::form::{Draft, FormSchema};
use askbridge_core::{Answer, Decision, Kind, Millis, Question, Reply, Tone};
use std::time::Duration;

/// How long a draft outlives its form's deadline (it is useless after, but harmless).
pub(super) const DRAFT_GRACE: Duration = Duration::from_secs(3600);

/// A step read against a person's draft: what it does, not yet stored.
pub(super) struct Filling {
    question: Question,
    draft: Draft,
    stepped: Stepped,
}

impl Turn {
    /// `/back [id]` or `/skip [id]`; without an id, the one form open for the sender here.
    pub(super) async fn step_command(&self, command: StepCommand) -> Result<Filling, Error> {
        let question = match &command.id {
            Some(id) => self.find(id).await?,
            None => self.open_form().await?,
        };
        let step = if command.back { Step::Back } else { Step::Skip };
        self.fill(question, step).await
    }

    /// The form waiting for the sender in this chat (or the approval they are editing), when
    /// exactly one is.
    async fn open_form(&self) -> Result<Question, Error> {
        let sender = &self.message.sender;
        let mut forms = answerable(&self.bridge, sender, &self.message.chat).await?;
        let drafts = &self.bridge.inbox().store.drafts;
        let mut open = Vec::new();
        for question in forms.drain(..) {
            // A Respond tap's mark is not a form being filled.
            let editing = question.edits_in_fields()
                && drafts
                    .draft(&question.id, sender)
                    .await?
                    .is_some_and(|draft| !draft.responding);
            if question.kind == Kind::Form || editing {
                open.push(question);
            }
        }
        match open.len() {
            1 => Ok(open.remove(0)),
            0 => Err(not_fit("No form is open for you here.")),
            _ => Err(not_fit(
                "Several forms are open here; name one: /back <id> or /skip <id>.",
            )),
        }
    }

    /// Reads `step` against the sender's draft of `question`. Changes nothing.
    pub(super) async fn fill(&self, question: Question, step: Step) -> Result<Filling, Error> {
        let sender = &self.message.sender;
        if !question.may_answer(sender, &self.message.chat, Millis::now()) {
            return Err(Error::Forbidden);
        }
        if !question.is_pending() {
            return Err(Error::AlreadyResolved(Box::new(question)));
        }
        let store = &self.bridge.inbox().store;
        let draft = store
            .drafts
            .draft(&question.id, sender)
            .await?
            .filter(|draft| !draft.responding);
        if question.is_batch() {
            return batch_fill(question, draft, step);
        }
        let Some(form) = form_of(&question) else {
            return Err(not_fit("That question is not a form."));
        };
        if question.kind == Kind::Approval {
            if let Step::Value(text) = &step
                && question.starts_edit(text)
            {
                // (Re)starts editing: the first field, nothing changed yet.
                let stepped = Stepped::Next { noted: None };
                let draft = Draft::default();
                return Ok(Filling {
                    question,
                    draft,
                    stepped,
                });
            }
            if draft.is_none() {
                return Err(not_editing(&question, &step));
            }
        }
        let mut draft = draft.unwrap_or_default();
        let stepped = fill::step(&form, &mut draft, step);
        Ok(Filling {
            question,
            draft,
            stepped,
        })
    }

    /// Stores the draft and asks the next field, or submits the completed form.
    pub(super) async fn commit_fill(&self, filling: Filling) -> Reply {
        let Filling {
            question,
            draft,
            stepped,
        } = filling;
        let values = match stepped {
            Stepped::Complete(values) => values,
            Stepped::Refused(_) => return Filling::reply(&question, &draft, &stepped),
            Stepped::Next { .. } => {
                let ttl = question.remaining(Millis::now()) + DRAFT_GRACE;
                let store = &self.bridge.inbox().store;
                if let Err(error) = store
                    .drafts
                    .save_draft(&question.id, &self.message.sender, &draft, ttl)
                    .await
                {
                    return refusal_reply(&error.into());
                }
                return Filling::reply(&question, &draft, &stepped);
            }
        };
        let said = match draft.action {
            // An action of a batch, edited field by field: the edit goes as that action's.
            Some(n) => Said::Batch(BatchReply {
                items: vec![BatchItem {
                    action: Some(n),
                    decision: Decision::Edit,
                    message: None,
                    args: Some(serde_json::Value::Object(values)),
                }],
                digest: None,
            }),
            None => Said::Program(program_reply(&question, values)),
        };
        let attempt = Attempt {
            id: question.id.clone(),
            said,
            actor: self.actor.clone(),
            chat: self.message.chat.clone(),
        };
        match self.bridge.attempt(attempt).await {
            Ok(resolved) => done(resolved),
            Err(error) => refusal_reply(&error),
        }
    }
}

/// A completed form's values as a program's reply: the form's answer, or an approval's edit.
fn program_reply(
    question: &Question,
    values: serde_json::Map<String, serde_json::Value>,
) -> ProgramReply {
    if question.kind == Kind::Approval {
        ProgramReply {
            args: Some(serde_json::Value::Object(values)),
            ..ProgramReply::from(Answer::Text(Decision::Edit.as_str().into()))
        }
    } else {
        ProgramReply::from(Answer::Object(values))
    }
}

/// Reads `step` against the sender's `draft` of batch `question`: a bare `<n> edit` starts
/// editing action `n` field by field; while a draft of an undecided action is there, the step
/// fills its fields, read against the single approval that action stands for.
fn batch_fill(question: Question, draft: Option<Draft>, step: Step) -> Result<Filling, Error> {
    let start = match &step {
        Step::Value(text) => question.batch_edit_start(text),
        _ => None,
    };
    let (n, mut draft) = match (start, draft) {
        (Some(n), _) => {
            let draft = Draft {
                action: Some(n),
                ..Draft::default()
            };
            let view = question.action_view(n)?;
            let stepped = Stepped::Next { noted: None };
            return Ok(Filling {
                question: view,
                draft,
                stepped,
            });
        }
        (
            None,
            Some(
                draft @ Draft {
                    action: Some(n), ..
                },
            ),
        ) if n
            .checked_sub(1)
            .and_then(|i| question.actions.get(i))
            .is_some_and(|a| a.decision.is_none()) =>
        {
            (n, draft)
        }
        _ if matches!(step, Step::Back | Step::Skip) => {
            return Err(not_fit(&format!(
                "You are not editing an action of this approval; start with its Edit button or /answer {} <n> edit.",
                question.id
            )));
        }
        _ => return Err(not_editing(&question, &step)),
    };
    let view = question.action_view(n)?;
    let Some(form) = view.edit_form() else {
        return Err(not_editing(&question, &step));
    };
    let stepped = fill::step(&form, &mut draft, step);
    Ok(Filling {
        question: view,
        draft,
        stepped,
    })
}

impl Filling {
    /// What committing will reply, as a tap's toast shows it.
    pub(super) fn preview(&self) -> Reply {
        match &self.stepped {
            Stepped::Complete(values) if self.question.kind == Kind::Approval => Reply::new(
                Tone::Done,
                format!(
                    "✓ Approving with changes: {}",
                    serde_json::Value::Object(values.clone())
                ),
            ),
            Stepped::Complete(values) => Reply::new(
                Tone::Done,
                format!("✓ Submitting: {}", Answer::Object(values.clone())),
            ),
            stepped => Filling::reply(&self.question, &self.draft, stepped),
        }
    }

    /// The reply to a step that did not complete the form: what was kept (or why nothing
    /// was), then the field asked now with its buttons.
    fn reply(question: &Question, draft: &Draft, stepped: &Stepped) -> Reply {
        let Some(form) = form_of(question) else {
            return Reply::refused("That question is not a form.");
        };
        let (tone, head) = match stepped {
            Stepped::Refused(why) => (Tone::Refused, format!("✗ {why}")),
            Stepped::Next { noted: Some(noted) } => (Tone::Done, format!("✓ {noted}")),
            _ if question.kind == Kind::Approval && draft.at == 0 => (
                Tone::Info,
                format!("✏️ Editing the arguments of {}", edited_tool(question)),
            ),
            _ => (Tone::Info, format!("↩ {}", question.prompt)),
        };
        let text = format!("{head}\n\n{}", fill::field_line(question, &form, draft.at));
        Reply::new(tone, text)
            .with_buttons(fill::field_buttons(question, &form, draft.at))
            .about(question.clone())
    }
}

/// The fields a person fills in: a form's, or an approval's arguments being edited.
fn form_of(question: &Question) -> Option<FormSchema> {
    match question.kind {
        Kind::Approval => question.edit_form(),
        _ => question.form.clone(),
    }
}

fn edited_tool(question: &Question) -> String {
    question
        .action
        .as_ref()
        .map_or_else(String::new, |a| a.tool_shown().into_owned())
}

/// Words about an approval that is not being edited: what they would have been read as.
fn not_editing(question: &Question, step: &Step) -> Error {
    match step {
        Step::Value(text) => match question.read_typed(text) {
            Err(error) => error.into(),
            Ok(_) => not_fit("Those words decide the approval; send them again to do so."),
        },
        Step::Back | Step::Skip => not_fit(&format!(
            "You are not editing this approval; start with its Edit button or /answer {} edit.",
            question.id
        )),
    }
}

fn not_fit(reason: &str) -> Error {
    askbridge_core::Error::NotFit {
        reason: reason.to_owned(),
    }
    .into()
}
