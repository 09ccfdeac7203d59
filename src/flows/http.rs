//! Flows in any language: a flow that is an HTTP endpoint.
//!
//! For each turn of a run, askbridge POSTs
//! `{"run_id", "flow", "input", "journal": [...], "origin": {...}}`, signed with
//! `X-Askbridge-Signature` (see [`crate::signing`]). The endpoint answers with one of
//! `{"reply": "text"}` (the run is done; the text is posted in its chat), `{"ask": {question}}`
//! (the fields of `POST /api/questions`; askbridge registers it, the run waits, and the endpoint is
//! called again with the answer in the journal), or `{"error": "text"}` (the run failed). The
//! endpoint holds nothing between calls: everything it learned is in the journal it receives, so a
//! Python agent can wait hours for a person without a thread, a process or a socket.

use super::{BoxFuture, Flow, FlowContext, FlowResult, Interrupt};
use crate::signing;
use askbridge_core::{Millis, NewQuestion, Secret};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

/// Attempts per call when the endpoint is unreachable or answers 5xx.
const ATTEMPTS: u32 = 3;

/// See the module documentation.
#[derive(Clone)]
pub struct HttpFlow {
    name: String,
    url: String,
    secret: Secret,
    client: reqwest::Client,
}

impl std::fmt::Debug for HttpFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpFlow")
            .field("name", &self.name)
            .field("url", &self.url)
            .finish()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Turn {
    #[serde(default)]
    reply: Option<String>,
    #[serde(default)]
    ask: Option<NewQuestion>,
    #[serde(default)]
    error: Option<String>,
}

impl HttpFlow {
    /// The flow `name` served at `url`, its requests signed with `secret`.
    pub fn new(name: &str, url: &str, secret: Secret) -> Self {
        HttpFlow {
            name: name.to_owned(),
            url: url.to_owned(),
            secret,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("the HTTP client builds"),
        }
    }

    async fn call(&self, body: &[u8]) -> Result<Turn, Interrupt> {
        let mut delay = Duration::from_secs(1);
        let mut attempt = 1;
        loop {
            let signature = signing::sign(self.secret.expose().as_bytes(), Millis::now(), body);
            let sent = self
                .client
                .post(&self.url)
                .header("content-type", "application/json")
                .header(signing::SIGNATURE_HEADER, signature)
                .body(body.to_vec())
                .send()
                .await;
            let retryable = match &sent {
                Err(_) => true,
                Ok(response) => response.status().is_server_error(),
            };
            if retryable && attempt < ATTEMPTS {
                tracing::warn!(flow = %self.name, attempt, "flow endpoint unavailable; retrying");
                tokio::time::sleep(delay).await;
                delay *= 2;
                attempt += 1;
                continue;
            }
            let response = sent.map_err(|e| {
                Interrupt::fail(format!(
                    "cannot reach the flow endpoint: {}",
                    e.without_url()
                ))
            })?;
            let status = response.status();
            if !status.is_success() {
                return Err(Interrupt::fail(format!(
                    "the flow endpoint answered {status}"
                )));
            }
            return response.json::<Turn>().await.map_err(|e| {
                Interrupt::fail(format!(
                    "the flow endpoint's answer is not reply/ask/error JSON: {e}"
                ))
            });
        }
    }
}

impl Flow for HttpFlow {
    fn run(&self, ctx: FlowContext) -> BoxFuture<FlowResult> {
        let flow = self.clone();
        Box::pin(async move {
            let Some(run_id) = ctx.run_id() else {
                return Err(Interrupt::fail(
                    "HTTP flows run from chats or POST /api/runs, not in blocking mode",
                ));
            };
            let body = json!({
                "run_id": run_id,
                "flow": flow.name,
                "input": ctx.input(),
                "journal": ctx.journal(),
                "origin": ctx.origin(),
            });
            let body = serde_json::to_vec(&body).expect("the request serialises");
            match flow.call(&body).await? {
                Turn {
                    reply: Some(reply), ..
                } => Ok(reply),
                Turn {
                    error: Some(error), ..
                } => Err(Interrupt::fail(error)),
                Turn {
                    ask: Some(question),
                    ..
                } => {
                    // The endpoint read the whole journal: what it asks now is the next question.
                    ctx.fast_forward();
                    match ctx.ask(question).await {
                        Ok(_) => Err(Interrupt::fail("a new question cannot be answered already")),
                        Err(interrupt) => Err(interrupt),
                    }
                }
                _ => Err(Interrupt::fail(
                    "the flow endpoint's answer had no reply, ask or error",
                )),
            }
        })
    }

    fn may_run_ahead(&self) -> bool {
        // Every turn is a call to the endpoint: one made ahead and dropped would be sent twice.
        false
    }

    fn description(&self) -> String {
        // Not the URL: `/help` is shown to everyone in a chat, and URLs can carry credentials.
        "(a flow served over HTTP)".to_owned()
    }
}
