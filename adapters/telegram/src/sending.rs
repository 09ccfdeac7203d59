//! The [`Channel`] side: showing, withdrawing, saying.
//!
//! Telegram answers a burst with 429 and `retry_after`; that wait is taken here and the call
//! repeated, so nothing is dropped. Other failures become retryable errors (network, outages: the
//! bridge tries again later) or permanent ones (a chat that does not exist), never a lost question.

use crate::keyboard::{keyboard, message_text, resolved_text};
use crate::{Redactor, SURFACE};
use askbridge_core::identity::numeric_ids_on;
use askbridge_core::{Channel, Error, Identity, Question, Target};
use async_trait::async_trait;
use std::future::Future;
use teloxide::prelude::*;
use teloxide::types::{MessageId, UserId};
use teloxide::{ApiError, RequestError};

/// How many 429s in a row one call waits out before handing the failure to the bridge's retry.
const RATE_LIMIT_WAITS: u32 = 10;

/// Sends and edits questions' messages.
#[derive(Clone, Debug)]
pub(crate) struct TelegramChannel {
    bot: Bot,
    redactor: Redactor,
}

/// Runs a Bot API call, waiting out rate limits.
pub(crate) async fn with_rate_limit<T, F, Fut>(
    redactor: &Redactor,
    mut call: F,
) -> Result<T, RequestError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, RequestError>>,
{
    let mut waits = 0;
    loop {
        match call().await {
            Err(RequestError::RetryAfter(seconds)) if waits < RATE_LIMIT_WAITS => {
                waits += 1;
                tracing::info!(retry_after = %seconds, "Telegram rate limit; waiting");
                tokio::time::sleep(seconds.duration()).await;
            }
            Err(error) => {
                tracing::debug!(error = %redactor.clean(&error.to_string()), "Bot API call failed");
                return Err(error);
            }
            Ok(value) => return Ok(value),
        }
    }
}

/// A Bot API call that failed: teloxide's error kept whole, shown in words without the token.
///
/// This is the source of a Telegram delivery failure ([`askbridge_core::error::Delivery`]); the
/// bridge may downcast to it and read [`BotApiError::request_error`]. Its `Display` and `Debug`
/// are teloxide's words cleaned of the token, and its `source()` is `None`: teloxide's words
/// already say the causes, and reqwest's would carry the token in a URL.
pub struct BotApiError {
    text: String,
    error: RequestError,
}

impl BotApiError {
    fn new(redactor: &Redactor, error: RequestError) -> Self {
        BotApiError {
            text: redactor.clean(&error.to_string()),
            error,
        }
    }

    /// teloxide's error (its `Display` and `Debug` may hold the bot token: log
    /// [`BotApiError`] itself).
    pub fn request_error(&self) -> &RequestError {
        &self.error
    }
}

impl std::fmt::Display for BotApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::fmt::Debug for BotApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BotApiError").field(&self.text).finish()
    }
}

impl std::error::Error for BotApiError {}

/// Maps a Bot API failure to the bridge's retryable/permanent distinction.
pub(crate) fn to_model_error(redactor: &Redactor, error: RequestError) -> Error {
    let retryable = match &error {
        RequestError::Network(_)
        | RequestError::RetryAfter(_)
        | RequestError::InvalidJson { .. }
        | RequestError::Io(_) => true,
        RequestError::MigrateToChatId(new_id) => {
            return Error::permanent(
                SURFACE,
                format!("the group became a supergroup; use the target telegram:{new_id}"),
            );
        }
        // Errors Telegram names (a chat that does not exist, a bot blocked or kicked, a message
        // gone) will not change; unnamed ones (a 5xx with a JSON body) may pass.
        RequestError::Api(ApiError::Unknown(_)) => true,
        RequestError::Api(_) => false,
    };
    let error = BotApiError::new(redactor, error);
    if retryable {
        Error::retryable(SURFACE, error)
    } else {
        Error::permanent(SURFACE, error)
    }
}

/// The message id a show returned (see [`Channel::show`]).
fn message_of(shown: &str) -> Result<MessageId, Error> {
    shown
        .parse::<i32>()
        .map(MessageId)
        .map_err(|_| Error::permanent(SURFACE, format!("`{shown}` is not a Telegram message id")))
}

