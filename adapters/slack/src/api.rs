//! Slack's Web API, called over reqwest: a JSON body, the token as a bearer header, and of each
//! answer only the fields askbridge reads.
//!
//! Why not slack-morphism's client: binary size. Its `hyper` feature brings a second HTTPS stack
//! (hyper-rustls with native certificates, signal-hook, its own listeners), and each of its
//! methods reads Slack's whole answer into its models: `chat.postMessage`'s carries the whole
//! message, `views.open`'s the whole view with every block type it may hold. Together that was
//! 2.8 of the 3.1 MB Slack added to the release binary, for half a dozen calls that read one or
//! two fields. reqwest is in the binary already (Discord, Telegram, webhooks); slack-morphism
//! stays for the Block Kit types the requests are made of, which are only serialized. Slack's
//! certificate is checked against webpki's roots, as Discord's and Telegram's are, and calls go
//! over HTTP/1.1.
//!
//! Slack's answers are told apart as its client did: `ok: false` (with `error`) is a refusal,
//! 429 is a rate limit with its `Retry-After`, any other status or a network failure is Slack
//! being unreachable. No error here holds the token (it travels in a header) or a URL (a
//! `response_url` is a credential for its interaction).

use askbridge_core::Secret;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The longest one Web API call may take.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// How one call failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// 429, with the wait Slack asked for.
    RateLimited(Option<Duration>),
    /// `ok: false`, with Slack's error code.
    Refused(String),
    /// No answer, or one that is not Slack's JSON (an outage's 5xx, a proxy's page).
    Unreachable(String),
}

/// The Web API client and the bot token it calls with.
pub(crate) struct Client {
    http: reqwest::Client,
    /// The Web API base, without a trailing `/`.
    base: String,
    token: Secret,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client(***)")
    }
}

/// `auth.test`'s answer: who the bot is.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Me {
    pub(crate) user_id: String,
    pub(crate) team: String,
}

/// `chat.postMessage`'s answer: the message's ts.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Posted {
    pub(crate) ts: String,
}

/// `apps.connections.open`'s answer: the Socket Mode URL.
#[derive(serde::Deserialize)]
pub(crate) struct Opened {
    pub(crate) url: String,
}

/// An answer none of whose fields is read.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Done {}

/// What every answer says: whether it worked, and if not why.
#[derive(serde::Deserialize)]
struct Envelope {
    ok: Option<bool>,
    error: Option<String>,
}

impl Client {
    /// A client of the Web API at `base` (no trailing `/`), calling with `token`.
    pub(crate) fn new(base: String, token: Secret) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder().timeout(CALL_TIMEOUT).build()?;
        Ok(Client { http, base, token })
    }

    /// `auth.test` with the bot token.
    pub(crate) async fn auth_test(&self) -> Result<Me, Failure> {
        let url = format!("{}/auth.test", self.base);
        self.send(Method::GET, &url, Some(&self.token), None::<&()>)
            .await
    }

    /// POSTs `body` to the Web API's `method` with the bot token.
    pub(crate) async fn post<RQ: Serialize, RS: DeserializeOwned>(
        &self,
        method: &str,
        body: &RQ,
    ) -> Result<RS, Failure> {
        let url = format!("{}/{method}", self.base);
        self.send(Method::POST, &url, Some(&self.token), Some(body))
            .await
    }

    /// `apps.connections.open` with the app-level token `token`.
    pub(crate) async fn open_connection(&self, token: &Secret) -> Result<Opened, Failure> {
        let url = format!("{}/apps.connections.open", self.base);
        self.send(
            Method::POST,
            &url,
            Some(token),
            Some(&serde_json::json!({})),
        )
        .await
    }

    /// POSTs `body` to an interaction's `response_url`, which needs no token.
    pub(crate) async fn respond<RQ: Serialize>(&self, url: &str, body: &RQ) -> Result<(), Failure> {
        self.send::<_, Done>(Method::POST, url, None, Some(body))
            .await
            .map(drop)
    }

    async fn send<RQ: Serialize, RS: DeserializeOwned>(
        &self,
        method: Method,
        url: &str,
        token: Option<&Secret>,
        body: Option<&RQ>,
    ) -> Result<RS, Failure> {
        let mut request = self
            .http
            .request(method, url)
            .header("accept-charset", "utf-8");
        if let Some(token) = token {
            let mut bearer = HeaderValue::try_from(format!("Bearer {}", token.expose()))
                .map_err(|_| Failure::Refused("invalid_auth".to_owned()))?;
            // Kept out of any Debug output of the request.
            bearer.set_sensitive(true);
            request = request.header(AUTHORIZATION, bearer);
        }
        if let Some(body) = body {
            let json = serde_json::to_vec(body)
                .map_err(|e| Failure::Unreachable(format!("unwritable request: {e}")))?;
            request = request
                .header(CONTENT_TYPE, "application/json; charset=utf-8")
                .body(json);
        }
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .map(Duration::from_secs);
        let body = response.bytes().await.map_err(unreachable)?;
        tracing::debug!(status = status.as_u16(), "Slack answered");
        match status {
            StatusCode::TOO_MANY_REQUESTS => Err(Failure::RateLimited(retry_after)),
            StatusCode::OK if is_json => read(&body),
            // A response_url answers `ok` in plain text.
            StatusCode::OK | StatusCode::NO_CONTENT => read(b"{}"),
            other => Err(Failure::Unreachable(format!("HTTP {}", other.as_u16()))),
        }
    }
}

/// An answer's fields, or Slack's refusal.
fn read<RS: DeserializeOwned>(body: &[u8]) -> Result<RS, Failure> {
    let unreadable = |e: serde_json::Error| Failure::Unreachable(format!("unreadable answer: {e}"));
    let envelope: Envelope = serde_json::from_slice(body).map_err(unreadable)?;
    match (envelope.ok, envelope.error) {
        (_, Some(code)) => Err(Failure::Refused(code)),
        (Some(false), None) => Err(Failure::Refused("unknown_error".to_owned())),
        _ => serde_json::from_slice(body).map_err(unreadable),
    }
}

/// A network failure in words: its kind and causes, without the URL.
fn unreachable(error: reqwest::Error) -> Failure {
    if error.is_timeout() {
        return Failure::Unreachable(format!("no answer within {} s", CALL_TIMEOUT.as_secs()));
    }
    let error = error.without_url();
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(&error);
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    Failure::Unreachable(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_told_apart_by_ok_and_error() {
        let posted: Posted = read(br#"{"ok":true,"ts":"1.2","message":{"text":"x"}}"#).unwrap();
        assert_eq!(posted.ts, "1.2");
        for refused in [
            &br#"{"ok":false,"error":"not_in_channel"}"#[..],
            br#"{"error":"not_in_channel"}"#,
        ] {
            match read::<Done>(refused) {
                Err(Failure::Refused(code)) => assert_eq!(code, "not_in_channel"),
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(
            read::<Done>(br#"{"ok":false}"#),
            Err(Failure::Refused(_))
        ));
        assert!(matches!(
            read::<Posted>(br#"{"ok":true}"#),
            Err(Failure::Unreachable(_))
        ));
        assert!(matches!(
            read::<Done>(b"<html>"),
            Err(Failure::Unreachable(_))
        ));
    }
}
