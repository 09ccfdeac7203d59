//! A client of a running askbridge's HTTP API: what the commands that talk to a running
//! askbridge (`ask`, `confirm`, `approve`, `exec`, `pending`, `audit`) and the stdio MCP server
//! share. It sends the token, and tells an unreachable server from one that refused.

use serde_json::Value;
use std::time::Duration;

/// A running askbridge's API.
#[derive(Clone, Debug)]
pub struct ApiClient {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

/// A failure talking to the API: the server could not be reached, or it refused.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No connection (the message names the URL).
    #[error(
        "cannot reach askbridge at {base} (is `askbridge serve` running? set --url or ASKBRIDGE_URL): {source}"
    )]
    Unreachable {
        /// The base URL tried.
        base: String,
        /// Why.
        source: reqwest::Error,
    },
    /// The server answered with an error.
    #[error(
        "askbridge answered {status}: {}",
        askbridge_core::text::printable(message)
    )]
    Refused {
        /// The HTTP status.
        status: u16,
        /// Its `error` text.
        message: String,
        /// The whole body.
        body: Value,
    },
    /// The answer was not JSON.
    #[error("askbridge answered something that is not JSON ({0})")]
    NotJson(reqwest::Error),
}

impl ApiClient {
    /// The API at `base` (`http://127.0.0.1:8080`), sending `token` when given.
    pub fn new(base: &str, token: Option<String>) -> Self {
        ApiClient {
            base: base.trim_end_matches('/').to_owned(),
            token,
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .build()
                .expect("the HTTP client builds"),
        }
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The token, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// GETs `path` with `query`; `timeout` bounds the whole request.
    pub async fn get_within(
        &self,
        path: &str,
        query: &[(&str, String)],
        timeout: Duration,
    ) -> Result<Value, ApiError> {
        let request = self
            .http
            .get(format!("{}{path}", self.base))
            .query(query)
            .timeout(timeout);
        self.send(request).await
    }

    /// GETs `path` with `query`.
    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, ApiError> {
        self.get_within(path, query, Duration::from_secs(60)).await
    }

    /// POSTs `body` as JSON to `path`.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .json(body)
            .timeout(Duration::from_secs(60));
        self.send(request).await
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value, ApiError> {
        let request = match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        let response = request
            .send()
            .await
            .map_err(|source| ApiError::Unreachable {
                base: self.base.clone(),
                source,
            })?;
        let status = response.status();
        let body: Value = response.json().await.map_err(ApiError::NotJson)?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(ApiError::Refused {
                status: status.as_u16(),
                message: body["error"].as_str().unwrap_or("no detail").to_owned(),
                body,
            })
        }
    }
}
