//! An approval of several actions on the ops page, in headless Chromium: the actions listed with
//! their arguments and each one's own controls, a decision shown in place of the controls as it
//! is made, a bad edit refused in the server's words while the other decisions stand, and
//! "Reject all" deciding the rest with its reason.

use super::*;

/// The decision line shown for action `n` on the card of `id`, once there is one.
fn decision_of(id: &str, n: usize) -> String {
    format!(
        "(() => {{ const c = document.getElementById({});
            const d = c && c.querySelector('li[data-n=\"{n}\"] .batch-decision');
            return d ? d.textContent : null }})()",
        js(&format!("q-{id}"))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_decided_action_by_action_and_all_at_once_on_the_page() {
    let server = serve_ephemeral();
    let api = Api::new(&server.base);
    let id = api
        .ask(
            json!({"kind": "approval", "prompt": "The agent proposes four actions",
            "answerers": ["api"], "actions": [
                {"tool": "shell", "args": {"command": "ls /srv"}, "allowed": ["once", "reject"]},
                {"tool": "deploy", "args": {"replicas": 2}, "allowed": ["once", "edit", "reject"]},
                {"tool": "shell", "args": {"command": "rm -rf /srv/cache"}},
                {"tool": "shell", "args": {"command": "rm -rf /srv/logs"}}]}),
        )
        .await;
    let browser = Browser::launch().await;
    let page = open(&browser, &server.base).await;
    let card = page.wait_for("the batch's card", &pending_card(&id)).await;
    let text = card.as_str().unwrap();
    assert!(text.contains("rm -rf /srv/cache"), "{text}");
    let buttons = page
        .eval(&format!(
            "[...document.getElementById({}).querySelectorAll('button')].map(b => b.textContent)",
            js(&format!("q-{id}"))
        ))
        .await;
    assert_eq!(
        buttons,
        json!([
            "Allow once",
            "Reject",
            "Allow once",
            "Approve with changes",
            "Reject",
            "Allow once",
            "Always allow",
            "Reject",
            "Allow once",
            "Always allow",
            "Reject",
            "Approve all",
            "Reject all"
        ]),
        "each action offers exactly its decisions"
    );

    // Action 1 allowed: its decision replaces its controls; the batch waits for the others.
    click_text(&page, &id, "button", "Allow once").await;
    let shown = page
        .wait_for("action 1 decided", &decision_of(&id, 1))
        .await;
    assert_eq!(shown, json!("✅ allowed once by api"));

    // A bad edit of action 2: refused in the server's words, nothing more decided.
    let area = format!("edit-{id}-2");
    page.eval(&format!(
        "document.getElementById({}).value = '{{\"replicas\": \"many\"}}'",
        js(&area)
    ))
    .await;
    click_text(&page, &id, "button", "Approve with changes").await;
    let refused = page.wait_for("the refusal", &card_notice(&id)).await;
    assert!(refused.as_str().unwrap().contains("replicas"), "{refused}");
    page.eval(&format!(
        "document.getElementById({}).value = '{{\"replicas\": 3}}'",
        js(&area)
    ))
    .await;
    click_text(&page, &id, "button", "Approve with changes").await;
    page.wait_for("action 2 decided", &decision_of(&id, 2))
        .await;

    // Reject all: the two left, with the reason typed.
    page.type_into(&format!("#reason-{id}-all"), "not today")
        .await;
    click_text(&page, &id, "button", "Reject all").await;
    let q = shows_outcome(&page, &api, &id).await;
    let decisions = q.resolution.unwrap().decisions;
    let words: Vec<&str> = decisions.iter().map(|d| d.decision.as_str()).collect();
    assert_eq!(words, ["once", "edit", "reject", "reject"]);
    assert_eq!(decisions[1].args, Some(json!({"replicas": 3})));
    assert_eq!(decisions[3].message.as_deref(), Some("not today"));
}
