//! Receiving one mail ([`Email::receive`]): reading it, handing each command it stands for to
//! the bridge, recording an unverified sender's attempt, and mailing the bridge's reply back
//! only to a sender who may answer. Apart from the channel's setup (`lib.rs`): this is the path
//! every inbound mail takes, from the mailbox and from tests alike.

use crate::reply_command::{self, command_text};
use crate::{
    Email, Ignored, MailReply, SURFACE, UNVERIFIED, canonical, command_for, commands_for, compose,
    read,
};
use askbridge_core::{Inbound, Inbox, Millis, Question, Target, Tone};

/// What became of one inbound mail.
#[derive(Clone, Debug, PartialEq)]
pub enum Received {
    /// Not a reply that may count; nothing was handed to the bridge and nobody was mailed.
    Ignored(Ignored),
    /// Handed to the bridge. `reply` is its answer (`None` for a duplicate); `mailed` says
    /// whether it was sent back to the sender.
    Handled {
        /// The question it was about.
        question: askbridge_core::QuestionId,
        /// The bridge's reply.
        reply: Option<Box<askbridge_core::Reply>>,
        /// The reply went back by mail.
        mailed: bool,
    },
}

impl Email {
    /// Reads one raw mail and, when it is a reply that may count, hands it to `inbox`; mails the
    /// bridge's reply back only to a sender who may answer the question.
    pub async fn receive(&self, raw: &[u8], inbox: &dyn Inbox) -> Received {
        let reply = match read(raw, &self.policy) {
            Ok(reply) => reply,
            Err(Ignored::DmarcFailed { domain, reply }) => {
                self.audit_unverified(&reply, inbox).await;
                return Received::Ignored(Ignored::DmarcFailed { domain, reply });
            }
            Err(ignored) => {
                tracing::info!(reason = %ignored, "inbound mail ignored");
                return Received::Ignored(ignored);
            }
        };
        // The signed address decides the question; a reply outside our thread is still one (a
        // forwarded question, a client that drops In-Reply-To), noted for whoever reads the log.
        tracing::debug!(question_id = %reply.question, sender = %reply.sender, threaded = reply.threaded, "reply read");
        let question = inbox.current(&reply.question).await;
        let chat = chat_for(question.as_ref(), &reply.address);
        let may_answer = question
            .as_ref()
            .is_some_and(|q| q.may_answer(&reply.sender, &chat, Millis::now()));
        let commands = match question.as_ref() {
            Some(q) => commands_for(q, &reply.text),
            None => vec![command_text(&reply.question, &reply.text)],
        };
        let answer = if reply.text.is_empty() {
            Some(askbridge_core::Reply::refused(format!(
                "Your reply had no answer above the quoted text. Reply with the number, the option, or /answer {} <choice>.",
                reply.question
            )))
        } else {
            let mut answers = Vec::with_capacity(commands.len());
            for (k, text) in commands.into_iter().enumerate() {
                // Each line of a reply to a batch is its own delivery, redelivered as a whole.
                let delivery_id = match k {
                    0 => reply.delivery_id.clone(),
                    k => format!("{}#{k}", reply.delivery_id),
                };
                let inbound = Inbound {
                    via: SURFACE.into(),
                    chat: chat.clone(),
                    sender: reply.sender.clone(),
                    sender_name: reply.name.clone(),
                    text: text.clone(),
                    private: true,
                    delivery_id: Some(delivery_id),
                    in_reply_to: None,
                };
                if let Some(answer) = inbox.handle(inbound).await {
                    answers.push((text, answer));
                }
            }
            reply_command::joined(answers)
        };
        let mailed = match &answer {
            Some(answer) if may_answer => self.mail_back(&reply, answer, question.as_ref()).await,
            Some(answer) => {
                tracing::info!(
                    question_id = %reply.question,
                    sender = %reply.sender,
                    tone = ?answer.tone,
                    "reply from someone who may not answer: not mailed back"
                );
                false
            }
            None => false,
        };
        Received::Handled {
            question: reply.question,
            reply: answer.map(Box::new),
            mailed,
        }
    }

    /// A reply to a signed address whose `From` has no DMARC pass: it must not answer, but the
    /// attempt belongs in the question's audit trail like any refusal. It goes to the bridge as
    /// said by `email-unverified:<address>` in the chat of that name, whom no question admits
    /// (checked first: one that would is left alone), so the bridge refuses and records it.
    /// Nobody is mailed: the `From` may be forged.
    async fn audit_unverified(&self, reply: &MailReply, inbox: &dyn Inbox) {
        tracing::warn!(
            question_id = %reply.question,
            sender = %reply.sender,
            "reply without a DMARC pass for its From domain: refused, not mailed back"
        );
        let unverified = format!("{UNVERIFIED}:{}", reply.address);
        let (sender, chat) = (
            askbridge_core::Identity::new(unverified.clone()),
            Target::new(unverified),
        );
        let Some(question) = inbox.current(&reply.question).await else {
            return;
        };
        if question.may_answer(&sender, &chat, Millis::now()) {
            tracing::warn!(question_id = %reply.question, "a question admits unverified email senders: not handed over");
            return;
        }
        let inbound = Inbound {
            via: SURFACE.into(),
            chat,
            sender,
            sender_name: reply.name.clone(),
            text: command_for(&question, &reply.text),
            private: true,
            // Its own delivery ids: a forged mail must not make a genuine one a duplicate.
            delivery_id: Some(format!("{UNVERIFIED}/{}", reply.delivery_id)),
            in_reply_to: None,
        };
        let refused = inbox.handle(inbound).await;
        tracing::debug!(question_id = %reply.question, ?refused, "unverified reply recorded");
    }

    async fn mail_back(
        &self,
        reply: &MailReply,
        answer: &askbridge_core::Reply,
        question: Option<&Question>,
    ) -> bool {
        if !self.sender.may_reply(&reply.address) {
            tracing::warn!(question_id = %reply.question, sender = %reply.sender, "too many replies to this address this minute: not mailed");
            return false;
        }
        let subject = compose::reply_subject(reply.subject.as_deref());
        let mut body = answer.text.clone();
        if answer.tone == Tone::Refused {
            // What would work: for the question at hand, what it takes (an approval's decisions).
            let how = match answer.question.as_ref().or(question) {
                Some(question) => compose::how_to_answer(question),
                None => format!(
                    "Reply to this mail with the number, the option, or /answer {} <choice>.",
                    reply.question
                ),
            };
            body.push_str(&format!("\n\n{how}"));
        }
        body.push('\n');
        match self
            .sender
            .text(
                &reply.address,
                &subject,
                &body,
                reply.message_id.as_deref(),
                Some(&reply.question),
            )
            .await
        {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(question_id = %reply.question, error = %askbridge_core::error::Chain(&error), "cannot mail the reply");
                false
            }
        }
    }
}

/// The chat a reply from `address` is in: the question's target for that address when it has
/// one (written as the asker wrote it), else `email:<address>`.
pub(crate) fn chat_for(question: Option<&Question>, address: &str) -> Target {
    question
        .and_then(|q| {
            q.targets.iter().find(|t| {
                t.surface() == SURFACE
                    && t.address().and_then(canonical).as_deref() == Some(address)
            })
        })
        .cloned()
        .unwrap_or_else(|| Target::compose(SURFACE, address))
}
