//! Sending one request to Discord, with rate limits honoured in both of serenity's modes.
//!
//! Every call is a serenity [`Request`] (serenity's routes, token header and user agent), sent one
//! of two ways:
//!
//! - **Rate limiter on** (production against discord.com): through
//!   [`Http::request`](serenity::http::Http::request), whose limiter spaces requests per bucket
//!   and waits out 429s itself.
//! - **Rate limiter off** (a proxy base in `DISCORD_API_URL`, and the tests): serenity ignores its
//!   proxy base unless the limiter is off, and then it turns a 429 into an error whose body it
//!   cannot read (Discord's rate-limit body has no `code`, so serenity's error decoding fails and
//!   `retry_after` is lost). So the request is built by serenity ([`Request::build`], exactly what
//!   `Http::request` does in this mode) and sent here, where the 429's `retry_after` is read, waited
//!   out and the request sent again.
//!
//! Either way a 429 that persists, or a wait longer than [`LONGEST_WAIT`], becomes
//! [`Error::RateLimited`], which is retryable: the bridge shows or withdraws later, nothing is lost.

use super::{REQUEST_TIMEOUT, Rest};
use crate::error::Error;
use serde::Deserialize;
use serenity::http::{HttpError, Request};
use std::time::Duration;

/// How many times one request is sent while Discord answers 429.
const MAX_ATTEMPTS: u32 = 5;
/// A 429 asking for a longer wait than this is not waited out here: the caller gets a retryable
/// error instead of a task blocked for minutes (the bridge retries shows and withdrawals itself).
const LONGEST_WAIT: Duration = Duration::from_secs(30);
/// The wait when a 429 says nothing about how long (serenity's limiter path drops the body).
const DEFAULT_WAIT: Duration = Duration::from_secs(1);

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
    /// Sends `request`, waiting out 429s; returns the body of the successful answer.
    pub(super) async fn send(
        &self,
        what: &'static str,
        request: Request<'_>,
    ) -> Result<Vec<u8>, Error> {
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
}
