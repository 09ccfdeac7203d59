//! What the ops page shows: every kind at desktop and phone width (screenshots in
//! `target/test-artifacts/`), and its filters by session and surface.

use super::*;

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
