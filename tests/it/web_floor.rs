//! The ops page's second floor, end to end in headless Chromium: a waiting run appears with its
//! question linked to the question's card; a rule created by an "always" answer appears without
//! a reload and is revoked from the page; the audit view shows a stranger's refused tap; history
//! pages through 500 resolved questions; and screenshots of each view at desktop and phone width
//! (`target/test-artifacts/ops-<view>.png`, copied to `docs/` by hand).

use crate::cdp::{Browser, Page, artifacts_dir};
use crate::support::{eventually_some, http, message};
use crate::web::{InProcess, in_process, js, open, pending_card, shown_in_test_output};
use askbridge::bridge::Attempt;
use askbridge::core::{Actor, Answer, NewQuestion, Transition};
use askbridge_core::channel::Inbox as _;
use serde_json::{Value, json};
use std::time::Duration;

/// An in-process askbridge with the example flows (`release` asks three questions).
async fn with_flows() -> InProcess {
    let flows = askbridge::demo::with_example_flows(askbridge::Flows::new()).unwrap();
    crate::web::in_process_running(flows).await
}

/// Switches the open page to `view` as a person would: its tab, by keyboard.
async fn go_to(page: &Page, view: &str) {
    page.eval(&format!(
        "document.getElementById({}).focus()",
        js(&format!("tab-{view}"))
    ))
    .await;
    page.press("Enter").await;
    page.wait_for(
        &format!("the {view} view"),
        &format!(
            "!document.getElementById({}).hidden && document.getElementById({}).dataset.loaded !== undefined",
            js(&format!("view-{view}")),
            js(view)
        ),
    )
    .await;
}

fn row_count(list: &str) -> String {
    format!("document.querySelectorAll('#{list} > li').length")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_appears_and_links_to_its_question_card() {
    let server = with_flows().await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.api.base).await;
    go_to(&page, "runs").await;
    let (status, run) = server
        .api
        .post(
            "/api/runs",
            json!({"flow": "release", "input": "2.0", "wait_s": 10}),
        )
        .await;
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    let question = run["question"]["id"].as_str().unwrap().to_owned();
    // Live: the run appears without a reload, waiting, its question linked.
    let row = page
        .wait_for(
            "the waiting run",
            &format!(
                "(() => {{ const r = document.querySelector('[data-run=\"{run_id}\"]');
                   return r && r.querySelector('a.question-link[href=\"#q-{question}\"]') ? r.innerText : null }})()"
            ),
        )
        .await;
    let text = row.as_str().unwrap();
    assert!(text.contains("release") && text.contains("2.0"), "{text}");
    assert!(text.contains("Started by api over HTTP"), "{text}");
    // The journal on demand: nothing answered yet.
    page.click(&format!("[data-run=\"{run_id}\"] button[aria-controls]"))
        .await;
    page.wait_for(
        "the journal",
        &format!(
            "document.getElementById('journal-{run_id}').innerText.includes('Nothing answered yet')"
        ),
    )
    .await;
    // Following the link shows the question's card among the pending questions.
    page.click(&format!("a.question-link[href=\"#q-{question}\"]"))
        .await;
    page.wait_for(
        "the questions view with the run's card",
        &format!(
            "!document.getElementById('view-questions').hidden && ({}) !== null",
            pending_card(&question)
        ),
    )
    .await;
    // Answer all three questions: the run ends and leaves the live list.
    let mut step = run;
    for answer in [json!("beta"), json!("Faster."), json!(true)] {
        let (status, next) = server
            .api
            .post(
                &format!("/api/runs/{run_id}/answer"),
                json!({"answer": answer, "timeout_s": 10}),
            )
            .await;
        assert_eq!(status, 200, "{next}");
        step = next;
    }
    assert_eq!(step["state"], "done");
    go_to(&page, "runs").await;
    page.wait_for(
        "the ended run to leave the live list",
        &format!("document.querySelector('[data-run=\"{run_id}\"]') === null"),
    )
    .await;
    page.eval("const s = document.getElementById('runs-state'); s.value = 'ended'; s.dispatchEvent(new Event('change'))")
        .await;
    let ended = page
        .wait_for(
            "the run among ended runs",
            &format!(
                "(() => {{ const r = document.querySelector('[data-run=\"{run_id}\"]'); return r ? r.innerText : null }})()"
            ),
        )
        .await;
    assert!(
        ended
            .as_str()
            .unwrap()
            .contains("Result: Published 2.0 on beta"),
        "{ended}"
    );
}

