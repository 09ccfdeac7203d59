//! Approvals, second step: the decisions an approval allows, edit before approving (over HTTP,
//! typed as JSON, field by field on Telegram through teloxide against the fake Bot API) and
//! respond; a disallowed decision refused on each surface; the audit trail keeping proposed and
//! approved arguments apart; never a rule from an edit.

use crate::approvals::{pending_approval, setup};
use crate::fakes::telegram::{FakeTelegram, Sent};
use crate::flows::waiting_question;
use crate::support::{
    FakeChannel, Process, RedisServer, answered_over_http, ask_when_connected, eventually_some,
    found, get_json, http, message,
};
use crate::telegram::{GROUP, alice, mallory};
use askbridge::bridge::Bridge;
use askbridge::store::memory::MemoryStore;
use askbridge::{AskError, BridgeOptions};
use askbridge_core::audit::AuditFilter;
use askbridge_core::{Action, Approval, Decision, Inbound, Inbox, NewQuestion};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(10);

pub(crate) fn deploy() -> Action {
    Action::new("deploy", json!({"env": "staging", "replicas": 2}))
}

pub(crate) fn deploy_schema() -> Value {
    json!({"type": "object", "properties": {
        "env": {"type": "string", "enum": ["staging", "production"]},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10}
    }, "required": ["env", "replicas"]})
}

/// Asserts `resolution` (as JSON) is `deploy()` edited by `by` to run with `approved`, the
/// proposed arguments kept beside them.
pub(crate) fn assert_edited(resolution: &Value, by: &str, approved: Value) {
    assert_eq!(resolution["value"], "edit", "{resolution}");
    assert_eq!(resolution["by"], by, "{resolution}");
    let edited = &resolution["edited"];
    assert_eq!(edited["approved"]["args"], approved, "{resolution}");
    assert_eq!(edited["proposed"]["args"], deploy().args, "{resolution}");
}

fn all() -> Vec<Decision> {
    vec![
        Decision::Once,
        Decision::Edit,
        Decision::Respond,
        Decision::Reject,
    ]
}

pub(crate) async fn reply(base: &str, id: &str, body: Value) -> (u16, Value) {
    let r = http()
        .post(format!("{base}/api/questions/{id}/reply"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test]
async fn an_edit_over_http_is_checked_against_the_schema_and_reaches_the_function() {
    let (bridge, base) = setup().await;
    let asking = tokio::spawn({
        let session = bridge.session("edit-http");
        async move {
            let request = NewQuestion::ask("Deploy?")
                .approve(deploy())
                .allow(all())
                .args_schema(deploy_schema());
            session.approve(request).await
        }
    });
    let q = pending_approval(&bridge, "edit-http").await;
    assert_eq!(
        serde_json::to_value(&q.allowed).unwrap(),
        json!(["once", "edit", "respond", "reject"])
    );

    // Breaking the schema: 422 naming the field, and nothing decided.
    let bad = json!({"decision": "edit", "args": {"env": "production", "replicas": 11}});
    let (status, body) = reply(&base, q.id.as_str(), bad).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["field"], "args.replicas", "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("from 1 to 10"),
        "{body}"
    );
    let unknown = json!({"decision": "edit", "args": {"env": "qa", "replicas": 1, "force": true}});
    let (status, body) = reply(&base, q.id.as_str(), unknown).await;
    assert_eq!((status, body["field"].as_str()), (422, Some("args.force")));
    // A decision this approval does not offer: refused, saying which it offers.
    let (status, body) = reply(&base, q.id.as_str(), json!({"decision": "always"})).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("does not offer \"always\""),
        "{body}"
    );
    assert!(bridge.get(&q.id).await.unwrap().is_pending());

    let good = json!({"decision": "edit", "args": {"env": "production", "replicas": 3}});
    let (status, body) = reply(&base, q.id.as_str(), good).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "answered");
    let approved = Action::new("deploy", json!({"env": "production", "replicas": 3}));
    assert_eq!(
        body["resolution"]["edited"]["approved"]["digest"],
        approved.digest()
    );
    assert_eq!(
        body["resolution"]["edited"]["proposed"]["args"],
        deploy().args
    );
    assert!(
        body["outcome"]
            .as_str()
            .unwrap()
            .starts_with("Approved with changes:"),
        "{body}"
    );
    let edited = asking.await.unwrap().unwrap();
    assert_eq!(
        edited,
        Approval::Edited {
            action: approved.clone(),
            proposed_digest: deploy().digest()
        }
    );
    assert!(edited.covers(&approved) && !edited.covers(&deploy()));

    // The audit trail keeps both; an edit never makes a rule.
    let entries: Value = get_json(&base, "/api/audit?session_id=edit-http").await;
    let resolved = entries["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "resolved")
        .cloned()
        .unwrap();
    assert_eq!(resolved["proposed_args"], deploy().args, "{resolved}");
    assert_eq!(resolved["approved_args"], approved.args, "{resolved}");
    assert_eq!(resolved["approved_digest"], approved.digest(), "{resolved}");
    assert!(
        bridge.rules().await.unwrap().is_empty(),
        "no rule from an edit"
    );
    let again = bridge
        .create(
            NewQuestion::ask("Deploy?")
                .approve(approved)
                .allow(all())
                .session("edit-http"),
        )
        .await
        .unwrap();
    assert!(again.is_pending(), "the edited action is asked again");
}

