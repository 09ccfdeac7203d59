//! askbridge's Telegram channel, on teloxide.
//!
//! A question becomes one message with the prompt, the numbered options and an inline keyboard
//! whose every button carries the plain-text command it stands for (`/answer <id> 2`), so a tap and
//! a typed command take the same path through the bridge's [`Inbox`]. When the question is resolved
//! anywhere, the message is edited: the keyboard goes and the text says what happened.
//!
//! # Layout
//!
//! - `lib.rs`: [`Telegram`], connecting and running (long polling or webhook).
//! - `keyboard.rs`: the message text and inline keyboard for a question.
//! - `sending.rs`: the [`Channel`] side: sending and editing, with Telegram's rate limits waited
//!   out and failures mapped to retryable or permanent errors.
//! - `updates.rs`: the [`Inbox`] side: which updates count, and how a tap is acknowledged.
//! - `webhook.rs`: the webhook route, its secret checked in constant time.
//!
//! The bot token sits in the URL of every Bot API call and so in errors about them; teloxide hides
//! it in network errors, and every error text this crate logs or returns passes through
//! [`Redactor`] as well.

mod keyboard;
mod sending;
mod updates;
mod webhook;

use askbridge_core::{Channel, Inbox};
use std::sync::Arc;
use std::time::Duration;
use teloxide::prelude::*;
use teloxide::types::{AllowedUpdate, BotCommand, Me};
use tokio::sync::watch;

pub use keyboard::{keyboard, message_text, resolved_text};
pub use sending::BotApiError;
pub use webhook::SECRET_HEADER;

/// The surface name, and the prefix of targets and identities (`telegram:<id>`).
pub const SURFACE: &str = "telegram";
/// Where webhook updates arrive on askbridge's HTTP server.
pub const WEBHOOK_PATH: &str = "/telegram/webhook";
/// Seconds a `getUpdates` long poll waits (teloxide's HTTP timeout is 17 s).
const POLL_TIMEOUT_S: u32 = 10;
/// The updates askbridge needs: messages (typed commands and replies), edits (to ignore them
/// explicitly) and taps.
const ALLOWED_UPDATES: [AllowedUpdate; 3] = [
    AllowedUpdate::Message,
    AllowedUpdate::EditedMessage,
    AllowedUpdate::CallbackQuery,
];

/// Everything that can go wrong in the Telegram adapter.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `TELEGRAM_API_URL` is not a URL.
    #[error("TELEGRAM_API_URL `{0}` is not a URL")]
    BadApiUrl(String),
    /// `TELEGRAM_WEBHOOK_URL` is not a URL.
    #[error("TELEGRAM_WEBHOOK_URL `{0}` is not a URL")]
    BadWebhookUrl(String),
    /// Telegram refused the token.
    #[error("Telegram refused TELEGRAM_BOT_TOKEN ({0}); check it with @BotFather")]
    Unauthorized(String),
    /// Telegram could not be reached (after retries).
    #[error("cannot reach the Telegram Bot API: {0}")]
    Unreachable(String),
}

/// Webhook mode settings.
#[derive(Clone)]
pub struct WebhookOptions {
    /// The public HTTPS URL Telegram posts to (it must route to [`WEBHOOK_PATH`]).
    pub url: String,
    /// The secret Telegram sends in `X-Telegram-Bot-Api-Secret-Token`.
    pub secret: String,
}

impl std::fmt::Debug for WebhookOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookOptions")
            .field("url", &self.url)
            .field("secret", &"***")
            .finish()
    }
}

/// How to reach Telegram.
#[derive(Clone)]
pub struct TelegramOptions {
    /// The bot token from @BotFather.
    pub token: String,
    /// A Bot API base other than Telegram's (a self-hosted Bot API server, or a test fake).
    pub api_url: Option<String>,
    /// Webhook mode; long polling when `None`.
    pub webhook: Option<WebhookOptions>,
}

impl std::fmt::Debug for TelegramOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramOptions")
            .field("token", &"***")
            .field("api_url", &self.api_url)
            .field("webhook", &self.webhook)
            .finish()
    }
}

