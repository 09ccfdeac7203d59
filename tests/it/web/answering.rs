//! Answering on the ops page: every kind with real clicks and key presses, refusals shown in the
//! server's words, a quorum's votes, a form.

use super::*;

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

/// An approval offering edit and respond: only its decisions are on the card, the arguments are
/// real inputs prefilled with the proposed values, and a changed value is approved with changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_edited_with_real_inputs_on_the_page() {
    let server = serve_ephemeral();
    let api = Api::new(&server.base);
    let schema = json!({"type": "object", "properties": {
        "env": {"type": "string", "enum": ["staging", "production"]},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10}}, "required": ["env", "replicas"]});
    let edit = api
        .ask(
            json!({"kind": "approval", "prompt": "Deploy?", "answerers": ["api"],
            "action": {"tool": "deploy", "args": {"env": "staging", "replicas": 2}},
            "allowed": ["once", "edit", "respond"], "args_schema": schema}),
        )
        .await;
    let respond = api
        .ask(
            json!({"kind": "approval", "prompt": "Which colour?", "answerers": ["api"],
            "action": {"tool": "ask_user", "args": ["colour"]}, "allowed": ["respond", "edit"]}),
        )
        .await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    for id in [&edit, &respond] {
        page.wait_for("the cards", &pending_card(id)).await;
    }
    let buttons = page
        .eval(&format!(
            "[...document.getElementById({}).querySelectorAll('button')].map(b => b.textContent)",
            js(&format!("q-{edit}"))
        ))
        .await;
    assert_eq!(
        buttons,
        json!(["Allow once", "Approve with changes", "Respond"]),
        "no Always allow, no Reject"
    );
    let replicas = format!("#form-{edit}-edit-replicas");
    let prefilled = page
        .eval(&format!("document.querySelector({}).value", js(&replicas)))
        .await;
    assert_eq!(prefilled, json!("2"), "prefilled with the proposed value");
    page.eval(&format!(
        "document.querySelector({}).value = ''",
        js(&replicas)
    ))
    .await;
    page.type_into(&replicas, "4").await;
    click_text(&page, &edit, "button", "Approve with changes").await;
    let q = shows_outcome(&page, &api, &edit).await;
    let edited = q.resolution.unwrap().edited.unwrap();
    assert_eq!(
        edited.approved.args,
        json!({"env": "staging", "replicas": 4})
    );

    page.type_into(&format!("#respond-{respond}"), "blue").await;
    click_text(&page, &respond, "button", "Respond").await;
    let q = shows_outcome(&page, &api, &respond).await;
    assert_eq!(q.resolution.unwrap().message.as_deref(), Some("blue"));
}
