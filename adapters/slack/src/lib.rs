//! askbridge's Slack channel, on slack-morphism.
//!
//! A question becomes one message of Block Kit blocks: the prompt, the numbered options and the
//! commands to type, with buttons (or a select menu) whose every `value` is the plain-text command
//! it stands for (`/answer <id> 2`), so a click and a typed command take the same path through the
//! bridge's [`Inbox`]. When the question is resolved anywhere, the message is updated: the
//! elements go and the text says what happened.
//!
//! Slack reaches askbridge over Socket Mode (WebSocket connections opened with the app-level
//! token: no public URL needed, and every replica connects, Slack spreading deliveries over them)
//! or over HTTP (Events API, interactivity and slash commands, each request signed with the app's
//! signing secret). Both hand the same payloads to one dispatch.
//!
//! # Layout
//!
//! - `lib.rs`: [`Slack`], connecting (`auth.test`).
//! - `api.rs`: Web API calls over reqwest, answers read for the fields used (binary size).
//! - `blocks.rs`: the blocks of a question, Slack's limits, mrkdwn escaping.
//! - `sending.rs`: the [`Channel`] side: posting and updating, with rate limits waited out and
//!   failures mapped to retryable or permanent errors.
//! - `inbound/`: what a delivery (click, slash command, event) means, and when it may be
//!   acknowledged; shared by both transports (`inbound/event.rs`: which events count).
//! - `http.rs`: the routes Slack posts to in HTTP mode, their signature checked.
//! - `socket.rs`: Socket Mode: connecting, reconnecting, acknowledging envelopes.
//! - `modals.rs`: the modals for a rejection's reason, an approval's edited arguments and a whole
//!   form, and their submissions; `inputs.rs`: a form field's input, at its initial value.

mod api;
mod batch;
pub mod blocks;
mod http;
mod inbound;
mod inputs;
mod limits;
pub mod modals;
mod sending;
mod socket;

use api::Client;
use askbridge_core::{Channel, Inbox, Secret};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

pub use http::{
    COMMANDS_PATH, EVENTS_PATH, INTERACTIONS_PATH, RETRY_HEADER, SIGNATURE_HEADER,
    TIMESTAMP_HEADER, sign,
};
pub use sending::SlackApiError;

/// The surface name, and the prefix of targets and identities (`slack:<id>`).
pub const SURFACE: &str = "slack";
/// Slack's Web API.
pub const DEFAULT_API_URL: &str = "https://slack.com/api";
/// The longest an answer to Slack (a request's 200, a modal submission's body) waits for its
/// claim: Slack gives up after 3 s.
pub(crate) const CLAIM_WAIT: Duration = Duration::from_secs(2);

/// Everything that can go wrong connecting to Slack.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `SLACK_API_URL` is not a URL.
    #[error("SLACK_API_URL `{0}` is not an http(s) URL")]
    BadApiUrl(String),
    /// The HTTPS client could not be set up (no TLS backend).
    #[error("cannot set up the HTTPS client for Slack's Web API: {0}")]
    Tls(String),
    /// Slack refused the token.
    #[error(
        "Slack refused SLACK_BOT_TOKEN ({0}); copy the Bot User OAuth Token (xoxb-...) from the app's OAuth & Permissions page"
    )]
    Unauthorized(String),
    /// Slack could not be reached (after retries).
    #[error("cannot reach the Slack Web API: {0}")]
    Unreachable(SlackApiError),
    /// Slack refused the app-level token when asked for a Socket Mode connection.
    #[error(
        "Slack refused SLACK_APP_TOKEN ({0}); copy an App-Level Token (xapp-...) with the connections:write scope from the app's Basic Information page"
    )]
    AppTokenRefused(SlackApiError),
}

/// How to reach Slack.
#[derive(Clone)]
pub struct SlackOptions {
    /// The bot token (`xoxb-...`).
    pub bot_token: Secret,
    /// The app-level token (`xapp-...`): Socket Mode, when set.
    pub app_token: Option<Secret>,
    /// The app's signing secret, which every request Slack posts is signed with: HTTP mode's
    /// routes, when set.
    pub signing_secret: Option<Secret>,
    /// A Web API base other than Slack's (a proxy, or a test fake), like `http://127.0.0.1:9/api`.
    pub api_url: Option<String>,
}

