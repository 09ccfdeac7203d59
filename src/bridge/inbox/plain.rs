//! A message that is not a command: the answer to the question whose message it replies to, or
//! else to the one question waiting for its sender. Kept apart from the commands because who a plain message may answer is its own rule (in a
//! group, an open question does not wait for everyone, or every remark would answer it).

use super::Plan;
use super::answerable;
use super::commands::{Turn, pending_list, refusal_reply};
use crate::Error;
use crate::bridge::resolve::{Attempt, Reading, Refusal, Said};
use crate::store::ListFilter;
use askbridge_core::{Kind, Millis, Question, Reply, Tone, render};

impl Turn {
    /// A message that is not a command: the answer to the question whose message it replies
    /// to (whoever else is waiting), else to the one question waiting for the sender in this
    /// chat, if there is exactly one.
    pub(super) async fn plain_message(&self) -> Plan {
        if let Some(reply_to) = &self.message.in_reply_to {
            match self.replied_to(&reply_to.message).await {
                // The resolver's check refuses a sender who may not answer it, politely.
                Ok(Some(question)) => return self.plain_answer(question).await,
                // Chatter in the thread of something else (or of a question that ended).
                Ok(None) if reply_to.only => return Plan::Reply(None),
                Ok(None) => {}
                Err(error) => return Plan::Reply(Some(refusal_reply(&error))),
            }
        }
        let waiting = match self.waiting_for().await {
            Ok(waiting) => waiting,
            Err(error) => return Plan::Reply(Some(refusal_reply(&error))),
        };
        match waiting.as_slice() {
            [] if self.message.private => Plan::reply(Reply::new(
                Tone::Info,
                "Nothing is waiting for an answer from you. Send /help to see what I can do.",
            )),
            // In a group, chatter that answers nothing gets no reply.
            [] => Plan::Reply(None),
            [question] => self.plain_answer(question.clone()).await,
            several => Plan::reply(Reply::new(
                Tone::Info,
                format!(
                    "Several questions are waiting for you; answer one with its command:\n{}",
                    pending_list(several)
                ),
            )),
        }
    }

    /// The pending question shown in this chat as the message `reference` (what its channel's
    /// `show` returned, as the store keeps it for withdrawal). Costs one read of where each
    /// question pending in this chat was shown: a chat holds a few at a time.
    async fn replied_to(&self, reference: &str) -> Result<Option<Question>, Error> {
        let chat = &self.message.chat;
        let filter = ListFilter {
            target: Some(chat.clone()),
            ..ListFilter::pending()
        };
        let deliveries = &self.bridge.inbox().store.deliveries;
        for question in self.bridge.list(&filter).await? {
            let shown = deliveries.shown(&question.id).await?;
            if shown
                .iter()
                .any(|s| s.target == *chat && s.reference == reference)
            {
                return Ok(Some(question));
            }
        }
        Ok(None)
    }

    /// Questions "waiting for" the sender: ones naming them as an answerer, and, in a private
    /// chat, ones open to anyone there. In groups, an open question is not taken to wait for
    /// everyone, or every remark would answer it.
    async fn waiting_for(&self) -> Result<Vec<Question>, Error> {
        let sender = &self.message.sender;
        let mut questions = answerable(&self.bridge, sender, &self.message.chat).await?;
        let now = Millis::now();
        questions.retain(|q| {
            q.answerers_at(now).contains(sender) || (q.answerers.is_empty() && self.message.private)
        });
        Ok(questions)
    }

    /// The plain message as the answer to `question` (already read: the waiting list is the one
    /// read). An answer that does not fit gets the list of choices.
    async fn plain_answer(&self, question: Question) -> Plan {
        if question.kind == Kind::Form {
            return self.fill_field(question, self.message.text.clone()).await;
        }
        let words = self.plain_words(&question).await;
        let attempt = Attempt {
            id: question.id.clone(),
            said: Said::Typed(words.clone()),
            actor: self.actor.clone(),
            chat: self.message.chat.clone(),
        };
        let attempted = Some(question.id.to_string());
        let prompt = question.prompt.clone();
        let options = question.options.clone();
        match self
            .bridge
            .resolver()
            .check(&self.bridge, &attempt, Some(question))
            .await
        {
            Ok(Reading::Claim(checked)) => Plan::Claim {
                checked,
                attempted: attempt.id.to_string(),
            },
            Ok(Reading::Field { question, text, .. }) => self.fill_field(question, text).await,
            Err(refusal) => match self.response_asked(&refusal, &words) {
                Some(plan) => plan,
                None if matches!(refusal.error, Error::Model(_)) => {
                    self.not_an_answer(refusal, attempted, &prompt, &options)
                }
                None => self.refuse(refusal, attempted, None),
            },
        }
    }
}

impl Turn {
    /// A plain message that does not fit the question it was taken for: why, and its choices.
    fn not_an_answer(
        &self,
        refusal: Refusal,
        attempted: Option<String>,
        prompt: &str,
        options: &[String],
    ) -> Plan {
        let choices: String = options
            .iter()
            .enumerate()
            .map(|(i, label)| format!("\n{}. {label}", i + 1))
            .collect();
        let mut reply = Reply::refused(format!(
            "That doesn't answer \"{}\". {}{choices}",
            render::shorten(prompt, 80),
            refusal.error
        ));
        if let Some(question) = &refusal.question {
            reply = reply.about(question.clone());
        }
        self.refuse(refusal, attempted, Some(reply))
    }
}
