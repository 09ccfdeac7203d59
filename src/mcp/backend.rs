//! Where the MCP tools send their questions: a running askbridge over HTTP (`askbridge mcp`, a
//! thin stdio process an agent client launches, so many agent sessions share one bot
//! connection), or this process's bridge (`/mcp` on `askbridge serve`).

use crate::bridge::Bridge;
use askbridge_core::{NewQuestion, Question, QuestionId};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

/// What the tools need from askbridge. Errors are sentences for the model and the person
/// reading its transcript.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Asks; the question as stored (pending, or decided at once by a rule).
    async fn ask(&self, request: NewQuestion) -> Result<Question, String>;
    /// The question once resolved, or as it is after `timeout`.
    async fn wait(&self, id: &str, timeout: Duration) -> Result<Question, String>;
    /// Pending questions, of `session` when given.
    async fn pending(&self, session: Option<&str>) -> Result<Vec<Question>, String>;
}

/// This process's bridge.
#[derive(Clone, Debug)]
pub struct BridgeBackend(pub Bridge);

fn question_id(id: &str) -> Result<QuestionId, String> {
    QuestionId::parse(id).map_err(|_| format!("There is no question {id}."))
}

#[async_trait]
impl Backend for BridgeBackend {
    async fn ask(&self, request: NewQuestion) -> Result<Question, String> {
        self.0.create(request).await.map_err(|e| e.to_string())
    }

    async fn wait(&self, id: &str, timeout: Duration) -> Result<Question, String> {
        let id = question_id(id)?;
        self.0.wait(&id, timeout).await.map_err(|e| e.to_string())
    }

    async fn pending(&self, session: Option<&str>) -> Result<Vec<Question>, String> {
        let filter = crate::store::ListFilter {
            session_id: session.map(str::to_owned),
            ..crate::store::ListFilter::pending()
        };
        self.0.list(&filter).await.map_err(|e| e.to_string())
    }
}

/// A running askbridge's HTTP API.
#[derive(Clone, Debug)]
pub struct HttpBackend {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl HttpBackend {
    /// The API at `base` (`http://127.0.0.1:8080`), with `token` when it needs one.
    pub fn new(base: &str, token: Option<String>) -> Self {
        HttpBackend {
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

    /// Whether a running askbridge answers there.
    pub async fn reachable(&self) -> Result<(), String> {
        self.call(self.http.get(format!("{}/healthz", self.base)))
            .await
            .map(drop)
    }

    async fn call(&self, request: reqwest::RequestBuilder) -> Result<Value, String> {
        let request = match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        let response = request.send().await.map_err(|error| {
            format!(
                "cannot reach askbridge at {} (is `askbridge serve` running? ASKBRIDGE_URL names it): {}",
                self.base,
                error.without_url()
            )
        })?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|e| format!("askbridge answered something that is not JSON: {e}"))?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(body["error"]
                .as_str()
                .map_or_else(|| format!("askbridge answered {status}"), str::to_owned))
        }
    }

    fn question(body: Value) -> Result<Question, String> {
        serde_json::from_value(body).map_err(|e| format!("unexpected answer shape: {e}"))
    }
}

#[async_trait]
impl Backend for HttpBackend {
    async fn ask(&self, request: NewQuestion) -> Result<Question, String> {
        let body = json!(request);
        let url = format!("{}/api/questions", self.base);
        Self::question(self.call(self.http.post(url).json(&body)).await?)
    }

    async fn wait(&self, id: &str, timeout: Duration) -> Result<Question, String> {
        let url = format!("{}/api/questions/{id}/wait", self.base);
        let request = self
            .http
            .get(url)
            .query(&[("timeout_s", timeout.as_secs_f64().min(600.0))])
            .timeout(timeout + Duration::from_secs(30));
        Self::question(self.call(request).await?)
    }

    async fn pending(&self, session: Option<&str>) -> Result<Vec<Question>, String> {
        let url = format!("{}/api/questions", self.base);
        let request = self
            .http
            .get(url)
            .query(&[("session_id", session.unwrap_or_default())]);
        let body = self.call(request).await?;
        serde_json::from_value(body["questions"].clone())
            .map_err(|e| format!("unexpected answer shape: {e}"))
    }
}