/// The chat id in a `telegram:<chat id>` target.
pub(crate) fn chat_of(target: &Target) -> Result<ChatId, Error> {
    target
        .address()
        .and_then(|address| address.parse::<i64>().ok())
        .map(ChatId)
        .ok_or_else(|| {
            Error::permanent(
                SURFACE,
                format!("`{target}` is not a telegram:<chat id> target"),
            )
        })
}

impl TelegramChannel {
    pub(crate) fn new(bot: Bot, redactor: Redactor) -> Self {
        TelegramChannel { bot, redactor }
    }

    /// Replaces a message's text, and its keyboard with `markup`; without one, Telegram removes
    /// the keyboard.
    async fn edit(
        &self,
        chat: ChatId,
        message: MessageId,
        text: String,
        markup: Option<teloxide::types::InlineKeyboardMarkup>,
    ) -> Result<(), Error> {
        let result = with_rate_limit(&self.redactor, || {
            let edit = self.bot.edit_message_text(chat, message, text.clone());
            match &markup {
                Some(markup) => edit.reply_markup(markup.clone()).send(),
                None => edit.send(),
            }
        })
        .await;
        match result {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(error) => Err(to_model_error(&self.redactor, error)),
        }
    }
}

#[async_trait]
impl Channel for TelegramChannel {
    fn surface(&self) -> &str {
        SURFACE
    }

    async fn show(&self, question: &Question, target: &Target) -> Result<String, Error> {
        let chat = chat_of(target)?;
        let text = message_text(question);
        let markup = keyboard(question, &[]);
        let sent = with_rate_limit(&self.redactor, || {
            self.bot
                .send_message(chat, text.clone())
                .reply_markup(markup.clone())
                .send()
        })
        .await
        .map_err(|error| to_model_error(&self.redactor, error))?;
        tracing::info!(question_id = %question.id, %target, message_id = sent.id.0, "question shown on Telegram");
        Ok(sent.id.0.to_string())
    }

    async fn withdraw(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), Error> {
        let chat = chat_of(target)?;
        let message = message_of(shown)?;
        self.edit(chat, message, resolved_text(question), None)
            .await?;
        tracing::info!(question_id = %question.id, %target, "question withdrawn on Telegram");
        Ok(())
    }

    async fn say(&self, target: &Target, text: &str) -> Result<(), Error> {
        let chat = chat_of(target)?;
        let (text, entities) = code_entities(text);
        with_rate_limit(&self.redactor, || {
            with_entities(self.bot.send_message(chat, text.clone()), &entities).send()
        })
        .await
        .map(drop)
        .map_err(|error| to_model_error(&self.redactor, error))
    }

    /// The question's message redrawn as it stands (a quorum's progress), keyboard kept.
    async fn refresh(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), Error> {
        let chat = chat_of(target)?;
        let message = message_of(shown)?;
        let markup = Some(keyboard(question, &[]));
        self.edit(chat, message, message_text(question), markup)
            .await
    }

    /// A reply to the question's message, mentioning its Telegram answerers by user id.
    async fn remind(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
        text: &str,
        mention: &[Identity],
    ) -> Result<(), Error> {
        let chat = chat_of(target)?;
        let people: Vec<UserId> = numeric_ids_on(mention, SURFACE)
            .into_iter()
            .map(UserId)
            .collect();
        let to = shown.parse::<i32>().ok().map(MessageId);
        self.reply_mentioning(chat, to, text, &people).await?;
        tracing::info!(question_id = %question.id, %target, "reminder sent on Telegram");
        Ok(())
    }
}

impl TelegramChannel {
    /// Replaces a shown message with `question`'s outcome (as [`Channel::withdraw`]).
    pub(crate) async fn withdraw_message(
        &self,
        question: &Question,
        chat: ChatId,
        message: MessageId,
    ) -> Result<(), Error> {
        self.edit(chat, message, resolved_text(question), None)
            .await
    }

    /// Redraws a multi-choice keyboard with `selection` chosen (after a toggle tap).
    pub(crate) async fn redraw(
        &self,
        question: &Question,
        chat: ChatId,
        message: MessageId,
        selection: &[usize],
    ) -> Result<(), Error> {
        let result = with_rate_limit(&self.redactor, || {
            self.bot
                .edit_message_reply_markup(chat, message)
                .reply_markup(keyboard(question, selection))
                .send()
        })
        .await;
        match result {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(error) => Err(to_model_error(&self.redactor, error)),
        }
    }

