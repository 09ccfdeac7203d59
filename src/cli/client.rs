//! Talking to a running askbridge over its HTTP API: the client the `pending`, `audit`, `ask`,
//! `confirm`, `approve` and `exec` commands share, and the first two of them.
//!
//! It reads only `ASKBRIDGE_URL` (else `http://` + `ASKBRIDGE_HTTP_ADDR`, else
//! `http://127.0.0.1:8080`) and `ASKBRIDGE_API_TOKEN`: a script on another machine needs
//! nothing of the server's configuration.

use super::{AuditArgs, PendingArgs, Remote};
use anyhow::{Context, bail};
use askbridge::config;
use askbridge_core::audit::AuditEntry;
use askbridge_core::{Question, render};
use serde_json::Value;
use std::time::Duration;

/// A running askbridge's API.
#[derive(Clone, Debug)]
pub(crate) struct Api {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

/// A failure talking to the API: the server could not be reached, or it refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
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
    #[error("askbridge answered {status}: {message}")]
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

impl Api {
    /// The API named by `remote` and the environment.
    pub(crate) fn new(remote: &Remote) -> anyhow::Result<Self> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let base = match &remote.url {
            Some(url) => url.clone(),
            None => format!(
                "http://{}",
                env(config::HTTP_ADDR).unwrap_or_else(|| "127.0.0.1:8080".into())
            ),
        };
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!("--url `{base}` is not an http:// or https:// URL");
        }
        Ok(Api {
            base: base.trim_end_matches('/').to_owned(),
            token: env(config::API_TOKEN),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .build()
                .context("cannot build an HTTP client")?,
        })
    }

    /// The base URL.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// The token, if any.
    pub(crate) fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// GETs `path` with `query`; `timeout` bounds the whole request.
    pub(crate) async fn get_within(
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
    pub(crate) async fn get(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Value, ApiError> {
        self.get_within(path, query, Duration::from_secs(60)).await
    }

    /// POSTs `body` as JSON to `path`.
    pub(crate) async fn post(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
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

/// `askbridge pending`.
pub(crate) async fn pending(args: PendingArgs) -> anyhow::Result<()> {
    let query = [("session_id", args.session.clone().unwrap_or_default())];
    let body = Api::new(&args.remote)?
        .get("/api/questions", &query)
        .await?;
    let questions: Vec<Question> =
        serde_json::from_value(body["questions"].clone()).context("unexpected answer shape")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&questions)?);
        return Ok(());
    }
    print!("{}", pending_table(&questions));
    Ok(())
}

/// `askbridge audit`.
pub(crate) async fn audit(args: AuditArgs) -> anyhow::Result<()> {
    let since = match &args.since {
        Some(text) => since_param(text)?,
        None => String::new(),
    };
    let query = [
        ("session_id", args.session.clone().unwrap_or_default()),
        ("since", since),
    ];
    let body = Api::new(&args.remote)?.get("/api/audit", &query).await?;
    let entries: Vec<AuditEntry> =
        serde_json::from_value(body["entries"].clone()).context("unexpected answer shape")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(());
    }
    if entries.is_empty() {
        println!("No audit records.");
    }
    for entry in entries {
        let value = entry.value.map(|v| format!(" {v}")).unwrap_or_default();
        let status = entry.status.map(|s| format!(" {s}")).unwrap_or_default();
        let rule = entry
            .rule_id
            .map(|r| format!(" rule={r}"))
            .unwrap_or_default();
        let message = entry.message.map(|m| format!(" — {m}")).unwrap_or_default();
        println!(
            "{}  {:<12} {:<10} by {} via {}{status}{value}{rule}{message}",
            entry.at,
            serde_json::to_value(entry.event)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            entry.question_id.unwrap_or_default(),
            entry.by,
            entry.via,
        );
    }
    Ok(())
}

/// `--since`: an RFC 3339 time, or a span back from now (`30m`, `2h`, `7d`), checked here so a
/// typo is reported before any request.
fn since_param(text: &str) -> anyhow::Result<String> {
    askbridge_core::Millis::parse_since(text, askbridge_core::Millis::now())
        .map(|at| at.to_rfc3339())
        .with_context(|| {
            format!("--since `{text}` is neither an RFC 3339 time nor a span like 30m, 2h or 7d")
        })
}

fn pending_table(questions: &[Question]) -> String {
    if questions.is_empty() {
        return "No pending questions.\n".to_owned();
    }
    let now = askbridge_core::Millis::now();
    let mut out = format!(
        "{:<10}  {:<8}  {:<16}  {:<10}  {:<24}  {}\n",
        "ID", "KIND", "SESSION", "EXPIRES", "TARGETS", "PROMPT"
    );
    for q in questions {
        out.push_str(&format!(
            "{:<10}  {:<8}  {:<16}  {:<10}  {:<24}  {}\n",
            q.id,
            format!("{:?}", q.kind).to_lowercase(),
            render::shorten(&q.session_id, 16),
            render::time_left(q, now),
            render::shorten(&q.targets.join(","), 24),
            render::shorten(&q.prompt, 60),
        ));
    }
    out
}
