//! Discord's REST API, through serenity, with rate limits honoured in both of serenity's modes.
//!
//! Every call is a serenity [`Request`] (serenity's routes, token header and user agent), sent one
//! of two ways:
//!
//! - **Rate limiter on** (production against discord.com): through [`Http::request`], whose
//!   limiter spaces requests per bucket and waits out 429s itself.
//! - **Rate limiter off** (a proxy base in `DISCORD_API_URL`, and the tests): serenity ignores its
//!   proxy base unless the limiter is off, and then it turns a 429 into an error whose body it
//!   cannot read (Discord's rate-limit body has no `code`, so serenity's error decoding fails and
//!   `retry_after` is lost). So the request is built by serenity ([`Request::build`], exactly what
//!   `Http::request` does in this mode) and sent here, where the 429's `retry_after` is read, waited
//!   out and the request sent again.
//!
//! Either way a 429 that persists, or a wait longer than [`LONGEST_WAIT`], becomes
//! [`Error::RateLimited`], which is retryable: the bridge shows or withdraws later, nothing is lost.

use crate::error::{Error, Redactor};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serenity::builder::{
    CreateCommand, CreateInteractionResponse, CreateInteractionResponseFollowup, CreateMessage,
    EditInteractionResponse, EditMessage,
};
use serenity::http::{HttpError, LightMethod, Request, Route};
use serenity::model::id::{ApplicationId, ChannelId, InteractionId, MessageId, UserId};
use std::sync::Arc;
use std::time::Duration;

/// How many times one request is sent while Discord answers 429.
const MAX_ATTEMPTS: u32 = 5;
/// A 429 asking for a longer wait than this is not waited out here: the caller gets a retryable
/// error instead of a task blocked for minutes (the bridge retries shows and withdrawals itself).
const LONGEST_WAIT: Duration = Duration::from_secs(30);
/// The wait when a 429 says nothing about how long (serenity's limiter path drops the body).
const DEFAULT_WAIT: Duration = Duration::from_secs(1);
/// Longest time one request may take; serenity's own client has no timeout, and a hung request
/// would hold a delivery (or a click) forever.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// The reqwest client the adapter uses (and hands to serenity in production).
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .use_rustls_tls()
        .timeout(REQUEST_TIMEOUT)
        .build()
        // Building fails only if the TLS backend cannot start; a default client is still usable.
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// The REST side of the adapter.
#[derive(Clone)]
pub(crate) struct Rest {
    http: Arc<serenity::http::Http>,
    raw: reqwest::Client,
    redactor: Redactor,
}

impl std::fmt::Debug for Rest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rest")
            .field("proxy", &self.http.proxy)
            .field("ratelimiter", &self.http.ratelimiter.is_some())
            .finish_non_exhaustive()
    }
}

/// A message as Discord returns it; only the id is needed.
#[derive(Deserialize)]
struct Sent {
    id: MessageId,
}

/// The bot's own user, from `GET /users/@me`.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Me {
    pub(crate) id: UserId,
    pub(crate) username: String,
}

/// A non-success answer.
struct Failure {
    status: u16,
    code: i64,
    message: String,
    retry_after: Option<Duration>,
}

/// Discord's error body (and its rate-limit body); every field optional, as bodies vary.
#[derive(Deserialize, Default)]
struct ErrorBody {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    retry_after: Option<f64>,
}

fn seconds(value: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(value).ok()
}

impl Rest {
    pub(crate) fn new(http: Arc<serenity::http::Http>, raw: reqwest::Client) -> Self {
        let redactor = Redactor::new(http.token());
        Rest {
            http,
            raw,
            redactor,
        }
    }

    pub(crate) fn http(&self) -> &Arc<serenity::http::Http> {
        &self.http
    }

    pub(crate) fn raw_client(&self) -> &reqwest::Client {
        &self.raw
    }