    /// Sends the bridge's `reply` in `chat` as a reply to `to`, with its buttons when it has
    /// some (a form's next field).
    pub(crate) async fn answer(
        &self,
        chat: ChatId,
        to: Option<MessageId>,
        reply: &askbridge_core::Reply,
    ) -> Result<(), Error> {
        let markup = (!reply.buttons.is_empty()).then(|| {
            crate::keyboard::keyboard_of(reply.buttons.clone(), askbridge_core::Kind::Form, false)
        });
        self.reply_with(chat, to, &reply.text, &[], markup).await
    }

    async fn reply_mentioning(
        &self,
        chat: ChatId,
        to: Option<MessageId>,
        text: &str,
        people: &[UserId],
    ) -> Result<(), Error> {
        self.reply_with(chat, to, text, people, None).await
    }

    async fn reply_with(
        &self,
        chat: ChatId,
        to: Option<MessageId>,
        text: &str,
        people: &[UserId],
        markup: Option<teloxide::types::InlineKeyboardMarkup>,
    ) -> Result<(), Error> {
        // Room for the mentions (at most ten) when there are any.
        let room = if people.is_empty() { 0 } else { 400 };
        let text = askbridge_core::render::shorten(text, crate::keyboard::MESSAGE_LIMIT - room);
        let (mut text, mut entities) = code_entities(&text);
        for (n, person) in people.iter().take(10).enumerate() {
            text.push_str(if n == 0 { "\n👤 " } else { ", " });
            let label = format!("user {person}");
            let offset = text.encode_utf16().count();
            entities.push(teloxide::types::MessageEntity::text_mention_id(
                *person,
                offset,
                label.encode_utf16().count(),
            ));
            text.push_str(&label);
        }
        with_rate_limit(&self.redactor, || {
            let request = with_entities(self.bot.send_message(chat, text.clone()), &entities);
            let request = match to {
                Some(to) => request.reply_parameters(
                    teloxide::types::ReplyParameters::new(to).allow_sending_without_reply(),
                ),
                None => request,
            };
            match &markup {
                Some(markup) => request.reply_markup(markup.clone()).send(),
                None => request.send(),
            }
        })
        .await
        .map(drop)
        .map_err(|error| to_model_error(&self.redactor, error))
    }
}

/// `request` with `entities`, if there are any.
fn with_entities(
    request: teloxide::requests::JsonRequest<teloxide::payloads::SendMessage>,
    entities: &[teloxide::types::MessageEntity],
) -> teloxide::requests::JsonRequest<teloxide::payloads::SendMessage> {
    if entities.is_empty() {
        request
    } else {
        request.entities(entities.to_vec())
    }
}

/// askbridge's replies mark commands and quoted input with backticks. Telegram shows them
/// literally without a parse mode, and with a Markdown parse mode a person's text could break
/// the message ("can't parse entities"). So each backtick pair becomes a `code` entity — offsets
/// in UTF-16 units, as Telegram counts — and the backticks go: whatever the text holds, the
/// message is sent as it is. A backtick without a partner stays as it is.
pub(crate) fn code_entities(text: &str) -> (String, Vec<teloxide::types::MessageEntity>) {
    let mut out = String::with_capacity(text.len());
    let mut entities = Vec::new();
    let mut utf16 = 0usize;
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let Some(length) = rest[open + 1..].find('`') else {
            break;
        };
        let (before, code) = (&rest[..open], &rest[open + 1..open + 1 + length]);
        out.push_str(before);
        utf16 += before.encode_utf16().count();
        let code_units = code.encode_utf16().count();
        if code_units > 0 {
            entities.push(teloxide::types::MessageEntity::code(utf16, code_units));
        }
        out.push_str(code);
        utf16 += code_units;
        rest = &rest[open + 1 + length + 1..];
    }
    out.push_str(rest);
    (out, entities)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backtick_pairs_become_code_entities() {
        let (text, entities) = code_entities("Type `/answer k3f9 2` or `🚀` now; a lone ` stays");
        assert_eq!(text, "Type /answer k3f9 2 or 🚀 now; a lone ` stays");
        let spans: Vec<(usize, usize)> = entities.iter().map(|e| (e.offset, e.length)).collect();
        // The rocket is two UTF-16 units.
        assert_eq!(spans, [(5, 14), (23, 2)]);
        assert_eq!(code_entities("plain").1, []);
    }
}