/// Removes the bot token from text about Bot API calls.
#[derive(Clone)]
pub struct Redactor(Arc<str>);

impl Redactor {
    /// A redactor for `token`.
    pub fn new(token: &str) -> Self {
        Redactor(token.into())
    }

    /// `text` with every occurrence of the token (and of its secret half) replaced by `***`.
    pub fn clean(&self, text: &str) -> String {
        let mut cleaned = text.replace(&*self.0, "***");
        if let Some((_, secret)) = self.0.split_once(':')
            && secret.len() >= 8
        {
            cleaned = cleaned.replace(secret, "***");
        }
        cleaned
    }
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor(***)")
    }
}

/// A connected Telegram bot: its channel, its update loop, and its webhook route.
#[derive(Clone)]
pub struct Telegram {
    bot: Bot,
    me: Arc<Me>,
    redactor: Redactor,
    webhook: Option<WebhookOptions>,
}

impl std::fmt::Debug for Telegram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telegram")
            .field("bot", &self.username())
            .finish()
    }
}

impl Telegram {
    /// Checks the token with `getMe` (retrying a few times while Telegram is unreachable).
    pub async fn connect(options: TelegramOptions) -> Result<Self, Error> {
        let redactor = Redactor::new(&options.token);
        let mut bot = Bot::new(&options.token);
        if let Some(api_url) = &options.api_url {
            let url =
                reqwest::Url::parse(api_url).map_err(|_| Error::BadApiUrl(api_url.clone()))?;
            bot = bot.set_api_url(url);
        }
        if let Some(webhook) = &options.webhook {
            reqwest::Url::parse(&webhook.url)
                .map_err(|_| Error::BadWebhookUrl(webhook.url.clone()))?;
        }
        let mut delay = Duration::from_millis(500);
        let me = loop {
            match bot.get_me().await {
                Ok(me) => break me,
                Err(teloxide::RequestError::Api(error)) => {
                    return Err(Error::Unauthorized(redactor.clean(&error.to_string())));
                }
                Err(error) if delay < Duration::from_secs(8) => {
                    tracing::warn!(error = %redactor.clean(&error.to_string()), "cannot reach Telegram yet; retrying");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(error) => return Err(Error::Unreachable(redactor.clean(&error.to_string()))),
            }
        };
        tracing::info!(bot = %me.username(), privacy_mode = !me.can_read_all_group_messages, "connected to Telegram");
        // The command menu Telegram clients show; cosmetic, so a failure is only logged.
        let menu = [
            ("answer", "Answer a question: /answer <id> <choice>"),
            ("decline", "Decline a question: /decline <id> [reason]"),
            ("pending", "The questions waiting for you here"),
            ("whoami", "Your identity and this chat's target"),
            ("help", "How askbridge works"),
        ]
        .map(|(command, description)| BotCommand::new(command, description));
        if let Err(error) = bot.set_my_commands(menu).await {
            tracing::warn!(error = %redactor.clean(&error.to_string()), "cannot set the Telegram command menu");
        }
        Ok(Telegram {
            bot,
            me: Arc::new(me),
            redactor,
            webhook: options.webhook,
        })
    }

    /// The bot's username (without `@`).
    pub fn username(&self) -> &str {
        self.me.user.username.as_deref().unwrap_or_default()
    }

    /// The [`Channel`] that shows questions in Telegram chats.
    pub fn channel(&self) -> Arc<dyn Channel> {
        Arc::new(sending::TelegramChannel::new(
            self.bot.clone(),
            self.redactor.clone(),
        ))
    }

    /// Routes for askbridge's HTTP server: the webhook in webhook mode, nothing otherwise.
    pub fn routes(&self, inbox: Arc<dyn Inbox>) -> axum::Router {
        match &self.webhook {
            Some(webhook) => webhook::router(self.clone(), inbox, webhook.secret.clone()),
            None => axum::Router::new(),
        }
    }

    /// Receives updates until `shutdown` turns true: long polling, or in webhook mode, registering
    /// the webhook (updates then arrive through [`Telegram::routes`]).
    pub async fn run(
        &self,
        inbox: Arc<dyn Inbox>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<(), Error> {
        match &self.webhook {
            Some(webhook) => self.register_webhook(webhook, shutdown).await,
            None => self.poll(inbox, shutdown).await,
        }
    }

    async fn register_webhook(
        &self,
        webhook: &WebhookOptions,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<(), Error> {
        let url = reqwest::Url::parse(&webhook.url)
            .map_err(|_| Error::BadWebhookUrl(webhook.url.clone()))?;
        let mut delay = Duration::from_secs(1);
        loop {
            let request = self
                .bot
                .set_webhook(url.clone())
                .secret_token(webhook.secret.clone())
                .allowed_updates(ALLOWED_UPDATES);
            match request.await {
                Ok(_) => {
                    tracing::info!(url = %webhook.url, "Telegram webhook registered");
                    break;
                }
                Err(error) => {
                    tracing::warn!(error = %self.redactor.clean(&error.to_string()), "cannot register the Telegram webhook; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = shutdown.changed() => return Ok(()),
                    }
                    delay = (delay * 2).min(Duration::from_secs(60));
                }
            }
        }
        let _ = shutdown.wait_for(|stopped| *stopped).await;
        Ok(())
    }

    async fn poll(
        &self,
        inbox: Arc<dyn Inbox>,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<(), Error> {
        // getUpdates is refused while a webhook is set (say, by an earlier webhook-mode run).
        if let Err(error) = self.bot.delete_webhook().await {
            tracing::warn!(error = %self.redactor.clean(&error.to_string()), "cannot clear a Telegram webhook before polling");
        }
        let mut offset: i32 = 0;
        let mut delay = Duration::from_millis(500);
        loop {
            let request = self
                .bot
                .get_updates()
                .offset(offset)
                .timeout(POLL_TIMEOUT_S)
                .allowed_updates(ALLOWED_UPDATES);
            let result = tokio::select! {
                result = request => result,
                _ = shutdown.changed() => return Ok(()),
            };
            match result {
                Ok(updates) => {
                    delay = Duration::from_millis(500);
                    // The next getUpdates with a higher offset confirms these updates to Telegram,
                    // so it waits until they are handled: a crash before that re-delivers them
                    // (and the inbox drops what it had already handled, by update id). Within a
                    // batch, updates are handled concurrently.
                    let mut handling = Vec::with_capacity(updates.len());
                    for update in updates {
                        offset = offset.max(update.id.0 as i32 + 1);
                        let (telegram, inbox) = (self.clone(), Arc::clone(&inbox));
                        handling.push(tokio::spawn(async move {
                            telegram.handle_update(inbox, update).await
                        }));
                    }
                    for handler in handling {
                        if let Err(error) = handler.await {
                            tracing::error!(%error, "a Telegram update handler failed");
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %self.redactor.clean(&error.to_string()), retry_in = ?delay, "getUpdates failed");
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = shutdown.changed() => return Ok(()),
                    }
                    delay = (delay * 2).min(Duration::from_secs(30));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_never_survives_redaction() {
        let redactor = Redactor::new("123456:AAHsecretPart_xyz");
        let text = "error sending request for url (https://api.telegram.org/bot123456:AAHsecretPart_xyz/SendMessage)";
        let cleaned = redactor.clean(text);
        assert!(!cleaned.contains("AAHsecretPart_xyz"), "{cleaned}");
        assert!(cleaned.contains("bot***/SendMessage"), "{cleaned}");
        assert_eq!(
            redactor.clean("token AAHsecretPart_xyz alone"),
            "token *** alone"
        );
    }

    #[test]
    fn debug_output_hides_secrets() {
        let options = TelegramOptions {
            token: "1:topsecret-token".into(),
            api_url: None,
            webhook: Some(WebhookOptions {
                url: "https://x/telegram/webhook".into(),
                secret: "hook-secret".into(),
            }),
        };
        let printed = format!("{options:?}");
        assert!(
            !printed.contains("topsecret") && !printed.contains("hook-secret"),
            "{printed}"
        );
    }
}