    pub(crate) fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Sends `request`, waiting out 429s; returns the body of the successful answer.
    async fn send(&self, what: &'static str, request: Request<'_>) -> Result<Vec<u8>, Error> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let failure = match self.attempt(what, request.clone()).await? {
                Ok(body) => return Ok(body),
                Err(failure) => failure,
            };
            match failure.status {
                429 => {
                    let wait = failure.retry_after.unwrap_or(DEFAULT_WAIT);
                    if attempts >= MAX_ATTEMPTS || wait > LONGEST_WAIT {
                        return Err(Error::RateLimited {
                            what,
                            attempts,
                            retry_after: wait,
                        });
                    }
                    tracing::info!(
                        what,
                        attempt = attempts,
                        wait_ms = wait.as_millis() as u64,
                        "rate limited by Discord; waiting as asked"
                    );
                    tokio::time::sleep(wait).await;
                }
                401 => return Err(Error::Unauthorized(failure.message)),
                status => {
                    return Err(Error::Api {
                        what,
                        status,
                        code: failure.code,
                        message: self.redactor.clean(&failure.message),
                    });
                }
            }
        }
    }

    /// One try. The outer `Result` is a transport failure; the inner one Discord's answer.
    async fn attempt(
        &self,
        what: &'static str,
        request: Request<'_>,
    ) -> Result<Result<Vec<u8>, Failure>, Error> {
        if self.http.ratelimiter.is_some() {
            return self.attempt_through_serenity(what, request).await;
        }
        let built = request
            .build(&self.raw, self.http.token(), self.http.proxy.as_deref())
            .map_err(|error| self.build_error(error))?;
        let response = built
            .send()
            .await
            .map_err(|error| self.unreachable(what, error))?;
        let status = response.status();
        let header_wait = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<f64>().ok())
            .and_then(seconds);
        let body = response
            .bytes()
            .await
            .map_err(|error| self.unreachable(what, error))?;
        if status.is_success() {
            return Ok(Ok(body.to_vec()));
        }
        let parsed: ErrorBody = serde_json::from_slice(&body).unwrap_or_default();
        Ok(Err(Failure {
            status: status.as_u16(),
            code: parsed.code.unwrap_or(0),
            message: parsed
                .message
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned()),
            // The body's value has millisecond precision; the header is whole seconds.
            retry_after: parsed.retry_after.and_then(seconds).or(header_wait),
        }))
    }

    async fn attempt_through_serenity(
        &self,
        what: &'static str,
        request: Request<'_>,
    ) -> Result<Result<Vec<u8>, Failure>, Error> {
        match self.http.request(request).await {
            Ok(response) => {
                let body = response
                    .bytes()
                    .await
                    .map_err(|error| self.unreachable(what, error))?;
                Ok(Ok(body.to_vec()))
            }
            Err(serenity::Error::Http(HttpError::UnsuccessfulRequest(response))) => {
                Ok(Err(Failure {
                    status: response.status_code.as_u16(),
                    code: response.error.code as i64,
                    message: response.error.message,
                    retry_after: None,
                }))
            }
            Err(serenity::Error::Http(HttpError::Request(error))) => {
                Err(self.unreachable(what, error))
            }
            Err(other) => Err(Error::Unreachable {
                what,
                message: self.redactor.clean(&other.to_string()),
            }),
        }
    }

    fn unreachable(&self, what: &'static str, error: reqwest::Error) -> Error {
        let timeout = error.is_timeout();
        // Without the URL: interaction and webhook URLs carry tokens.
        let message = self.redactor.clean(&error.without_url().to_string());
        Error::Unreachable {
            what,
            message: if timeout {
                format!("no answer within {REQUEST_TIMEOUT:?} ({message})")
            } else {
                message
            },
        }
    }

    fn build_error(&self, error: serenity::Error) -> Error {
        let (variable, reason) = match &error {
            serenity::Error::Http(HttpError::Url(_)) => (
                crate::API_URL_VARIABLE,
                "not a URL like https://discord.com".to_owned(),
            ),
            serenity::Error::Http(HttpError::InvalidHeader(_)) => (
                crate::TOKEN_VARIABLE,
                "contains characters a header cannot carry".to_owned(),
            ),
            other => (
                crate::API_URL_VARIABLE,
                self.redactor.clean(&other.to_string()),
            ),
        };
        Error::Config { variable, reason }
    }

    async fn send_json(
        &self,
        what: &'static str,
        route: Route<'_>,
        method: LightMethod,
        body: &impl serde::Serialize,
    ) -> Result<Vec<u8>, Error> {
        let bytes = serde_json::to_vec(body).map_err(|error| Error::Decode {
            what,
            message: error.to_string(),
        })?;
        self.send(what, Request::new(route, method).body(Some(bytes)))
            .await
    }

    fn decode<T: DeserializeOwned>(what: &'static str, body: &[u8]) -> Result<T, Error> {
        serde_json::from_slice(body).map_err(|error| Error::Decode {
            what,
            message: error.to_string(),
        })
    }

    /// `GET /users/@me`: checks the token and names the bot.
    pub(crate) async fn me(&self) -> Result<Me, Error> {
        const WHAT: &str = "get the bot user";
        let body = self
            .send(WHAT, Request::new(Route::UserMe, LightMethod::Get))
            .await?;
        Self::decode(WHAT, &body)
    }

    /// `GET /gateway`: the websocket URL. serenity asks for it too, but falls back to Discord's
    /// real gateway when the request fails; asking first keeps a broken proxy (or a test's fake)
    /// from silently sending the bot to discord.com.
    pub(crate) async fn gateway_url(&self) -> Result<String, Error> {
        const WHAT: &str = "get the gateway URL";
        #[derive(Deserialize)]
        struct Gateway {
            url: String,
        }
        let body = self
            .send(WHAT, Request::new(Route::Gateway, LightMethod::Get))
            .await?;
        Ok(Self::decode::<Gateway>(WHAT, &body)?.url)
    }

    /// `POST /channels/{c}/messages`.
    pub(crate) async fn send_message(
        &self,
        channel_id: ChannelId,
        message: &CreateMessage,
    ) -> Result<MessageId, Error> {
        const WHAT: &str = "send a message";
        let route = Route::ChannelMessages { channel_id };
        let body = self
            .send_json(WHAT, route, LightMethod::Post, message)
            .await?;
        Ok(Self::decode::<Sent>(WHAT, &body)?.id)
    }

    /// `PATCH /channels/{c}/messages/{m}`, with the bot token: works whatever the age of the
    /// message (interaction tokens lapse after 15 minutes).
    pub(crate) async fn edit_message(
        &self,
        channel_id: ChannelId,
        message_id: MessageId,
        edit: &EditMessage,
    ) -> Result<(), Error> {
        let route = Route::ChannelMessage {
            channel_id,
            message_id,
        };
        self.send_json("edit a message", route, LightMethod::Patch, edit)
            .await
            .map(drop)
    }

    /// `POST /interactions/{id}/{token}/callback`: the first response to an interaction.
    pub(crate) async fn respond(
        &self,
        interaction_id: InteractionId,
        token: &str,
        response: &CreateInteractionResponse,
    ) -> Result<(), Error> {
        let route = Route::InteractionResponse {
            interaction_id,
            token,
        };
        self.send_json(
            "respond to an interaction",
            route,
            LightMethod::Post,
            response,
        )
        .await
        .map(drop)
    }

    /// `POST /webhooks/{app}/{token}`: a follow-up message to an acknowledged interaction.
    pub(crate) async fn follow_up(
        &self,
        application_id: ApplicationId,
        token: &str,
        message: &CreateInteractionResponseFollowup,
    ) -> Result<(), Error> {
        let route = Route::WebhookFollowupMessages {
            application_id,
            token,
        };
        self.send_json("send a follow-up", route, LightMethod::Post, message)
            .await
            .map(drop)
    }

    /// `PATCH /webhooks/{app}/{token}/messages/@original`: fills in a deferred response.
    pub(crate) async fn edit_original(
        &self,
        application_id: ApplicationId,
        token: &str,
        edit: &EditInteractionResponse,
    ) -> Result<(), Error> {
        let route = Route::WebhookOriginalInteractionResponse {
            application_id,
            token,
        };
        self.send_json(
            "edit an interaction response",
            route,
            LightMethod::Patch,
            edit,
        )
        .await
        .map(drop)
    }

    /// `PUT /applications/{app}/commands`: replaces the global application commands.
    pub(crate) async fn set_commands(
        &self,
        application_id: ApplicationId,
        commands: &[CreateCommand],
    ) -> Result<(), Error> {
        let route = Route::Commands { application_id };
        self.send_json(
            "register application commands",
            route,
            LightMethod::Put,
            &commands,
        )
        .await
        .map(drop)
    }
}
