//! The [`Inbox`] side: turning updates into messages for the bridge.
//!
//! What counts: a new text message from a person, and a tap on one of our buttons. What never
//! resolves anything: messages from bots, messages sent on behalf of a chat (`sender_chat`:
//! anonymous admins, channels — their `from` is a placeholder), forwarded messages (the words are
//! someone else's), messages through inline bots, and edits (a changed message must not re-answer).
//!
//! A tap is acknowledged (`answerCallbackQuery`, whose toast tells the person whether the tap
//! counted) as soon as its claim is in, with the claim's own reply: the claim goes to the store
//! first. Sent before the claim or alongside it, the acknowledgement's request was built and
//! written on the same worker thread, and its round trip to Telegram taken by the same two
//! cores, ahead of the claim that releases the asker (the tap -> released steps in the README's
//! Benchmarks). A claim that takes longer than [`ACK_WITHIN`] (a store in trouble) does not keep
//! the button spinning: the toast is then the reply [`Inbox::prepare`] predicted from its
//! reading of the question, and the claim's reply is sent as a message if it differs.

use crate::sending::{TelegramChannel, with_rate_limit};
use crate::{SURFACE, Telegram};
use askbridge_core::command::{Command, CommandLine, addressed_elsewhere};
use askbridge_core::{Identity, Inbound, Inbox, Reply, ReplyTo, Target, render};
use std::sync::Arc;
use std::time::Duration;
use teloxide::prelude::*;
use teloxide::types::{CallbackQuery, MaybeInaccessibleMessage, Message, Update, UpdateKind, User};

/// Telegram's limit on a callback answer's text.
const TOAST_CHARS: usize = 200;
/// The longest a tap's acknowledgement waits for its claim before it toasts the prediction.
const ACK_WITHIN: Duration = Duration::from_secs(1);

fn display_name(user: &User) -> String {
    match &user.username {
        Some(username) => format!("@{username}"),
        None => user.full_name(),
    }
}

impl Telegram {
    fn sender(&self) -> TelegramChannel {
        TelegramChannel::new(self.bot.clone(), self.redactor.clone())
    }

    /// Handles one update (from polling or the webhook).
    pub(crate) async fn handle_update(&self, inbox: Arc<dyn Inbox>, update: Update) {
        let delivery = format!("update:{}", update.id.0);
        match update.kind {
            UpdateKind::Message(message) => self.handle_message(inbox, message, delivery).await,
            UpdateKind::CallbackQuery(query) => self.handle_tap(inbox, query, delivery).await,
            UpdateKind::EditedMessage(message) => {
                tracing::debug!(
                    chat = message.chat.id.0,
                    "edited message ignored: edits never answer"
                );
            }
            _ => tracing::debug!(update = update.id.0, "update of another kind ignored"),
        }
    }

    /// The [`Inbound`] for a message, or `None` when it must not count.
    fn inbound_from(&self, message: &Message, delivery: String) -> Option<Inbound> {
        let from = message.from.as_ref()?;
        let why_not = if from.is_bot {
            Some("from a bot")
        } else if message.sender_chat.is_some() {
            Some("sent on behalf of a chat")
        } else if message.forward_origin().is_some() || message.is_automatic_forward() {
            Some("forwarded")
        } else if message.via_bot.is_some() {
            Some("sent through an inline bot")
        } else {
            None
        };
        if let Some(reason) = why_not {
            tracing::info!(chat = message.chat.id.0, reason, "message ignored");
            return None;
        }
        let text = message.text()?;
        if addressed_elsewhere(text, self.username()) {
            return None;
        }
        Some(Inbound {
            via: SURFACE.into(),
            chat: Target::compose(SURFACE, message.chat.id.0),
            sender: Identity::compose(SURFACE, from.id.0),
            sender_name: Some(display_name(from)),
            text: text.to_owned(),
            private: message.chat.is_private(),
            delivery_id: Some(delivery),
            // A reply to a question's message answers that question (the id `show` returned).
            in_reply_to: message.reply_to_message().map(|m| ReplyTo {
                message: m.id.0.to_string(),
                only: false,
            }),
        })
    }

    async fn handle_message(&self, inbox: Arc<dyn Inbox>, message: Message, delivery: String) {
        let Some(inbound) = self.inbound_from(&message, delivery) else {
            return;
        };
        let Some(reply) = inbox.handle(inbound).await else {
            return;
        };
        if let Err(error) = self
            .sender()
            .answer(message.chat.id, Some(message.id), &reply)
            .await
        {
            tracing::warn!(%error, chat = message.chat.id.0, "cannot reply on Telegram");
        }
    }

