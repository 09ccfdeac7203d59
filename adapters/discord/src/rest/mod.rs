//! Discord's REST API, through serenity: the endpoints the adapter calls. How a request is sent,
//! and how rate limits are honoured in both of serenity's modes, is in [`transport`].

use crate::error::{Error, Redactor};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serenity::builder::{
    CreateCommand, CreateInteractionResponse, CreateInteractionResponseFollowup, CreateMessage,
    EditInteractionResponse, EditMessage,
};
use serenity::http::{LightMethod, Request, Route};
use serenity::model::id::{ApplicationId, ChannelId, InteractionId, MessageId, UserId};
use std::sync::Arc;
use std::time::Duration;

mod transport;

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
