//! The ops page, end to end in headless Chromium: questions asked over HTTP appear live, every
//! kind is answered with real clicks and key presses, answers made elsewhere update the page,
//! refusals are shown in the server's words, the page survives a crash and restart of askbridge,
//! the token prompt, filters, and a screenshot of it all (`target/test-artifacts/ops-page.png`).
//!
//! Most tests run the real `askbridge serve` binary; those that need chat targets (telegram,
//! discord) serve the app in-process over fake channels, since no chat platform is reachable here.

use crate::cdp::{Browser, Page, artifacts_dir};
use crate::support::{FakeChannel, Process, eventually_some, http, serve_api};
use askbridge::Bridge;
use askbridge::bridge::Attempt;
use askbridge::core::{Actor, Answer, Question, QuestionId, Transition, render};
use askbridge::store::memory::MemoryStore;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_over_http_appears_without_a_reload() {
    let server = serve_ephemeral();
    let api = Api::new(&server.base);
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    page.wait_for(
        "the empty state",
        "document.getElementById('pending-empty').innerText === 'No pending questions.'",
    )
    .await;
    page.eval("window.noReloadMarker = 'still the same document'")
        .await;

    // Question text is data, never markup.
    let prompt = "Ship <b>v2</b>? <img src=x onerror=\"document.title='owned'\">";
    let id = api
        .ask(json!({
            "session_id": "deploy-42",
            "prompt": prompt,
            "detail": "Line one\nLine two & <script>alert(1)</script>",
            "options": ["dayjs", "date-fns", "luxon"],
            "timeout_s": 600,
        }))
        .await;
    let text = page
        .wait_for("the new card", &pending_card(&id))
        .await
        .as_str()
        .unwrap()
        .to_owned();
    for expected in [
        prompt,
        "Line one\nLine two & <script>alert(1)</script>",
        "deploy-42",
        "anyone who can see it",
        "none (the API and this page)",
    ] {
        assert!(text.contains(expected), "{expected:?} not in {text:?}");
    }
    let markup = page
        .eval(&format!(
            "(() => {{ const c = document.getElementById({});
                return [c.querySelectorAll('img, b, script').length, document.title,
                        c.querySelector('.badge').textContent,
                        [...c.querySelectorAll('.options button')].map(b => b.textContent)] }})()",
            js(&format!("q-{id}"))
        ))
        .await;
    assert_eq!(
        markup,
        json!([
            0,
            "askbridge · pending questions",
            "Choose one",
            ["dayjs", "date-fns", "luxon"]
        ])
    );
    assert_eq!(
        page.eval("document.getElementById('pending-count').textContent")
            .await,
        "(1)"
    );

    // The countdown is live: it reads minutes and seconds and moves on its own.
    let countdown = format!("document.querySelector('#q-{id} .countdown').textContent");
    let first = page.eval(&countdown).await;
    let first = first.as_str().unwrap().to_owned();
    assert!(
        first.starts_with("Expires in 9:5") || first == "Expires in 10:00",
        "{first}"
    );
    page.wait_for(
        "the countdown to tick",
        &format!("{countdown} !== {}", js(&first)),
    )
    .await;

    // A second question, while the page is open, lands in order of deadline: sooner first.
    let sooner = api
        .ask(json!({"prompt": "Sooner?", "kind": "confirm", "timeout_s": 300}))
        .await;
    page.wait_for("the second card", &pending_card(&sooner))
        .await;
    assert_eq!(
        page.eval("[...document.querySelectorAll('#pending > .card')].map(c => c.dataset.id)")
            .await,
        json!([sooner, id])
    );
    assert_eq!(
        page.eval("window.noReloadMarker").await,
        "still the same document",
        "the page was not reloaded"
    );

    // Reminders and escalation steps are on the card, with what each step adds.
    let nudged = api
        .ask(
            json!({"prompt": "Nudged?", "timeout_s": 3600, "remind_after_s": 600, "reminders": 2,
            "escalate": [{"after_s": 1200, "answerers": ["api"]}]}),
        )
        .await;
    let text = page
        .wait_for("the nudged card", &pending_card(&nudged))
        .await;
    let text = text.as_str().unwrap();
    for expected in [
        "Reminders",
        "2 at most, every 10 min 0 s unanswered",
        "Escalation 1",
        "at ",
        "api may answer",
    ] {
        assert!(text.contains(expected), "{expected:?} not in {text:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_can_be_answered_on_the_page() {
    let server = serve_ephemeral();
    let api = Api::new(&server.base);
    let ask = api
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "date-fns", "luxon"]}))
        .await;
    let multi = api
        .ask(json!({"prompt": "Which regions?", "options": ["eu", "us", "asia"], "multi": true}))
        .await;
    let free = api.ask(json!({"prompt": "Release name?"})).await;
    let custom = api
        .ask(json!({"prompt": "Which ORM?", "options": ["diesel", "sqlx"], "allow_custom": true}))
        .await;
    let yes = api
        .ask(json!({"kind": "confirm", "prompt": "Archive 87 emails?", "detail": "Newsletters only."}))
        .await;
    let no = api
        .ask(json!({"kind": "confirm", "prompt": "Delete the backups?"}))
        .await;
    let declined = api
        .ask(json!({"prompt": "Deploy now?", "options": ["now", "tonight"]}))
        .await;
    let once = api
        .ask(json!({"kind": "approval", "prompt": "Run migrations?", "answerers": ["api"], "action": {"tool": "shell", "args": {"command": "diesel migration run"}}}))
        .await;
    let always = api
        .ask(json!({"kind": "approval", "prompt": "Read the logs?", "answerers": ["api"], "action": {"tool": "shell", "args": {"command": "tail -n 100 app.log"}}}))
        .await;
    let rejected = api
        .ask(json!({"kind": "approval", "prompt": "Drop the table?", "answerers": ["api"], "action": {"tool": "shell", "args": {"command": "DROP TABLE users"}}}))
        .await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    for id in [
        &ask, &multi, &free, &custom, &yes, &no, &declined, &once, &always, &rejected,
    ] {
        page.wait_for("every card from the replay", &pending_card(id))
            .await;
    }

    // ask: an option button.
    click_text(&page, &ask, "button", "date-fns").await;
    let q = shows_outcome(&page, &api, &ask).await;
    assert_eq!(value_of(&q), Some(&Answer::Text("date-fns".into())));
    assert_eq!(q.resolution.as_ref().unwrap().via(), "api");

    // multi: two checkboxes (by their labels), then Submit, which counts them.
    click_text(&page, &multi, "label", "asia").await;
    click_text(&page, &multi, "label", "eu").await;
    click_text(&page, &multi, "button", "Submit (2)").await;
    let q = shows_outcome(&page, &api, &multi).await;
    assert_eq!(
        value_of(&q),
        Some(&Answer::List(vec!["eu".into(), "asia".into()])),
        "in option order"
    );

    // free text: typed, then Send.
    page.type_into(&format!("#text-{free}"), "Aurora").await;
    click_text(&page, &free, "button", "Send").await;
    let q = shows_outcome(&page, &api, &free).await;
    assert_eq!(value_of(&q), Some(&Answer::Text("Aurora".into())));

    // options plus own words: the text box, submitted with Enter.
    page.type_into(&format!("#text-{custom}"), "sea-orm").await;
    page.press("Enter").await;
    let q = shows_outcome(&page, &api, &custom).await;
    assert_eq!(value_of(&q), Some(&Answer::Text("sea-orm".into())));

    // confirm, by keyboard only: Tab from the detail reaches Yes, its focus is visible, Enter
    // presses it.
    page.eval(&format!(
        "document.querySelector('#q-{yes} .detail').focus()"
    ))
    .await;
    page.press("Tab").await;
    let focused = page
        .eval(
            "(() => { const f = document.activeElement;
                return [f.tagName, f.textContent, getComputedStyle(f).outlineStyle,
                        f.matches(':focus-visible')] })()",
        )
        .await;
    assert_eq!(focused, json!(["BUTTON", "Yes", "solid", true]));
    page.press("Enter").await;
    let q = shows_outcome(&page, &api, &yes).await;
    assert_eq!(value_of(&q), Some(&Answer::Bool(true)));
    let focus_after = page
        .eval("Boolean(document.activeElement.closest('#pending > .card'))")
        .await;
    assert_eq!(
        focus_after, true,
        "focus moves to the next card when the answered one leaves, not to the top of the page"
    );

    // confirm: No.
    click_text(&page, &no, "button", "No").await;
    let q = shows_outcome(&page, &api, &no).await;
    assert_eq!(value_of(&q), Some(&Answer::Bool(false)));

    // Decline with a message.
    page.type_into(&format!("#reason-{declined}"), "not during the freeze")
        .await;
    click_text(&page, &declined, "button", "Decline").await;
    let q = shows_outcome(&page, &api, &declined).await;
    assert_eq!(q.status.as_str(), "declined");
    assert_eq!(
        q.resolution.as_ref().unwrap().message.as_deref(),
        Some("not during the freeze")
    );

    // approval: Allow once, Always allow, Reject with a reason.
    click_text(&page, &once, "button", "Allow once").await;
    let q = shows_outcome(&page, &api, &once).await;
    assert_eq!(value_of(&q), Some(&Answer::Text("once".into())));
    click_text(&page, &always, "button", "Always allow").await;
    let q = shows_outcome(&page, &api, &always).await;
    assert_eq!(value_of(&q), Some(&Answer::Text("always".into())));
    page.type_into(&format!("#reason-{rejected}"), "too risky")
        .await;
    click_text(&page, &rejected, "button", "Reject").await;
    let q = shows_outcome(&page, &api, &rejected).await;
    assert_eq!(q.status.as_str(), "declined");
    assert_eq!(
        render::outcome_line(&q),
        "Rejected: too risky (by api via api)"
    );

    page.wait_for(
        "the pending list to be empty",
        "document.getElementById('pending').children.length === 0
            && !document.getElementById('pending-empty').hidden",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_made_elsewhere_update_the_open_page() {
    let server = serve_ephemeral();
    let api = Api::new(&server.base);
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    let answered = api
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "luxon"]}))
        .await;
    let declined = api
        .ask(json!({"session_id": "other", "prompt": "Deploy?", "kind": "confirm"}))
        .await;
    let cancelled = api
        .ask(json!({"session_id": "doomed", "prompt": "Still needed?"}))
        .await;
    for id in [&answered, &declined, &cancelled] {
        page.wait_for("the card", &pending_card(id)).await;
    }

    let (status, body) = api
        .post(
            &format!("/api/questions/{answered}/reply"),
            json!({"answer": "luxon", "by": "ops:alice"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let q = shows_outcome(&page, &api, &answered).await;
    assert_eq!(
        render::outcome_line(&q),
        "Answered: luxon, by ops:alice via api"
    );
    let details = page
        .eval(&format!(
            "document.querySelector('#q-{answered} .meta').innerText"
        ))
        .await;
    let details = details.as_str().unwrap();
    for expected in ["answered", "ops:alice", "api", "web"] {
        assert!(details.contains(expected), "{expected} not in {details:?}");
    }
    let at = page
        .eval(&format!(
            "document.querySelector('#q-{answered} time').getAttribute('datetime')"
        ))
        .await;
    assert_eq!(at, json!(q.resolution.as_ref().unwrap().at.to_rfc3339()));
    page.wait_for(
        "the change announced to screen readers",
        "document.getElementById('announcer').textContent
            .includes('Answered: luxon, by ops:alice via api: Which library?')",
    )
    .await;

    let (status, _) = api
        .post(
            &format!("/api/questions/{declined}/reject"),
            json!({"message": "wrong week"}),
        )
        .await;
    assert_eq!(status, 200);
    shows_outcome(&page, &api, &declined).await;
    let (status, _) = api.post("/api/sessions/doomed/cancel", json!({})).await;
    assert_eq!(status, 200);
    shows_outcome(&page, &api, &cancelled).await;
    // Asked last so that it ends last.
    let expired = api
        .ask(json!({"prompt": "Quick one?", "kind": "confirm", "timeout_s": 0.5}))
        .await;
    let q = shows_outcome(&page, &api, &expired).await;
    assert_eq!(render::outcome_line(&q), "Expired: no answer");

    // Newest resolution first.
    assert_eq!(
        page.eval("[...document.querySelectorAll('#resolved > li')].map(li => li.dataset.id)")
            .await,
        json!([expired, cancelled, declined, answered])
    );
    // The summary line follows (it is refreshed at most every few seconds).
    let summary = page
        .wait_for(
            "the summary to count them",
            "(() => { const t = document.getElementById('summary').textContent;
                return t.includes('1 answered, 1 declined, 1 expired, 1 cancelled') ? t : null })()",
        )
        .await;
    let summary = summary.as_str().unwrap();
    assert!(summary.starts_with("0 pending · last hour:"), "{summary}");
    assert!(summary.contains("time to answer: p50 "), "{summary}");
    // A new question moves the summary with its card, not at the next refresh (at most every
    // 3 s): the count changes within a second of the event.
    let fresh = api
        .ask(json!({"prompt": "One more?", "kind": "confirm"}))
        .await;
    let card = format!("document.querySelector('[data-id=\"{fresh}\"]') !== null");
    page.wait_for("the new card", &card).await;
    page.wait_for_within(
        Duration::from_millis(1000),
        "the summary to follow the card",
        "document.getElementById('summary').textContent.startsWith('1 pending')",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_answers_are_shown_in_plain_words() {
    let server = serve_ephemeral();
    let api = Api::new(&server.base);
    let multi = api
        .ask(json!({"prompt": "Which regions?", "options": ["eu", "us"], "multi": true}))
        .await;
    let restricted = api
        .ask(json!({"prompt": "Only Bob may say", "options": ["go", "stop"], "answerers": ["telegram:42"]}))
        .await;
    let raced = api
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "luxon"]}))
        .await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    for id in [&multi, &restricted, &raced] {
        page.wait_for("the card", &pending_card(id)).await;
    }

    // 422: nothing chosen. askbridge's own words; the question stays pending and answerable.
    click_text(&page, &multi, "button", "Submit").await;
    let said = page.wait_for("the 422 words", &card_notice(&multi)).await;
    assert!(
        said.as_str().unwrap().starts_with("Choose at least one."),
        "{said}"
    );
    assert!(api.question(&multi).await.is_pending());
    page.wait_for("the card to stay", &pending_card(&multi))
        .await;
    click_text(&page, &multi, "label", "us").await;
    click_text(&page, &multi, "button", "Submit (1)").await;
    shows_outcome(&page, &api, &multi).await;

    // 403: the page answers as `api`, which is not among the answerers; the card says so up
    // front, and the refusal in askbridge's words.
    let card = page.wait_for("the card", &pending_card(&restricted)).await;
    assert!(
        card.as_str()
            .unwrap()
            .contains("telegram:42 (this page answers as api, not among them)"),
        "{card}"
    );
    click_text(&page, &restricted, "button", "go").await;
    let said = page
        .wait_for("the 403 words", &card_notice(&restricted))
        .await;
    assert_eq!(said, "You can't answer this question.");
    assert!(api.question(&restricted).await.is_pending());

    // 409: another client answers while this page's answer is on its way. The page's request
    // is held in the browser until the other answer has won, which makes the race certain.
    page.call(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "*/reply", "requestStage": "Request"}]}),
    )
    .await;
    let mut events = page.events();
    click_text(&page, &raced, "button", "dayjs").await;
    let paused = events
        .next("Fetch.requestPaused", Duration::from_secs(10))
        .await;
    assert!(
        paused["request"]["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/api/questions/{raced}/reply")),
        "{paused}"
    );
    let (status, _) = api.reply(&raced, json!("luxon")).await;
    assert_eq!(status, 200, "the other client wins");
    let outcome = page
        .wait_for(
            "the winner on the page while the click is held",
            &resolved_outcome(&raced),
        )
        .await;
    assert_eq!(outcome, "Answered: luxon, by api via api");
    page.call(
        "Fetch.continueRequest",
        json!({"requestId": paused["requestId"]}),
    )
    .await;
    let said = page.wait_for("the 409 words", &card_notice(&raced)).await;
    assert_eq!(said, "Already answered: luxon, by api via api");
    page.call("Fetch.disable", json!({})).await;
    let q = api.question(&raced).await;
    assert_eq!(value_of(&q), Some(&Answer::Text("luxon".into())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_reconnects_after_askbridge_is_killed_and_restarted() {
    let data = tempfile::tempdir().unwrap();
    let env = [("ASKBRIDGE_DATA_DIR", data.path().display().to_string())];
    let mut server = Process::spawn(&["serve"], &env);
    let port = server.port();
    let api = Api::new(&server.base);
    let before = api
        .ask(json!({"prompt": "Survives a crash?", "options": ["yes", "no"]}))
        .await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    page.wait_for("the card", &pending_card(&before)).await;
    let stale = format!(
        "document.getElementById({}).dataset.stale === 'true'",
        js(&format!("q-{before}"))
    );

    // A crash: the page says it is reconnecting and marks what it shows as possibly outdated.
    server.kill();
    page.wait_for(
        "the page to notice",
        &format!(
            "document.getElementById('connection').textContent.startsWith('Reconnecting') && {stale}"
        ),
    )
    .await;
    // Back on the same port and data: the page reconnects by itself and the replay confirms
    // the question is still pending.
    let mut server = Process::spawn_at(port, &["serve"], &env);
    page.wait_for_within(
        Duration::from_secs(20),
        "the page to reconnect",
        &format!("{LIVE} && !({stale})"),
    )
    .await;
    let after = api.ask(json!({"prompt": "Asked after the restart"})).await;
    page.wait_for("a live question after reconnecting", &pending_card(&after))
        .await;

    // Again, but this time the page's reconnection is held in the browser while, on the
    // restarted askbridge, the old question is answered and a new one asked: when the page gets
    // through, it rebuilds from the replay and learns how the old one ended.
    page.call(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "*/api/events*", "requestStage": "Request"}]}),
    )
    .await;
    let mut events = page.events();
    server.kill();
    let paused = events
        .next("Fetch.requestPaused", Duration::from_secs(20))
        .await;
    let _server = Process::spawn_at(port, &["serve"], &env);
    let (status, _) = api.reply(&before, json!("yes")).await;
    assert_eq!(status, 200);
    // Twenty newer answered questions fill the page's "recently resolved" fetch (the 20 newest
    // per outcome), so only its check of the cards it already had can find how `before` ended.
    for n in 0..20 {
        let id = api
            .ask(json!({"session_id": "noise", "prompt": format!("Noise {n}")}))
            .await;
        let (status, _) = api.reply(&id, json!("ok")).await;
        assert_eq!(status, 200);
    }
    let meanwhile = api
        .ask(json!({"prompt": "Asked while the page was away", "kind": "confirm"}))
        .await;
    assert!(
        page.eval(&pending_card(&meanwhile)).await.is_null(),
        "not shown before the page reconnects"
    );
    page.call(
        "Fetch.continueRequest",
        json!({"requestId": paused["requestId"]}),
    )
    .await;
    page.call("Fetch.disable", json!({})).await;
    page.wait_for(
        "the replayed question",
        &format!("{LIVE} && {}", pending_card(&meanwhile)),
    )
    .await;
    let outcome = page
        .wait_for("the old question's outcome", &resolved_outcome(&before))
        .await;
    assert_eq!(outcome, "Answered: yes, by api via api");
    assert!(page.eval(&pending_card(&after)).await.is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_prompt_refuses_a_wrong_token_and_keeps_the_right_one() {
    let token = "s3cret-token-9f2c";
    let server = Process::spawn(
        &["serve", "--ephemeral"],
        &[("ASKBRIDGE_API_TOKEN", token.to_owned())],
    );
    let mut api = Api::new(&server.base);
    api.token = Some(token.to_owned());
    let id = api.ask(json!({"prompt": "Behind the token?"})).await;

    let browser = Browser::launch().await;
    let page = browser.new_page().await;
    page.call("Network.enable", json!({})).await;
    let mut events = page.events();
    page.goto(&format!("{}/", server.base)).await;
    let login_shown = "!document.getElementById('login').hidden
        && document.getElementById('board').hidden
        && document.activeElement === document.getElementById('token-input')";
    page.wait_for("the token prompt", login_shown).await;
    assert_eq!(
        page.eval("document.getElementById('login-message').textContent")
            .await,
        "This askbridge needs its API token (ASKBRIDGE_API_TOKEN) to show and answer questions."
    );
    assert_eq!(
        page.eval("document.getElementById('pending').children.length")
            .await,
        0
    );

    // A wrong token: said plainly, and the prompt comes back.
    page.type_into("#token-input", "not-the-token").await;
    page.press("Enter").await;
    page.wait_for(
        "the refusal",
        "document.getElementById('login-message').textContent
            === 'askbridge refused that token (wrong API token). Enter the right one.'",
    )
    .await;
    page.wait_for("the prompt again", login_shown).await;
    assert_eq!(
        page.eval("sessionStorage.length").await,
        0,
        "a refused token is not kept"
    );

    // The right one: the questions appear, and the token is kept for this browser session.
    page.type_into("#token-input", token).await;
    page.press("Enter").await;
    page.wait_for("the question", &pending_card(&id)).await;
    // Reload, holding back the list request that follows the reconnection (for the check that
    // nothing fetched with a forgotten token lands, below).
    page.call(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "*/api/questions\\?limit=1000", "requestStage": "Request"}]}),
    )
    .await;
    let mut held = page.events();
    page.goto(&format!("{}/", server.base)).await;
    let list_request = held
        .next("Fetch.requestPaused", Duration::from_secs(10))
        .await;
    page.wait_for(
        "the question after a reload, with no prompt",
        &pending_card(&id),
    )
    .await;
    assert!(
        page.eval("document.getElementById('login').hidden")
            .await
            .as_bool()
            .unwrap()
    );

    // How the token travelled: in a header, never in a URL, never on the console.
    let seen = events.drain();
    let mut authorised_streams = 0;
    for event in &seen {
        let text = event.params.to_string();
        match event.method.as_str() {
            "Network.requestWillBeSent" => {
                let request = &event.params["request"];
                let url = request["url"].as_str().unwrap();
                assert!(!url.contains(token), "the token is in a URL: {url}");
                let authorization = request["headers"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
                    .map(|(_, value)| value.clone());
                if url.ends_with("/api/events")
                    && authorization == Some(json!(format!("Bearer {token}")))
                {
                    authorised_streams += 1;
                }
            }
            "Runtime.consoleAPICalled" | "Runtime.exceptionThrown" => {
                assert!(!text.contains(token), "logged: {text}");
            }
            _ => {}
        }
    }
    assert!(
        authorised_streams >= 2,
        "the stream carried the token as a header after login and after the reload"
    );

    // Forgetting it brings the prompt back and clears the board...
    page.click("#forget-token").await;
    page.wait_for("the prompt after forgetting", login_shown)
        .await;
    assert_eq!(page.eval("sessionStorage.length").await, 0);
    let board_is_empty = format!(
        "document.getElementById('pending').children.length === 0
            && document.getElementById('resolved').children.length === 0
            && {} === null",
        pending_card(&id)
    );
    assert_eq!(page.eval(&board_is_empty).await, true);
    // ...and what was asked with the forgotten token and answers only now does not fill it again.
    page.call(
        "Fetch.continueRequest",
        json!({"requestId": list_request["requestId"]}),
    )
    .await;
    page.call("Fetch.disable", json!({})).await;
    let network_id = list_request["networkId"].clone();
    events
        .next_where("Network.loadingFinished", Duration::from_secs(10), |p| {
            p["requestId"] == network_id
        })
        .await;
    // Absence can only be watched for a while: the page handles the body within milliseconds
    // of the network finishing, so a card that was going to come back would within this time.
    let watch_until = std::time::Instant::now() + Duration::from_millis(500);
    while std::time::Instant::now() < watch_until {
        assert_eq!(
            page.eval(&board_is_empty).await,
            true,
            "an answer to the forgotten token's request filled the board"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Questions of every kind, some resolved, in two sessions and on two chat surfaces.
struct Seeded {
    ask: String,
    multi: String,
    free: String,
    confirm: String,
    approval: String,
    answered: String,
    declined: String,
    expired: String,
}

async fn seed_every_kind(server: &InProcess) -> Seeded {
    let api = &server.api;
    let ask = api
        .ask(json!({
            "session_id": "deploy-42",
            "prompt": "Which library for date formatting?",
            "detail": "The invoice module formats 14 kinds of dates. dayjs is smallest; luxon handles time zones best.",
            "options": ["dayjs", "date-fns", "luxon"],
            "allow_custom": true,
            "targets": ["telegram:-1001234", "discord:5678"],
            "timeout_s": 1800,
        }))
        .await;
    let multi = api
        .ask(json!({
            "session_id": "pricing",
            "prompt": "Which regions get the new pricing page?",
            "options": ["eu", "us", "asia"],
            "multi": true,
            "answerers": ["api", "telegram:42"],
            "targets": ["telegram:-1001234"],
            "timeout_s": 3600,
        }))
        .await;
    let free = api
        .ask(json!({
            "session_id": "deploy-42",
            "prompt": "What should release 2.4 be called?",
            "targets": ["discord:5678"],
            "timeout_s": 900,
        }))
        .await;
    let confirm = api
        .ask(json!({
            "session_id": "inbox-bot",
            "kind": "confirm",
            "prompt": "Archive all 87 emails in 'Newsletters'?",
            "default": false,
            "timeout_s": 50,
        }))
        .await;
    let approval = api
        .ask(json!({
            "session_id": "deploy-42",
            "kind": "approval",
            "prompt": "Run `terraform apply` on production?",
            "detail": "Plan: 2 to add, 1 to change, 0 to destroy.",
            "targets": ["discord:5678"],
            "answerers": ["api", "discord:1234"],
            "action": {"tool": "terraform", "args": {"command": "apply", "workspace": "production", "auto_approve": false}},
            "timeout_s": 7200,
        }))
        .await;
    let answered = api
        .ask(json!({
            "session_id": "deploy-42",
            "prompt": "Which library for parsing CSV?",
            "options": ["csv", "polars"],
            "targets": ["telegram:-1001234"],
        }))
        .await;
    let alice = Actor {
        by: "telegram:42".into(),
        by_name: Some("@alice".into()),
        via: "telegram".into(),
    };
    server
        .bridge
        .attempt(Attempt::reply(
            &QuestionId::parse(&answered).unwrap(),
            Answer::Text("csv".into()).into(),
            alice,
            &"telegram:-1001234".into(),
        ))
        .await
        .unwrap();
    let declined = api
        .ask(json!({
            "session_id": "inbox-bot",
            "kind": "confirm",
            "prompt": "Unsubscribe from 12 mailing lists?",
            "targets": ["discord:5678"],
        }))
        .await;
    let bob = Actor {
        by: "discord:1234".into(),
        by_name: Some("@bob".into()),
        via: "discord".into(),
    };
    server
        .bridge
        .attempt(Attempt::transition(
            &QuestionId::parse(&declined).unwrap(),
            Transition::Decline {
                message: Some("some of them are work lists".into()),
            },
            bob,
            &"discord:5678".into(),
        ))
        .await
        .unwrap();
    let expired = api
        .ask(json!({
            "session_id": "pricing",
            "kind": "confirm",
            "prompt": "Email the beta list now?",
            "default": false,
            "timeout_s": 0.2,
        }))
        .await;
    api.resolved(&expired).await;
    Seeded {
        ask,
        multi,
        free,
        confirm,
        approval,
        answered,
        declined,
        expired,
    }
}

/// Writes past the test harness's capture (which keeps `println!` to itself unless a test
/// fails), so that `cargo test` says where the screenshots are.
pub(crate) fn shown_in_test_output(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshot_of_every_kind_at_desktop_and_phone_width() {
    let server = in_process().await;
    let seeded = seed_every_kind(&server).await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.api.base).await;
    for id in [
        &seeded.ask,
        &seeded.multi,
        &seeded.free,
        &seeded.confirm,
        &seeded.approval,
    ] {
        page.wait_for("every pending card", &pending_card(id)).await;
    }
    for id in [&seeded.answered, &seeded.declined, &seeded.expired] {
        shows_outcome(&page, &server.api, id).await;
    }
    assert_eq!(
        page.eval(&resolved_outcome(&seeded.answered)).await,
        "Answered: csv, by @alice via telegram"
    );
    let card = page.eval(&pending_card(&seeded.multi)).await;
    assert!(
        card.as_str().unwrap().contains("api, telegram:42"),
        "{card}"
    );
    page.wait_for(
        "the summary",
        "document.getElementById('summary').textContent.startsWith('5 pending')",
    )
    .await;
    // Something ticked to a mid-state for the picture: one multi box, some typed words.
    click_text(&page, &seeded.multi, "label", "eu").await;
    page.type_into(
        &format!("#reason-{}", seeded.approval),
        "waiting for the change window",
    )
    .await;

    let path = artifacts_dir().join("ops-page.png");
    page.screenshot(&path).await;
    shown_in_test_output(&format!("ops page screenshot: {}", path.display()));

    // Phone width: nothing wider than the screen, every control still there.
    page.set_viewport(390, 844, true).await;
    page.wait_for(
        "the phone layout",
        "window.innerWidth === 390
            && document.documentElement.scrollWidth <= window.innerWidth
            && [...document.querySelectorAll('#pending button')].every(b => b.getBoundingClientRect().right <= 390)",
    )
    .await;
    let path = artifacts_dir().join("ops-page-phone.png");
    page.screenshot(&path).await;
    shown_in_test_output(&format!(
        "ops page screenshot at phone width: {}",
        path.display()
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_by_session_and_surface() {
    let server = in_process().await;
    let seeded = seed_every_kind(&server).await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.api.base).await;
    page.wait_for("every pending card", &pending_card(&seeded.approval))
        .await;
    page.wait_for("the resolved ones", &resolved_outcome(&seeded.expired))
        .await;
    let shown = "[...document.querySelectorAll('#pending > .card, #resolved > li')]
        .filter(c => !c.hidden).map(c => c.dataset.id).sort()";
    let choose = |select: &str, value: &str| {
        format!(
            "(() => {{ const s = document.getElementById({}); s.value = {};
                s.dispatchEvent(new Event('change')); return s.value }})()",
            js(select),
            js(value)
        )
    };
    let sorted = |ids: &[&String]| {
        let mut ids: Vec<&String> = ids.to_vec();
        ids.sort();
        json!(ids)
    };

    assert_eq!(
        page.eval("[...document.getElementById('filter-session').options].map(o => o.value)")
            .await,
        json!(["", "deploy-42", "inbox-bot", "pricing"])
    );
    assert_eq!(
        page.eval("[...document.getElementById('filter-surface').options].map(o => o.textContent)")
            .await,
        json!([
            "All surfaces",
            "api (no chat targets)",
            "discord",
            "telegram"
        ])
    );

    assert_eq!(
        page.eval(&choose("filter-session", "deploy-42")).await,
        "deploy-42"
    );
    assert_eq!(
        page.eval(shown).await,
        sorted(&[
            &seeded.ask,
            &seeded.free,
            &seeded.approval,
            &seeded.answered
        ])
    );
    assert_eq!(
        page.eval("document.getElementById('pending-count').textContent")
            .await,
        "(3 shown of 5)"
    );

    page.eval(&choose("filter-surface", "telegram")).await;
    assert_eq!(
        page.eval(shown).await,
        sorted(&[&seeded.ask, &seeded.answered])
    );

    page.eval(&choose("filter-session", "")).await;
    assert_eq!(
        page.eval(shown).await,
        sorted(&[&seeded.ask, &seeded.multi, &seeded.answered])
    );

    page.eval(&choose("filter-surface", "api")).await;
    assert_eq!(
        page.eval(shown).await,
        sorted(&[&seeded.confirm, &seeded.expired])
    );

    // A question arriving while a filter is on is filtered too.
    let hidden = server
        .api
        .ask(json!({"session_id": "late", "prompt": "On Discord", "targets": ["discord:5678"]}))
        .await;
    page.wait_for(
        "the count to include it",
        "document.getElementById('pending-count').textContent === '(1 shown of 6)'",
    )
    .await;
    assert_eq!(
        page.eval(&format!("document.getElementById('q-{hidden}').hidden"))
            .await,
        true
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_page_does_not_keep_askbridge_from_shutting_down() {
    let mut server = serve_ephemeral();
    let api = Api::new(&server.base);
    api.ask(json!({"prompt": "Still open in a browser"})).await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    assert!(
        server.terminate(Duration::from_secs(10)),
        "askbridge did not exit on SIGTERM with the page open"
    );
    page.wait_for(
        "the page to notice",
        "document.getElementById('connection').textContent.startsWith('Reconnecting')",
    )
    .await;
}

/// A question with a quorum on the page: its progress on the card, the page's vote (as `api`,
/// one member) counted and shown without a reload, a second vote refused in plain words, and a
/// member's "no" elsewhere ending it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_shows_its_progress_and_takes_one_vote_from_the_page() {
    let server = serve_ephemeral();
    let api = Api::new(&server.base);
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    let id = api
        .ask(
            json!({"prompt": "Ship it?", "kind": "confirm", "timeout_s": 600,
            "quorum": {"needs": 2, "of": ["api", "telegram:7"]}}),
        )
        .await;
    let text = page.wait_for("the quorum's card", &pending_card(&id)).await;
    assert!(
        text.as_str()
            .unwrap()
            .contains("0 of 2 said yes (needs 2 of api, telegram:7)"),
        "{text}"
    );
    click_text(&page, &id, "button", "Yes").await;
    let progress = format!(
        "(() => {{ const c = document.getElementById({});
            const p = c && c.querySelector('.progress'); const n = c && c.querySelector('.notice');
            return p && n && n.textContent.startsWith('Vote counted') ? p.textContent : null }})()",
        js(&format!("q-{id}"))
    );
    let shown = page
        .wait_for("the vote counted on the card", &progress)
        .await;
    assert_eq!(shown, "1 of 2 said yes: api (needs 2 of api, telegram:7)");
    click_text(&page, &id, "button", "Yes").await;
    let refused = page
        .wait_for("the second vote refused", &card_notice(&id))
        .await;
    assert!(
        refused
            .as_str()
            .unwrap()
            .contains("voted on this question already"),
        "{refused}"
    );
    let (status, _) = api
        .post(
            &format!("/api/questions/{id}/reject"),
            json!({"message": "not yet"}),
        )
        .await;
    assert_eq!(status, 200);
    let resolved = shows_outcome(&page, &api, &id).await;
    assert_eq!(
        resolved.resolution.unwrap().votes.len(),
        1,
        "the vote is listed"
    );
}

