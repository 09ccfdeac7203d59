//! The ops page kept live: a question asked over HTTP appears without a reload, answers made
//! elsewhere update it, it reconnects after askbridge is killed and restarted, and an open page
//! does not keep askbridge from shutting down.

use super::*;

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