    async fn handle_tap(&self, inbox: Arc<dyn Inbox>, query: CallbackQuery, delivery: String) {
        let Some(data) = query.data.clone() else {
            self.acknowledge(&query, "").await;
            return;
        };
        let Some(message) = &query.message else {
            self.acknowledge(&query, "This button is no longer available.")
                .await;
            return;
        };
        let (chat, message_id) = (message.chat().clone(), message.id());
        let inbound = Inbound {
            via: SURFACE.into(),
            chat: Target::compose(SURFACE, chat.id.0),
            sender: Identity::compose(SURFACE, query.from.id.0),
            sender_name: Some(display_name(&query.from)),
            text: data.clone(),
            private: chat.is_private(),
            delivery_id: Some(delivery),
            in_reply_to: None,
        };
        let prepared = inbox.prepare(inbound).await;
        let predicted = prepared.preview().cloned();
        let commit = prepared.commit();
        tokio::pin!(commit);
        let (toasted, reply) = match tokio::time::timeout(ACK_WITHIN, &mut commit).await {
            Ok(reply) => {
                let toasted = reply.as_ref().or(predicted.as_ref());
                self.acknowledge(&query, text_of(toasted)).await;
                (toasted.cloned(), reply)
            }
            Err(_) => {
                let acknowledged = self.acknowledge(&query, text_of(predicted.as_ref()));
                let (_, reply) = tokio::join!(acknowledged, commit);
                (predicted, reply)
            }
        };
        let Some(reply) = reply else {
            return;
        };
        if let Some(selection) = picked(&data) {
            self.redraw_selection(inbox.as_ref(), &reply, message, &selection)
                .await;
        }
        // A reply with buttons (a form's next field) is a message: a toast cannot hold them; nor
        // can it hold a long reply whole (a batch's Edit says the command to copy).
        let whole_in_toast = reply.text.chars().count() <= TOAST_CHARS;
        if (toasted.as_ref().is_none_or(|t| t.text != reply.text)
            || !reply.buttons.is_empty()
            || !whole_in_toast)
            && let Err(error) = self
                .sender()
                .answer(chat.id, Some(message_id), &reply)
                .await
        {
            tracing::warn!(%error, chat = chat.id.0, "cannot send a tap's reply");
        }
    }

    async fn acknowledge(&self, query: &CallbackQuery, text: &str) {
        let toast = render::shorten(text, TOAST_CHARS);
        let result = with_rate_limit(&self.redactor, || {
            let request = self.bot.answer_callback_query(query.id.clone());
            let request = if toast.is_empty() {
                request
            } else {
                request.text(toast.clone())
            };
            request.send()
        })
        .await;
        if let Err(error) = result {
            tracing::warn!(error = %self.redactor.clean(&error.to_string()), "cannot answer a callback query");
        }
    }

    async fn redraw_selection(
        &self,
        inbox: &dyn Inbox,
        reply: &Reply,
        message: &MaybeInaccessibleMessage,
        selection: &[usize],
    ) {
        let Some(question) = reply.question.as_ref().filter(|q| q.is_pending()) else {
            return;
        };
        let (chat, message_id) = (message.chat().id, message.id());
        let sender = self.sender();
        if let Err(error) = sender.redraw(question, chat, message_id, selection).await {
            tracing::warn!(question_id = %question.id, %error, "cannot redraw the selection");
            return;
        }
        // The question may have been resolved, and this message withdrawn, while the redraw
        // was on its way: then the redraw put buttons back on a resolved message. Withdraw again.
        if let Some(now) = inbox
            .current(&question.id)
            .await
            .filter(|q| !q.is_pending())
            && let Err(error) = sender.withdraw_message(&now, chat, message_id).await
        {
            tracing::warn!(question_id = %question.id, %error, "cannot withdraw after a redraw");
        }
    }
}

/// A reply's text, or none.
fn text_of(reply: Option<&Reply>) -> &str {
    reply.map(|r| r.text.as_str()).unwrap_or_default()
}

/// The selection a `/pick` payload carries.
fn picked(data: &str) -> Option<Vec<usize>> {
    match CommandLine::parse(data) {
        Ok(Some(CommandLine {
            command: Command::Pick(pick),
            ..
        })) => Some(pick.numbers),
        _ => None,
    }
}