async fn approval(server: &InProcess, command: &str) -> String {
    server
        .api
        .ask(json!({
            "kind": "approval",
            "prompt": format!("Run {command}?"),
            "answerers": ["api"],
            "action": {"tool": "shell", "args": {"command": command}}
        }))
        .await
}

async fn rules_over_http(server: &InProcess) -> Vec<Value> {
    let body: Value = http()
        .get(format!("{}/api/rules", server.api.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["rules"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_appears_live_and_is_revoked_from_the_page() {
    let server = in_process().await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.api.base).await;
    go_to(&page, "rules").await;
    page.wait_for(
        "no rules yet",
        "document.getElementById('rules-status').textContent.startsWith('No rules')",
    )
    .await;
    let id = approval(&server, "make deploy").await;
    let (status, body) = server.api.reply(&id, json!("always")).await;
    assert_eq!(status, 200, "{body}");
    let rule_id = format!("rule-{id}");
    let row = page
        .wait_for(
            "the new rule, without a reload",
            &format!(
                "(() => {{ const r = document.getElementById({}); return r ? r.innerText : null }})()",
                js(&format!("rule-{rule_id}"))
            ),
        )
        .await;
    assert!(row.as_str().unwrap().contains("make deploy"), "{row}");
    assert_eq!(rules_over_http(&server).await.len(), 1);

    // Revoke: asks first; "Keep it" changes nothing; "Yes, revoke" removes it everywhere.
    let revoke = format!("#rule-{rule_id} .revoke button.danger");
    page.click(&revoke).await;
    page.wait_for(
        "the confirmation",
        &format!("document.querySelector('#rule-{rule_id} .confirm') !== null"),
    )
    .await;
    page.click(&format!("#rule-{rule_id} .revoke button.quiet"))
        .await;
    assert_eq!(rules_over_http(&server).await.len(), 1, "kept");
    page.click(&revoke).await;
    page.wait_for(
        "the confirmation again",
        "document.activeElement && document.activeElement.textContent === 'Yes, revoke'",
    )
    .await;
    page.press("Enter").await;
    page.wait_for(
        "the rule gone from the page",
        &format!(
            "document.getElementById({}) === null",
            js(&format!("rule-{rule_id}"))
        ),
    )
    .await;
    let rules = eventually_some(Duration::from_secs(5), "the rule revoked", || async {
        let rules = rules_over_http(&server).await;
        rules.is_empty().then_some(rules)
    })
    .await;
    assert!(rules.is_empty());
}

/// A question for telegram:42 in a Telegram group, and a stranger's tap on it (the tap is the
/// typed command), refused; returns the question.
async fn refused_tap(server: &InProcess) -> askbridge::core::Question {
    let question = server
        .bridge
        .create(
            NewQuestion::ask("Ship it?")
                .session("audit")
                .options(["yes", "no"])
                .answerers(["telegram:42"])
                .targets(["telegram:-100"]),
        )
        .await
        .unwrap();
    let mut tap = message(
        "telegram:666",
        "telegram:-100",
        &format!("/answer {} yes", question.id),
    );
    tap.via = "telegram".into();
    let reply = server.bridge.handle(tap).await;
    assert!(reply.is_some(), "the stranger is told");
    question
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_view_shows_a_strangers_refused_tap() {
    let server = in_process().await;
    let question = refused_tap(&server).await;
    assert!(server.bridge.get(&question.id).await.unwrap().is_pending());
    let browser = Browser::launch().await;
    let page = open(&browser, &server.api.base).await;
    go_to(&page, "audit").await;
    page.eval("document.getElementById('audit-outcome').value = 'refused'")
        .await;
    page.click("#audit-filters button[type=submit]").await;
    let row = page
        .wait_for(
            "the refused tap",
            "(() => { const r = document.querySelector('#audit > li.refused');
                return r && document.querySelectorAll('#audit > li').length === 1 ? r.innerText : null })()",
        )
        .await;
    let text = row.as_str().unwrap();
    assert!(text.contains("telegram:666"), "{text}");
    assert!(text.contains(question.id.as_str()), "{text}");
    assert!(text.to_lowercase().contains("refused"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_pages_through_500_resolved_questions() {
    let server = in_process().await;
    for n in 0..500 {
        let q = server
            .bridge
            .create(
                NewQuestion::ask(format!("Question {n}?"))
                    .session(if n % 2 == 0 { "even" } else { "odd" })
                    .options(["a", "b"]),
            )
            .await
            .unwrap();
        server
            .bridge
            .attempt(Attempt::transition(
                &q.id,
                Transition::Answer {
                    value: Answer::Text("a".into()),
                },
                Actor::new("api", "api"),
                &"api".into(),
            ))
            .await
            .unwrap();
    }
    let browser = Browser::launch().await;
    let page = open(&browser, &server.api.base).await;
    go_to(&page, "history").await;
    page.wait_for(
        "the first page",
        &format!("{} === 50", row_count("history")),
    )
    .await;
    for pages in 2..=10 {
        page.click("#history-more").await;
        page.wait_for(
            "the next page",
            &format!("{} === {}", row_count("history"), pages * 50),
        )
        .await;
    }
    page.wait_for(
        "no more pages",
        "document.getElementById('history-more').hidden",
    )
    .await;
    let distinct = page
        .eval("new Set([...document.querySelectorAll('#history > li')].map(r => r.dataset.question)).size")
        .await;
    assert_eq!(distinct, 500);
    // In the API's order: most recently resolved first.
    let shown = page
        .eval("[...document.querySelectorAll('#history > li')].slice(0, 50).map(r => r.dataset.question)")
        .await;
    let first_page: Value = http()
        .get(format!("{}/api/history", server.api.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let expected: Vec<Value> = first_page["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].clone())
        .collect();
    assert_eq!(shown, Value::Array(expected));
    // Filtered by session: half of them.
    page.type_into("#history-session", "odd").await;
    page.press("Enter").await;
    page.wait_for(
        "the odd session's first page",
        "[...document.querySelectorAll('#history > li')].length === 50
            && [...document.querySelectorAll('#history > li')].every(r => r.innerText.includes('session odd'))",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_of_runs_rules_audit_and_history() {
    let server = with_flows().await;
    // Something in every view: two waiting runs, a rule, a refused tap, resolved questions.
    for input in ["2.0", "2.1"] {
        let (status, _) = server
            .api
            .post(
                "/api/runs",
                json!({"flow": "release", "input": input, "wait_s": 10}),
            )
            .await;
        assert_eq!(status, 201);
    }
    let id = approval(&server, "make deploy").await;
    server.api.reply(&id, json!("always")).await;
    for (n, answer) in ["csv", "json"].iter().enumerate() {
        let q = server
            .api
            .ask(json!({"prompt": format!("Export format {n}?"), "options": ["csv", "json"]}))
            .await;
        server.api.reply(&q, json!(answer)).await;
    }
    refused_tap(&server).await;

    let browser = Browser::launch().await;
    let page = open(&browser, &server.api.base).await;
    for view in ["runs", "rules", "audit", "history"] {
        for (width, height, mobile, suffix) in [(1280, 900, false, ""), (390, 844, true, "-phone")]
        {
            page.set_viewport(width, height, mobile).await;
            go_to(&page, view).await;
            page.wait_for(
                &format!("{view} at {width} px"),
                &format!(
                    "window.innerWidth === {width} && {} > 0
                        && document.documentElement.scrollWidth <= window.innerWidth",
                    row_count(view)
                ),
            )
            .await;
            let path = artifacts_dir().join(format!("ops-{view}{suffix}.png"));
            page.screenshot(&path).await;
            shown_in_test_output(&format!("ops page, {view} view: {}", path.display()));
        }
    }
}
