//! Where the MCP tools send their questions: a running askbridge over HTTP (`askbridge mcp`, a
//! thin stdio process an agent client launches, so many agent sessions share one bot
//! connection), or this process's bridge (`/mcp` on `askbridge serve`).

use crate::bridge::Bridge;
use crate::client::{ApiClient, ApiError};
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

/// An error as the model reads it: with its causes (an error's `Display` leaves them out).
fn chained(error: crate::Error) -> String {
    askbridge_core::error::Chain(&error).to_string()
}

fn question_id(id: &str) -> Result<QuestionId, String> {
    QuestionId::parse(id).map_err(|_| format!("There is no question {id}."))
}

#[async_trait]
impl Backend for BridgeBackend {
    async fn ask(&self, request: NewQuestion) -> Result<Question, String> {
        self.0.create(request).await.map_err(chained)
    }

    async fn wait(&self, id: &str, timeout: Duration) -> Result<Question, String> {
        let id = question_id(id)?;
        self.0.wait(&id, timeout).await.map_err(chained)
    }

    async fn pending(&self, session: Option<&str>) -> Result<Vec<Question>, String> {
        let filter = crate::store::ListFilter {
            session_id: session.map(str::to_owned),
            ..crate::store::ListFilter::pending()
        };
        self.0.list(&filter).await.map_err(chained)
    }
}

/// A running askbridge's HTTP API.
#[derive(Clone, Debug)]
pub struct HttpBackend(ApiClient);

impl HttpBackend {
    /// Asks through `api`.
    pub fn new(api: ApiClient) -> Self {
        HttpBackend(api)
    }

    /// Whether a running askbridge answers there.
    pub async fn reachable(&self) -> Result<(), String> {
        self.0.get("/healthz", &[]).await.map(drop).map_err(said)
    }
}

/// An API failure in words: the server's own when it refused, else what went wrong.
fn said(error: ApiError) -> String {
    match error {
        ApiError::Refused { message, .. } => message,
        other => other.to_string(),
    }
}

fn question(body: Value) -> Result<Question, String> {
    serde_json::from_value(body).map_err(|e| format!("unexpected answer shape: {e}"))
}

#[async_trait]
impl Backend for HttpBackend {
    async fn ask(&self, request: NewQuestion) -> Result<Question, String> {
        question(
            self.0
                .post("/api/questions", &json!(request))
                .await
                .map_err(said)?,
        )
    }

    async fn wait(&self, id: &str, timeout: Duration) -> Result<Question, String> {
        let seconds = timeout.as_secs_f64().min(600.0);
        let query = [("timeout_s", seconds.to_string())];
        let path = format!("/api/questions/{id}/wait");
        let body = self
            .0
            .get_within(&path, &query, timeout + Duration::from_secs(30))
            .await
            .map_err(said)?;
        question(body)
    }

    async fn pending(&self, session: Option<&str>) -> Result<Vec<Question>, String> {
        let query = [("session_id", session.unwrap_or_default().to_owned())];
        let body = self.0.get("/api/questions", &query).await.map_err(said)?;
        serde_json::from_value(body["questions"].clone())
            .map_err(|e| format!("unexpected answer shape: {e}"))
    }
}
