//! Respond in chat: the Respond button (or a bare `/answer <id> respond`) asks for the text, and
//! the sender's next message in the chat is their response.
//!
//! A button's payload cannot carry what the person will write, so the tap leaves a mark in the
//! store: a [`Draft`] with `responding` set, under the question and the sender, as a form's
//! draft is kept (any process takes the next message; a restart loses nothing). A plain message
//! from that sender to that approval is then read as `respond <text>` and goes through the same
//! path as a typed `/answer <id> respond <text>`: checked, claimed once, first answer wins. The
//! typed command keeps working, and any other decision (a tap on Allow once, Edit) still does
//! what it does; Edit replaces the mark with its own draft.

use super::Plan;
use super::commands::{Turn, refusal_reply};
use super::forms::DRAFT_GRACE;
use crate::bridge::resolve::Refusal;
use askbridge_core::form::Draft;
use askbridge_core::{Kind, Millis, Question, Reply, Tone};

impl Turn {
    /// The plan for `said` refused as `refusal` when it is a bare `respond` on an approval
    /// offering it: ask for the text instead of refusing. `None` for any other refusal.
    pub(super) fn response_asked(&self, refusal: &Refusal, said: &str) -> Option<Plan> {
        let not_fit = matches!(
            &refusal.error,
            crate::Error::Model(askbridge_core::Error::NotFit { .. })
        );
        let question = refusal.question.as_ref()?;
        (not_fit && question.starts_response(said)).then(|| Plan::Respond(question.clone()))
    }

    /// What the sender is told when their Respond is taken in hand.
    pub(super) fn response_prompt(question: &Question) -> Reply {
        Reply::new(
            Tone::Info,
            format!(
                "What is your response? Send it as your next message here: it becomes the tool's result (or /answer {} respond <your text>).",
                question.id
            ),
        )
        .about(question.clone())
    }

    /// Stores the sender's Respond mark on `question` and asks for the text.
    pub(super) async fn start_response(&self, question: Question) -> Reply {
        let ttl = question.remaining(Millis::now()) + DRAFT_GRACE;
        let drafts = &self.bridge.inbox().store.drafts;
        let marked = drafts
            .save_draft(
                &question.id,
                &self.message.sender,
                &Draft::responding(),
                ttl,
            )
            .await;
        match marked {
            Ok(()) => Self::response_prompt(&question),
            Err(error) => refusal_reply(&error.into()),
        }
    }

    /// The words a plain message stands for on `question`: `respond <text>` when the sender
    /// tapped its Respond button, else the message as it is.
    pub(super) async fn plain_words(&self, question: &Question) -> String {
        let text = &self.message.text;
        if question.kind != Kind::Approval || question.is_batch() {
            return text.clone();
        }
        let drafts = &self.bridge.inbox().store.drafts;
        match drafts.draft(&question.id, &self.message.sender).await {
            Ok(Some(draft)) if draft.responding => format!("respond {text}"),
            // A store that cannot say reads the message as it is: at worst a refusal that lists
            // the choices, never an answer the person did not give.
            _ => text.clone(),
        }
    }
}
