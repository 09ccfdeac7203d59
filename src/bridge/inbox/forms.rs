//! Forms filled in one field at a time in chat.
//!
//! The question's message asks the first field; each reply (a plain message, `/answer <id>
//! <value>`, a tap) gives the value of the field asked now and gets the next field back, with
//! its buttons. `/skip` and `/back` move without a value. Each person's draft is in the store
//! ([`crate::store::Drafts`]), so any process can take the next reply and a restart loses
//! nothing; the draft is stored when the message is committed, never while it is only read for
//! a tap's toast. When the last field is in, the whole object is submitted through the same path
//! as an answer over HTTP: checked against the form, claimed once, first answer wins.

use super::answerable;
use super::commands::Turn;
use super::commands::{done, refusal_reply};
use crate::Error;
use crate::bridge::resolve::{Attempt, ProgramReply, Said};
use askbridge_core::command::StepCommand;
use askbridge_core::fill::{self, Step, Stepped};
use askbridge_core::form::Draft;
use askbridge_core::{Answer, Kind, Millis, Question, Reply, Tone};
use std::time::Duration;

/// How long a draft outlives its form's deadline (it is useless after, but harmless).
const DRAFT_GRACE: Duration = Duration::from_secs(3600);

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

    /// The form waiting for the sender in this chat, when exactly one is.
    async fn open_form(&self) -> Result<Question, Error> {
        let sender = &self.message.sender;
        let mut forms = answerable(&self.bridge, sender, &self.message.chat).await?;
        forms.retain(|q| q.kind == Kind::Form);
        match forms.len() {
            1 => Ok(forms.remove(0)),
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
        let Some(form) = question.form.clone() else {
            return Err(not_fit("That question is not a form."));
        };
        let store = &self.bridge.inbox().store;
        let mut draft = store
            .drafts
            .draft(&question.id, sender)
            .await?
            .unwrap_or_default();
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
        let attempt = Attempt {
            id: question.id.clone(),
            said: Said::Program(ProgramReply::from(Answer::Object(values))),
            actor: self.actor.clone(),
            chat: self.message.chat.clone(),
        };
        match self.bridge.attempt(attempt).await {
            Ok(resolved) => done(resolved),
            Err(error) => refusal_reply(&error),
        }
    }
}

impl Filling {
    /// What committing will reply, as a tap's toast shows it.
    pub(super) fn preview(&self) -> Reply {
        match &self.stepped {
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
        let Some(form) = &question.form else {
            return Reply::refused("That question is not a form.");
        };
        let (tone, head) = match stepped {
            Stepped::Refused(why) => (Tone::Refused, format!("✗ {why}")),
            Stepped::Next { noted: Some(noted) } => (Tone::Done, format!("✓ {noted}")),
            _ => (Tone::Info, format!("↩ {}", question.prompt)),
        };
        let text = format!("{head}\n\n{}", fill::field_line(question, form, draft.at));
        Reply::new(tone, text)
            .with_buttons(fill::field_buttons(question, form, draft.at))
            .about(question.clone())
    }
}

fn not_fit(reason: &str) -> Error {
    askbridge_core::Error::NotFit {
        reason: reason.to_owned(),
    }
    .into()
}
