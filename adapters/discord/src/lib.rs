//! askbridge's Discord channel, on serenity.
//!
//! A question shown in `discord:<channel id>` is one message: the prompt, the detail and the
//! options as text, and components whose custom_ids are the plain-text commands a person could
//! type (`/answer <id> 2`, `/decline <id>`), so a click, a selection, a slash command and a typed
//! message all reach the bridge as the same text through [`Inbox::handle`]. Nothing here decides
//! what an answer means or who may give it; the bridge does, once, for every surface.
//!
//! - [`Discord::channel`] is the bridge's side: show, withdraw (edit the message to its outcome and
//!   remove its components, with the bot token, so it works long after interaction tokens lapse),
//!   say.
//! - [`Discord::run`] connects to the gateway: clicks and selections are acknowledged first (a
//!   deferred update, within Discord's 3-second limit) and then handled; typed messages are
//!   handled and answered in the channel; `/answer` and `/pending` are registered as application
//!   commands, with autocompletion of the sender's pending ids.
//! - [`Discord::routes`] serves the same interactions over HTTP (`POST /discord/interactions`)
//!   for bots configured with an interactions endpoint URL, checking Discord's Ed25519 signature
//!   and the freshness of its timestamp.
//!
//! REST calls go through `rest/` (the endpoints in `rest/mod.rs`; `rest/transport.rs` sends
//! them), which keeps serenity's rate limiter in production and waits out 429s itself when the
//! limiter is off (a proxy base, the tests). Errors never carry the bot token or interaction
//! tokens (see [`Error`]).
//!
//! Tests hand [`Discord::with_http`] a serenity `Http` pointed at a fake Discord; serenity is
//! re-exported so that they build it with the very version this crate uses.

mod batch;
mod edits;
mod endpoint;
mod error;
mod events;
mod layout;
mod paging;
mod parts;
mod rest;

pub use error::Error;
pub use serenity;

use askbridge_core::{Channel, Inbox, Question, Target};
use serenity::all::{ChannelId, GatewayIntents, UserId};
use serenity::builder::CreateMessage;
use serenity::http::{Http, HttpBuilder};
use serenity::interactions_endpoint::Verifier;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::watch;

/// The surface name, and the prefix of targets and identities (`discord:<id>`).
pub const SURFACE: &str = "discord";
/// Where the HTTP interactions endpoint is served.
pub const INTERACTIONS_PATH: &str = "/discord/interactions";

pub(crate) const TOKEN_VARIABLE: &str = "DISCORD_BOT_TOKEN";
pub(crate) const API_URL_VARIABLE: &str = "DISCORD_API_URL";
pub(crate) const PUBLIC_KEY_VARIABLE: &str = "DISCORD_PUBLIC_KEY";

/// Longest wait between attempts to (re)connect to the gateway.
const MAX_GATEWAY_BACKOFF: Duration = Duration::from_secs(60);

/// The gateway events askbridge needs: guild channels exist (GUILDS), messages in them and in
/// DMs, and their text (MESSAGE_CONTENT is privileged: it must be enabled in the developer
/// portal, or typed commands in guild channels arrive empty; DMs and mentions are exempt).
pub fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
}

/// Settings of [`Discord::connect`].
#[derive(Clone, Default)]
pub struct DiscordOptions {
    /// The bot token (`DISCORD_BOT_TOKEN`).
    pub token: String,
    /// Another API base than `https://discord.com` (`DISCORD_API_URL`): a proxy, or a fake. REST
    /// and gateway discovery go there, with serenity's rate limiter off (serenity ignores the base
    /// otherwise); 429s are still waited out.
    pub api_url: Option<String>,
    /// The application's public key, hex (`DISCORD_PUBLIC_KEY`); enables the HTTP interactions
    /// endpoint.
    pub public_key: Option<String>,
}

impl std::fmt::Debug for DiscordOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscordOptions")
            .field("token", &"***")
            .field("api_url", &self.api_url)
            .field("public_key", &self.public_key)
            .finish()
    }
}

/// The Discord adapter. Cheap to clone; every clone shares one connection state.
#[derive(Clone)]
pub struct Discord {
    core: Arc<Core>,
}

impl std::fmt::Debug for Discord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discord")
            .field("rest", &self.core.rest)
            .field("endpoint", &self.core.verifier.is_some())
            .finish_non_exhaustive()
    }
}

/// What every part of the adapter shares.
pub(crate) struct Core {
    pub(crate) rest: rest::Rest,
    /// The bot's user id, from READY (to recognise mentions of the bot).
    pub(crate) bot: OnceLock<UserId>,
    /// Set once the application commands are registered (READY comes again on re-identify).
    pub(crate) commands_registered: std::sync::atomic::AtomicBool,
    pub(crate) verifier: Option<Verifier>,
}