#[tokio::test]
async fn non_object_arguments_are_edited_as_json_and_responses_are_answers() {
    let (bridge, base) = setup().await;
    let argv = Action::new("exec", json!(["rm", "-rf", "build/"]));
    let asking = tokio::spawn({
        let session = bridge.session("edit-json");
        let argv = argv.clone();
        async move {
            let request = NewQuestion::ask("Run?").approve(argv).allow(all());
            session.approve(request).await
        }
    });
    let q = pending_approval(&bridge, "edit-json").await;
    let (status, body) = reply(
        &base,
        q.id.as_str(),
        json!({"decision": "edit", "args": ["rm", 1]}),
    )
    .await;
    assert_eq!(
        (status, body["field"].as_str()),
        (422, Some("args[1]")),
        "{body}"
    );
    // Typed in a chat as JSON: `/answer <id> edit [...]`.
    let typed = format!("/answer {} edit [\"rm\", \"-ri\", \"build/\"]", q.id);
    let said = bridge
        .handle(message("chat:7", "chat:1", &typed))
        .await
        .unwrap();
    assert!(
        said.text.starts_with("✓ Approved with changes"),
        "{}",
        said.text
    );
    match asking.await.unwrap().unwrap() {
        Approval::Edited { action, .. } => assert_eq!(action.args, json!(["rm", "-ri", "build/"])),
        other => panic!("{other:?}"),
    }

    // Respond: the person's text is the tool's result, over HTTP and typed on the console.
    let asking = tokio::spawn({
        let session = bridge.session("respond");
        async move {
            let request = NewQuestion::ask("Ask the user?")
                .approve(deploy())
                .allow(all());
            session.approve(request).await
        }
    });
    let q = pending_approval(&bridge, "respond").await;
    let (status, body) = reply(
        &base,
        q.id.as_str(),
        json!({"decision": "respond", "text": " "}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = reply(
        &base,
        q.id.as_str(),
        json!({"decision": "respond", "text": "Use the blue one."}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resolution"]["value"], "respond");
    assert_eq!(body["resolution"]["message"], "Use the blue one.");
    assert_eq!(
        asking.await.unwrap().unwrap(),
        Approval::Responded {
            text: "Use the blue one.".into()
        }
    );
    let q = bridge
        .create(
            NewQuestion::ask("And now?")
                .approve(deploy())
                .allow(all())
                .session("respond"),
        )
        .await
        .unwrap();
    let console = Inbound {
        via: "console".into(),
        chat: "console".into(),
        sender: "console".into(),
        sender_name: None,
        ..message("", "", "")
    };
    let asked = bridge
        .handle(Inbound {
            text: format!("/answer {} respond", q.id),
            ..console.clone()
        })
        .await
        .unwrap();
    assert!(
        asked.text.contains("What is your response?"),
        "{}",
        asked.text
    );
    let said = bridge
        .handle(Inbound {
            text: format!("/answer {} respond later, after the freeze", q.id),
            ..console.clone()
        })
        .await
        .unwrap();
    assert_eq!(
        said.text,
        "✓ Responded: later, after the freeze, by console via console"
    );
    assert!(bridge.rules().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_disallowed_decision_is_refused_on_every_surface_and_changes_nothing() {
    let (bridge, base) = setup().await;
    let only_once = NewQuestion::ask("Deploy?")
        .approve(deploy())
        .allow([Decision::Once])
        .session("narrow");
    let q = bridge.create(only_once).await.unwrap();
    assert_eq!(
        askbridge_core::render::buttons(&q, &[])
            .iter()
            .map(|b| b.label.as_str())
            .collect::<Vec<_>>(),
        ["Allow once"],
        "exactly the allowed decisions"
    );
    for typed in [
        "always",
        "reject no",
        "edit {\"env\": \"production\", \"replicas\": 1}",
        "respond hi",
    ] {
        let said = bridge
            .handle(message(
                "chat:7",
                "chat:1",
                &format!("/answer {} {typed}", q.id),
            ))
            .await
            .unwrap();
        assert!(
            said.text.contains("does not offer"),
            "{typed}: {}",
            said.text
        );
        assert!(said.text.contains("choose once"), "{typed}: {}", said.text);
    }
    let said = bridge
        .handle(message("chat:7", "chat:1", &format!("/decline {}", q.id)))
        .await
        .unwrap();
    assert!(
        said.text.contains("does not offer \"reject\""),
        "{}",
        said.text
    );
    for body in [
        json!({"decision": "reject"}),
        json!({"answer": "always"}),
        json!({"decision": "edit", "args": {"env": "staging", "replicas": 1}}),
        json!({"decision": "respond", "text": "no"}),
    ] {
        let (status, answer) = reply(&base, q.id.as_str(), body.clone()).await;
        assert_eq!(status, 422, "{body}: {answer}");
    }
    let r = http()
        .post(format!("{base}/api/questions/{}/reject", q.id))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert!(
        bridge.get(&q.id).await.unwrap().is_pending(),
        "nothing was decided"
    );
    let refused = bridge
        .audit(&AuditFilter::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.contains("does not offer"))
        })
        .count();
    assert!(refused >= 5, "refusals are audited: {refused}");
    // Asking with a bad list is refused by name.
    let r = http()
        .post(format!("{base}/api/questions"))
        .json(
            &json!({"session_id": "narrow", "prompt": "?", "kind": "approval",
            "action": {"tool": "t", "args": {}}, "allowed": ["once", "maybe"]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["field"].as_str().unwrap().starts_with("allowed"),
        "{body}"
    );
    let _unused: Option<AskError> = None;
}

fn last_from_bot(fake: &FakeTelegram, contains: &str) -> Option<Sent> {
    fake.sent()
        .into_iter()
        .rev()
        .find(|m| m.text.contains(contains))
}

async fn bot_says(fake: &FakeTelegram, contains: &str) -> Sent {
    found(WITHIN, contains, || last_from_bot(fake, contains)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_edited_field_by_field_on_telegram_with_a_bad_value_in_between() {
    let redis = RedisServer::start();
    let fake = FakeTelegram::start();
    let server = Process::spawn(&["serve"], &fake.serve_env(&redis));
    let body = json!({
        "session_id": "edit-telegram",
        "kind": "approval",
        "prompt": "Deploy?",
        "action": deploy(),
        "allowed": ["once", "edit", "reject"],
        "args_schema": deploy_schema(),
        "targets": [format!("telegram:{GROUP}")],
        "answerers": [format!("telegram:{}", alice().id)],
        "timeout_s": 600,
    });
    let question = ask_when_connected(&server.base, body).await;
    let id = question["id"].as_str().unwrap().to_owned();

    // Exactly the allowed decisions as buttons; Edit starts the fields, prefilled.
    let shown = bot_says(&fake, "Action: deploy").await;
    let labels: Vec<String> = shown
        .buttons()
        .into_iter()
        .flatten()
        .map(|(l, _)| l)
        .collect();
    assert_eq!(labels, ["Allow once", "Edit", "Reject"]);
    fake.tap(GROUP, shown.id, &alice(), &shown.payload("Edit"));
    let first = bot_says(&fake, "Field 1 of 2: env").await;
    assert!(first.text.contains("(proposed: staging)"), "{}", first.text);
    fake.tap(GROUP, first.id, &alice(), &first.payload("2. production"));
    let second = bot_says(&fake, "Field 2 of 2: replicas").await;
    assert!(second.text.contains("✓ env: production"), "{}", second.text);

    // A value that does not fit: why, and the same field again.
    fake.say(GROUP, &alice(), "eleven");
    let refused = bot_says(&fake, "That does not fit replicas").await;
    assert!(refused.text.contains("Field 2 of 2"), "{}", refused.text);
    fake.say(GROUP, &alice(), "4");

    let answered = answered_over_http(&server.base, &id).await;
    let edited = &answered["resolution"]["edited"];
    assert_eq!(
        edited["approved"]["args"],
        json!({"env": "production", "replicas": 4})
    );
    assert_eq!(edited["proposed"]["args"], deploy().args);
    bot_says(&fake, "Approved with changes").await;
    let rules = get_json(&server.base, "/api/rules").await;
    assert_eq!(rules["rules"], json!([]), "no rule from an edit: {rules}");

    // A second approval: /skip keeps the proposed value; a disallowed decision is refused.
    let body = json!({
        "session_id": "edit-telegram-2", "kind": "approval", "prompt": "Scale?",
        "action": deploy(), "allowed": ["edit"], "args_schema": deploy_schema(),
        "targets": [format!("telegram:{GROUP}")],
        "answerers": [format!("telegram:{}", alice().id)], "timeout_s": 600,
    });
    let question = ask_when_connected(&server.base, body).await;
    let id2 = question["id"].as_str().unwrap().to_owned();
    fake.say(GROUP, &alice(), &format!("/answer {id2} once"));
    bot_says(&fake, "does not offer \"once\"").await;
    fake.say(GROUP, &alice(), &format!("/answer {id2} edit"));
    bot_says(&fake, &format!("/skip {id2} to keep the proposed value")).await;
    fake.say(GROUP, &alice(), &format!("/skip {id2}"));
    bot_says(&fake, "✓ env: staging (kept)").await;
    fake.say(GROUP, &alice(), "7");
    let answered = answered_over_http(&server.base, &id2).await;
    assert_eq!(
        answered["resolution"]["edited"]["approved"]["args"],
        json!({"env": "staging", "replicas": 7}),
        "the skipped field kept its proposed value"
    );

    println!(
        "--- Telegram transcript: an approval edited ---\n{}",
        fake.transcript()
    );
}

#[tokio::test]
async fn a_flow_runs_the_edited_arguments_after_its_replay() {
    use crate::support::Call;
    use askbridge::Flows;
    use askbridge::flows::FlowContext;
    let flows = Flows::new()
        .flow("deploy", "deploys", |ctx: FlowContext| async move {
            let request = NewQuestion::ask("May I deploy?")
                .approve(deploy())
                .allow(all())
                .args_schema(deploy_schema());
            match ctx.approve(request).await? {
                Approval::Edited { action, .. } => Ok(format!("deployed {}", action.args)),
                other => Ok(format!("unexpected {other:?}")),
            }
        })
        .unwrap();
    let chat = FakeChannel::new("chat");
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            approvers: vec!["chat:7".into()],
            ..BridgeOptions::default()
        })
        .channel(chat.clone())
        .runner(Arc::new(flows))
        .start()
        .await
        .unwrap();
    bridge
        .handle(message("chat:7", "chat:1", "/deploy"))
        .await
        .unwrap();
    let q = waiting_question(&bridge, "chat:1", "May I deploy?").await;
    let typed = format!(
        "/answer {} edit {{\"env\": \"production\", \"replicas\": 5}}",
        q.id
    );
    bridge
        .handle(message("chat:7", "chat:1", &typed))
        .await
        .unwrap();
    let done = eventually_some(WITHIN, "the flow done", || {
        let chat = chat.clone();
        async move {
            chat.calls().into_iter().find_map(|c| match c {
                Call::Say { text, .. } if text.contains("✓ deploy") => Some(text),
                _ => None,
            })
        }
    })
    .await;
    assert!(
        done.contains(r#"deployed {"env":"production","replicas":5}"#),
        "{done}"
    );
}

/// The Respond button asks for the text, and the answerer's next message in the chat is the
/// response: a stranger's message in between answers nothing, and the typed command still works
/// (covered above on the console).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_respond_tap_takes_the_next_message_as_the_response_on_telegram() {
    let redis = RedisServer::start();
    let fake = FakeTelegram::start();
    let server = Process::spawn(&["serve"], &fake.serve_env(&redis));
    let body = json!({
        "session_id": "respond-telegram",
        "kind": "approval",
        "prompt": "Which colour?",
        "action": {"tool": "ask_user", "args": {"question": "Which colour?"}},
        "allowed": ["once", "respond", "reject"],
        "targets": [format!("telegram:{GROUP}")],
        "answerers": [format!("telegram:{}", alice().id)],
        "timeout_s": 600,
    });
    let question = ask_when_connected(&server.base, body).await;
    let id = question["id"].as_str().unwrap().to_owned();
    let shown = bot_says(&fake, "Action: ask_user").await;
    fake.tap(GROUP, shown.id, &alice(), &shown.payload("Respond"));
    let asked = |fake: &FakeTelegram| {
        let toasts = fake.toasts();
        toasts
            .into_iter()
            .find(|t| t.contains("Send it as your next message here"))
    };
    found(WITHIN, "the Respond toast", || asked(&fake)).await;

    // A stranger's message is not the response, and leaves the question pending.
    fake.say(GROUP, &mallory(), "red, obviously");
    fake.say(GROUP, &alice(), "Use the blue one.");
    let answered = answered_over_http(&server.base, &id).await;
    assert_eq!(answered["resolution"]["value"], "respond", "{answered}");
    assert_eq!(answered["resolution"]["message"], "Use the blue one.");
    assert_eq!(
        answered["resolution"]["by"],
        format!("telegram:{}", alice().id)
    );
    bot_says(&fake, "Responded: Use the blue one.").await;
    println!(
        "--- Telegram transcript: a response typed after Respond ---\n{}",
        fake.transcript()
    );
}