impl std::fmt::Debug for SlackOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackOptions")
            .field("bot_token", &"***")
            .field("app_token", &self.app_token.as_ref().map(|_| "***"))
            .field(
                "signing_secret",
                &self.signing_secret.as_ref().map(|_| "***"),
            )
            .field("api_url", &self.api_url)
            .finish()
    }
}

/// A connected Slack app: its channel and its routes.
#[derive(Clone)]
pub struct Slack {
    client: Arc<Client>,
    /// The bot's own user id: its mentions are stripped, its messages ignored.
    bot_user: Arc<str>,
    app_token: Option<Secret>,
    signing_secret: Option<Secret>,
}

impl std::fmt::Debug for Slack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slack")
            .field("bot_user", &self.bot_user)
            .finish_non_exhaustive()
    }
}

impl Slack {
    /// Checks the token with `auth.test` (retrying a few times while Slack is unreachable).
    pub async fn connect(options: SlackOptions) -> Result<Self, Error> {
        let api_url = options
            .api_url
            .clone()
            .unwrap_or_else(|| DEFAULT_API_URL.to_owned());
        let api_url = api_url.trim_end_matches('/').to_owned();
        if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
            return Err(Error::BadApiUrl(api_url));
        }
        // Plain http only for a base named explicitly (a local proxy, a test fake): Slack's own
        // is https.
        let client = Client::new(api_url, options.bot_token.clone())
            .map_err(|e| Error::Tls(e.to_string()))?;
        let client = Arc::new(client);
        let mut delay = Duration::from_millis(500);
        let me = loop {
            match sending::call("auth.test", "", || client.auth_test()).await {
                Ok(me) => break me,
                Err(error) if !error.is_retryable() => {
                    return Err(Error::Unauthorized(error.to_string()));
                }
                Err(error) if delay < Duration::from_secs(8) => {
                    tracing::warn!(%error, "cannot reach Slack yet; retrying");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(error) => return Err(Error::Unreachable(error)),
            }
        };
        let mode = match (&options.app_token, &options.signing_secret) {
            (Some(_), Some(_)) => "socket and http",
            (Some(_), None) => "socket",
            (None, Some(_)) => "http",
            (None, None) => "sending only",
        };
        tracing::info!(bot_user = %me.user_id, team = %me.team, mode, "connected to Slack's Web API");
        Ok(Slack {
            client,
            bot_user: me.user_id.into(),
            app_token: options.app_token,
            signing_secret: options.signing_secret,
        })
    }

    /// The bot's user id.
    pub fn bot_user(&self) -> &str {
        &self.bot_user
    }

    /// The [`Channel`] that shows questions in Slack channels.
    pub fn channel(&self) -> Arc<dyn Channel> {
        Arc::new(sending::SlackChannel::new(Arc::clone(&self.client)))
    }

    /// Routes for askbridge's HTTP server: `/slack/events`, `/slack/interactions` and
    /// `/slack/commands`, each checking Slack's signature; none without a signing secret.
    pub fn routes(&self, inbox: Arc<dyn Inbox>) -> axum::Router {
        match &self.signing_secret {
            Some(secret) => http::router(self.clone(), secret.clone(), inbox),
            None => axum::Router::new(),
        }
    }

    /// Whether Socket Mode is on (an app-level token was given).
    pub fn uses_socket_mode(&self) -> bool {
        self.app_token.is_some()
    }

    /// Receives over Socket Mode until `shutdown` turns true, reconnecting (with backoff) on
    /// Slack's `disconnect` and on dropped sockets. Returns at once without an app-level token;
    /// fails only when Slack refuses the token (retrying cannot fix that).
    pub async fn run_socket(
        &self,
        inbox: Arc<dyn Inbox>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<(), Error> {
        let Some(token) = &self.app_token else {
            return Ok(());
        };
        socket::run(self.clone(), token.clone(), inbox, shutdown).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_secrets() {
        let options = SlackOptions {
            bot_token: Secret::new("xoxb-topsecret"),
            app_token: Some(Secret::new("xapp-topsecret")),
            signing_secret: Some(Secret::new("signing-topsecret")),
            api_url: None,
        };
        let printed = format!("{options:?}");
        assert!(!printed.contains("topsecret"), "{printed}");
    }
}