impl Discord {
    /// The production adapter: serenity's `Http` with its rate limiter on and Discord's own base,
    /// or, with `api_url`, that base with the limiter off. Checks the token with `GET /users/@me`:
    /// a refused token is an error; Discord being unreachable is only a warning (the gateway loop
    /// and the bridge's retries carry on when it is back).
    pub async fn connect(options: DiscordOptions) -> Result<Self, Error> {
        let token = options.token.trim();
        if token.is_empty() || token.chars().any(char::is_whitespace) {
            return Err(Error::Config {
                variable: TOKEN_VARIABLE,
                reason: "a bot token is one word without spaces".to_owned(),
            });
        }
        let raw = rest::client();
        let mut builder = HttpBuilder::new(token).client(raw.clone());
        if let Some(url) = &options.api_url {
            let url = url.trim().trim_end_matches('/');
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(Error::Config {
                    variable: API_URL_VARIABLE,
                    reason: format!("`{url}` is not an http(s) URL"),
                });
            }
            builder = builder.proxy(url).ratelimiter_disabled(true);
        }
        let mut discord = Discord::from_parts(Arc::new(builder.build()), raw);
        if let Some(key) = &options.public_key {
            discord = discord.with_public_key(key)?;
        }
        match discord.core.rest.me().await {
            Ok(me) => tracing::info!(bot = %me.username, bot_id = %me.id, "Discord token accepted"),
            Err(Error::Unauthorized(message)) => return Err(Error::Unauthorized(message)),
            Err(error) => {
                tracing::warn!(%error, "cannot check the Discord token now; carrying on")
            }
        }
        Ok(discord)
    }

    /// An adapter over a serenity `Http` built by the caller (tests point one at a fake Discord:
    /// `HttpBuilder::new(token).proxy(base).ratelimiter_disabled(true)`).
    pub fn with_http(http: Arc<Http>) -> Self {
        Discord::from_parts(http, rest::client())
    }

    fn from_parts(http: Arc<Http>, raw: reqwest::Client) -> Self {
        Discord::from_rest(rest::Rest::new(http, raw), None)
    }

    fn from_rest(rest: rest::Rest, verifier: Option<Verifier>) -> Self {
        Discord {
            core: Arc::new(Core {
                rest,
                bot: OnceLock::new(),
                commands_registered: std::sync::atomic::AtomicBool::new(false),
                verifier,
            }),
        }
    }

    /// Enables the HTTP interactions endpoint with the application's public key (64 hex digits).
    /// Call it before [`Discord::run`]: the result is a new adapter.
    pub fn with_public_key(self, public_key: &str) -> Result<Self, Error> {
        let verifier = endpoint::verifier(public_key)?;
        Ok(Discord::from_rest(self.core.rest.clone(), Some(verifier)))
    }

    /// The bridge's side: surface `discord`, targets `discord:<channel id>`.
    pub fn channel(&self) -> Arc<dyn Channel> {
        Arc::new(self.clone())
    }

    /// The HTTP interactions endpoint at `POST /discord/interactions` when a public key is set;
    /// an empty router otherwise.
    pub fn routes(&self, inbox: Arc<dyn Inbox>) -> axum::Router {
        endpoint::routes(self.core.clone(), inbox)
    }

    /// Runs the gateway client until `shutdown` turns true, reconnecting with backoff when the
    /// connection fails. Returns an error only for what reconnecting cannot fix (a refused token,
    /// intents the application may not use).
    pub async fn run(
        &self,
        inbox: Arc<dyn Inbox>,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<(), Error> {
        let mut backoff = Duration::from_secs(1);
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            let started = tokio::time::Instant::now();
            let ended = self.run_once(inbox.clone(), &mut shutdown).await;
            // A session that stayed up a while was no failure to connect: start backing off anew.
            if started.elapsed() > MAX_GATEWAY_BACKOFF {
                backoff = Duration::from_secs(1);
            }
            match ended {
                Ok(Ended::Shutdown) => return Ok(()),
                Ok(Ended::Disconnected) => {
                    tracing::warn!(retry_in = ?backoff, "Discord gateway client stopped; reconnecting");
                }
                Err(error) if error.is_retryable() => {
                    tracing::warn!(%error, retry_in = ?backoff, "cannot connect to the Discord gateway; will retry");
                }
                Err(error) => {
                    tracing::error!(%error, "Discord gateway stopped");
                    return Err(error);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stopped(&mut shutdown) => return Ok(()),
            }
            backoff = (backoff * 2).min(MAX_GATEWAY_BACKOFF);
        }
    }

    async fn run_once(
        &self,
        inbox: Arc<dyn Inbox>,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<Ended, Error> {
        let rest = &self.core.rest;
        let url = rest.gateway_url().await?;
        tracing::debug!(url = %rest.redactor().clean(&url), "Discord gateway URL");
        // serenity's client wants an `Http` of its own; it uses it only to discover the gateway.
        // Built the same way as ours (base, limiter), sharing its connection pool.
        let http = rest.http();
        let mut builder = HttpBuilder::new(http.token())
            .client(rest.raw_client().clone())
            .ratelimiter_disabled(http.ratelimiter.is_none());
        if let Some(proxy) = &http.proxy {
            builder = builder.proxy(proxy.clone());
        }
        let handler = events::Handler::new(self.core.clone(), inbox);
        let mut client = serenity::client::ClientBuilder::new_with_http(builder.build(), intents())
            .event_handler(handler)
            .await
            .map_err(|error| gateway_error(rest.redactor(), error))?;
        let manager = client.shard_manager.clone();
        tokio::select! {
            result = client.start() => match result {
                Ok(()) => Ok(Ended::Disconnected),
                Err(error) => Err(gateway_error(rest.redactor(), error)),
            },
            _ = stopped(shutdown) => {
                manager.shutdown_all().await;
                Ok(Ended::Shutdown)
            }
        }
    }

    fn target_channel(target: &Target) -> Result<ChannelId, Error> {
        let id = match (target.surface(), target.address()) {
            (SURFACE, Some(address)) => address.parse::<u64>().ok().filter(|id| *id != 0),
            _ => None,
        };
        id.map(ChannelId::new)
            .ok_or_else(|| Error::BadTarget(target.to_string()))
    }
}

/// Resolves when `shutdown` turns true (or its sender is gone). The receiver's guard is dropped
/// here, so that callers may await after it (it is not `Send`).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// How one gateway session ended.
enum Ended {
    Shutdown,
    Disconnected,
}

fn gateway_error(redactor: &error::Redactor, error: serenity::Error) -> Error {
    use serenity::gateway::GatewayError;
    match error {
        serenity::Error::Gateway(GatewayError::InvalidAuthentication) => {
            Error::Unauthorized("the gateway refused the bot token".to_owned())
        }
        serenity::Error::Gateway(
            gateway
            @ (GatewayError::DisallowedGatewayIntents | GatewayError::InvalidGatewayIntents),
        ) => Error::Gateway(format!(
            "{gateway}: enable the Message Content intent for the bot in the developer portal"
        )),
        other => Error::Unreachable {
            what: "the gateway",
            message: redactor.clean(&other.to_string()),
        },
    }
}

#[async_trait::async_trait]
impl Channel for Discord {
    fn surface(&self) -> &str {
        SURFACE
    }

    async fn show(
        &self,
        question: &Question,
        target: &Target,
    ) -> Result<String, askbridge_core::Error> {
        let channel_id = Discord::target_channel(target)?;
        let message = layout::question_message(question, channel_id.get());
        match self.core.rest.send_message(channel_id, &message).await {
            Ok(message_id) => {
                tracing::info!(question_id = %question.id, %target, message_id = %message_id, "question shown on Discord");
                Ok(message_id.to_string())
            }
            Err(error) => {
                tracing::warn!(question_id = %question.id, %target, %error, "cannot show question on Discord");
                Err(error.into())
            }
        }
    }

    async fn withdraw(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), askbridge_core::Error> {
        let edit = layout::outcome_edit(question);
        self.edit_shown(question, target, shown, &edit).await
    }

    async fn refresh(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), askbridge_core::Error> {
        let edit = layout::progress_edit(question);
        self.edit_shown(question, target, shown, &edit).await
    }

    async fn say(&self, target: &Target, text: &str) -> Result<(), askbridge_core::Error> {
        let channel_id = Discord::target_channel(target)?;
        let message = CreateMessage::new()
            .content(layout::fit(text))
            .allowed_mentions(layout::no_pings());
        self.core
            .rest
            .send_message(channel_id, &message)
            .await
            .map(drop)
            .map_err(|error| {
                tracing::warn!(%target, %error, "cannot say on Discord");
                error.into()
            })
    }

    /// A reply to the question's message, pinging its Discord answerers (and nobody else).
    async fn remind(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
        text: &str,
        mention: &[askbridge_core::Identity],
    ) -> Result<(), askbridge_core::Error> {
        let channel_id = Discord::target_channel(target)?;
        let people = askbridge_core::identity::numeric_ids_on(mention, SURFACE);
        let to = shown.parse::<u64>().ok().filter(|id| *id != 0);
        let message = layout::reminder_message(text, channel_id.get(), to, &people);
        self.core.rest.send_message(channel_id, &message).await?;
        tracing::info!(question_id = %question.id, %target, "reminder sent on Discord");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_discord_channel_ids() {
        assert_eq!(
            Discord::target_channel(&"discord:42".into()).unwrap().get(),
            42
        );
        for bad in [
            "discord:",
            "discord:0",
            "discord:abc",
            "telegram:42",
            "console",
        ] {
            assert!(
                matches!(
                    Discord::target_channel(&Target::new(bad.to_string())),
                    Err(Error::BadTarget(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn options_never_print_the_token() {
        let options = DiscordOptions {
            token: "secret-token".into(),
            ..DiscordOptions::default()
        };
        assert!(!format!("{options:?}").contains("secret-token"));
    }
}
