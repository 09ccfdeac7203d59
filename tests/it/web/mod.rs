//! The ops page, end to end in headless Chromium: questions asked over HTTP appear live, every
//! kind is answered with real clicks and key presses, answers made elsewhere update the page,
//! refusals are shown in the server's words, the page survives a crash and restart of askbridge,
//! the token prompt, filters, and a screenshot of it all (`target/test-artifacts/ops-page.png`).
//!
//! Most tests run the real `askbridge serve` binary; those that need chat targets (telegram,
//! discord) serve the app in-process over fake channels, since no chat platform is reachable here.
//!
//! By feature: `live` (a page kept up to date, through a crash and a shutdown), `answering` (every
//! kind, refusals, quorums and forms answered on the page), `views` (screenshots and filters) and
//! `token` (the token prompt). Here: the API and page helpers they share.

use crate::cdp::{Browser, Page, artifacts_dir};
use crate::support::{FakeChannel, Process, eventually_some, http, serve_api};
use askbridge::Bridge;
use askbridge::bridge::Attempt;
use askbridge::core::{Actor, Answer, Question, QuestionId, Transition, render};
use askbridge::store::memory::MemoryStore;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

mod answering;
mod batch;
mod live;
mod token;
mod views;

/// The HTTP API of the askbridge under test.
#[derive(Clone)]
pub(crate) struct Api {
    pub(crate) base: String,
    token: Option<String>,
}

impl Api {
    fn new(base: &str) -> Api {
        Api {
            base: base.to_owned(),
            token: None,
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = http().request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Asks `body` (session `web` unless given); returns the id.
    pub(crate) async fn ask(&self, mut body: Value) -> String {
        if body.get("session_id").is_none() {
            body["session_id"] = json!("web");
        }
        let response = self
            .request(reqwest::Method::POST, "/api/questions")
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let question: Value = response.json().await.unwrap();
        assert_eq!(status, 201, "{question}");
        question["id"].as_str().unwrap().to_owned()
    }

    async fn question(&self, id: &str) -> Question {
        self.request(reqwest::Method::GET, &format!("/api/questions/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .request(reqwest::Method::POST, path)
            .json(&body)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    pub(crate) async fn reply(&self, id: &str, answer: Value) -> (u16, Value) {
        self.post(
            &format!("/api/questions/{id}/reply"),
            json!({ "answer": answer }),
        )
        .await
    }

    /// The question once it has left pending (a click's request may still be in flight).
    async fn resolved(&self, id: &str) -> Question {
        eventually_some(
            Duration::from_secs(10),
            &format!("{id} to be resolved"),
            || async move {
                let question = self.question(id).await;
                (!question.is_pending()).then_some(question)
            },
        )
        .await
    }
}

/// askbridge served in-process over a memory store, with fake Telegram and Discord channels so
/// that questions can target chats.
pub(crate) struct InProcess {
    pub(crate) api: Api,
    pub(crate) bridge: Bridge,
}

pub(crate) async fn in_process() -> InProcess {
    in_process_with(|builder| builder).await
}

/// [`in_process`], running `flows`.
pub(crate) async fn in_process_running(flows: askbridge::Flows) -> InProcess {
    in_process_with(|builder| builder.runner(Arc::new(flows))).await
}

async fn in_process_with(
    set_up: impl FnOnce(askbridge::BridgeBuilder) -> askbridge::BridgeBuilder,
) -> InProcess {
    let builder = Bridge::builder(Arc::new(MemoryStore::default()))
        .channel(FakeChannel::new("telegram"))
        .channel(FakeChannel::new("discord"));
    let bridge = set_up(builder).start().await.unwrap();
    let base = serve_api(bridge.clone()).await;
    InProcess {
        api: Api::new(&base),
        bridge,
    }
}

fn serve_ephemeral() -> Process {
    Process::spawn(&["serve", "--ephemeral"], &[])
}

const LIVE: &str = "document.getElementById('connection').dataset.state === 'live'";

/// A new tab on the ops page, connected to the event stream.
pub(crate) async fn open(browser: &Browser, base: &str) -> Page {
    let page = browser.new_page().await;
    page.goto(&format!("{base}/")).await;
    page.wait_for("the page to connect", LIVE).await;
    page
}

pub(crate) fn js(value: &str) -> String {
    json!(value).to_string()
}

/// The pending card of `id`, shown: its text.
pub(crate) fn pending_card(id: &str) -> String {
    format!(
        "(() => {{ const c = document.getElementById({});
            return c && c.closest('#pending') && !c.hidden && c.dataset.status === 'pending'
                ? c.innerText : null }})()",
        js(&format!("q-{id}"))
    )
}

/// The outcome line of `id` in "recently resolved", once it is there.
fn resolved_outcome(id: &str) -> String {
    format!(
        "(() => {{ const c = document.getElementById({});
            return c && c.closest('#resolved') && !c.hidden
                ? c.querySelector('.outcome').textContent : null }})()",
        js(&format!("q-{id}"))
    )
}

/// The notice (refusal, error) on the card of `id`, wherever the card is.
fn card_notice(id: &str) -> String {
    format!(
        "(() => {{ const c = document.getElementById({});
            const n = c && c.querySelector('.notice');
            return n && n.dataset.kind === 'error' ? n.textContent : null }})()",
        js(&format!("q-{id}"))
    )
}

/// Clicks the `tag` element reading `text` in the card of `id`, with the mouse.
async fn click_text(page: &Page, id: &str, tag: &str, text: &str) {
    let marker = format!("{id}-{}", text.replace(|c: char| !c.is_alphanumeric(), "_"));
    let found = page
        .eval(&format!(
            "(() => {{ const c = document.getElementById({card});
                const el = c && [...c.querySelectorAll({tag})].find(e => e.textContent.trim() === {text});
                if (!el) return false;
                el.dataset.testClick = {marker};
                return true }})()",
            card = js(&format!("q-{id}")),
            tag = js(tag),
            text = js(text),
            marker = js(&marker),
        ))
        .await;
    if found != json!(true) {
        page.fail(&format!("no {tag} reading {text:?} on the card of {id}"))
            .await;
    }
    page.click(&format!("[data-test-click=\"{marker}\"]")).await;
}

/// Waits until `id` is in "recently resolved" and checks it reads as askbridge's own outcome
/// line for the question as the API returns it.
async fn shows_outcome(page: &Page, api: &Api, id: &str) -> Question {
    let question = api.resolved(id).await;
    let expected = render::outcome_line(&question);
    let shown = page
        .wait_for(&format!("{id} in recently resolved"), &resolved_outcome(id))
        .await;
    assert_eq!(shown, json!(expected), "the page's words are render.rs's");
    question
}

fn value_of(question: &Question) -> Option<&Answer> {
    question.resolution.as_ref().and_then(|r| r.value.as_ref())
}

/// Writes past the test harness's capture (which keeps `println!` to itself unless a test
/// fails), so that `cargo test` says where the screenshots are.
pub(crate) fn shown_in_test_output(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