/// A form on the page: one real form with a control per field; a value that does not fit is
/// refused in askbridge's words and nothing is answered; the corrected form answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_one_real_form_on_the_page() {
    let server = serve_ephemeral();
    let api = Api::new(&server.base);
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    let id = api
        .ask(json!({"prompt": "Deploy settings?", "kind": "form", "timeout_s": 600,
            "form": {"type": "object", "properties": {
                "environment": {"type": "string", "title": "Environment", "enum": ["staging", "production"]},
                "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 10},
                "notify": {"type": "boolean", "title": "Notify the team"}},
              "required": ["environment", "replicas"]}}))
        .await;
    page.wait_for("the form's card", &pending_card(&id)).await;
    let card = js(&format!("q-{id}"));
    let controls = page
        .eval(&format!(
            "(() => {{ const f = document.getElementById({card}).querySelector('form.form-fields');
                return [...f.querySelectorAll('select, input')].map(i => i.tagName.toLowerCase() + ':' + (i.type || '') + ':' + i.name) }})()"
        ))
        .await;
    assert_eq!(
        controls,
        json!([
            "select:select-one:environment",
            "input:number:replicas",
            "input:checkbox:notify"
        ])
    );
    let fill = |replicas: u32| {
        format!(
            "(() => {{ const f = document.getElementById({card}).querySelector('form.form-fields');
                f.querySelector('[name=environment]').value = 'production';
                f.querySelector('[name=replicas]').value = '{replicas}';
                f.querySelector('[name=notify]').checked = true;
                f.querySelector('button[type=submit]').dataset.testClick = 'submit-{replicas}';
                return true }})()"
        )
    };
    page.eval(&fill(11)).await;
    page.click("[data-test-click=\"submit-11\"]").await;
    let refused = page
        .wait_for("the bad value refused", &card_notice(&id))
        .await;
    assert!(refused.as_str().unwrap().contains("Replicas"), "{refused}");
    assert!(api.question(&id).await.is_pending(), "nothing answered");
    page.eval(&fill(3)).await;
    page.click("[data-test-click=\"submit-3\"]").await;
    let answered = shows_outcome(&page, &api, &id).await;
    assert_eq!(
        serde_json::to_value(value_of(&answered)).unwrap(),
        json!({"environment": "production", "replicas": 3, "notify": true})
    );
}
