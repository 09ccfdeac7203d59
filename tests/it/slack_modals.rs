//! Slack modals through the real slack-morphism client against the fake Slack (which checks a
//! view's limits on `views.open`): an approval rejected with a reason, a three-field form
//! answered whole (a bad value shown on its field first), a stranger's submission and a late
//! one refused. Submissions are posted to `/slack/interactions` signed, as Slack posts them,
//! with the view the fake recorded; Slack reads what to do with the modal in the answer's body.

use crate::approvals_edit::{assert_edited, deploy, deploy_schema};
use crate::slack::{ALICE, BOB, Rig, WITHIN, elements, ephemerals};
use crate::support::eventually_some;
use askbridge_core::{Question, Status};
use axum::http::StatusCode;
use serde_json::{Value, json};

/// The element of the message showing `question` whose action id is `action`.
pub(crate) async fn element(rig: &Rig, question: &Question, action: &str) -> Value {
    let (_, posted) = rig.shown(question).await;
    elements(&posted)
        .into_iter()
        .find(|e| e["action_id"] == action)
        .unwrap_or_else(|| panic!("no element {action} in {posted}"))
}

/// `user` clicks `element`, with `trigger`; returns the view the click opened.
pub(crate) async fn open(rig: &Rig, user: &str, element: &Value, trigger: &str) -> Value {
    let status = rig.act(user, element.clone(), trigger).await;
    assert_eq!(status, StatusCode::OK);
    let call = eventually_some(WITHIN, "views.open with the click's trigger", || async {
        rig.fake
            .calls_of("views.open")
            .into_iter()
            .find(|c| c.body["trigger_id"] == trigger)
    })
    .await;
    assert_eq!(call.status, 200);
    assert_eq!(call.error, None, "the fake took the view: {}", call.body);
    call.body["view"].clone()
}

/// `user` submits `view` with `values` as its state; returns what askbridge told Slack.
pub(crate) async fn submit(rig: &Rig, user: &str, view: &Value, values: Value) -> Value {
    let payload = json!({
        "type": "view_submission",
        "user": {"id": user, "username": user.to_lowercase(), "name": user.to_lowercase()},
        "trigger_id": "trigger-submit",
        "view": {"id": "V0SUBMIT", "type": "modal", "callback_id": view["callback_id"],
                 "private_metadata": view["private_metadata"], "state": {"values": values}},
    });
    let (status, answer) = rig.interact(&payload).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer
}

pub(crate) fn block_ids(view: &Value) -> Vec<String> {
    view["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["block_id"].as_str().map(str::to_owned))
        .collect()
}

fn form_question() -> Value {
    json!({"prompt": "Deploy settings?", "kind": "form", "answerers": [format!("slack:{ALICE}")],
        "form": {"type": "object", "properties": {
            "env": {"type": "string", "title": "Environment", "enum": ["staging", "production"]},
            "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 10},
            "notify": {"type": "boolean", "title": "Notify the team"}},
          "required": ["env", "replicas"]}})
}

fn form_values(replicas: &str) -> Value {
    json!({
        "field-0": {"value": {"type": "static_select",
                              "selected_option": {"text": {"type": "plain_text", "text": "production"}, "value": "2"}}},
        "field-1": {"value": {"type": "number_input", "value": replicas}},
        "field-2": {"value": {"type": "checkboxes",
                              "selected_options": [{"text": {"type": "plain_text", "text": "Yes"}, "value": "yes"}]}},
    })
}

#[tokio::test]
async fn an_approval_is_rejected_with_a_reason_through_a_modal() {
    let rig = Rig::start().await;
    let q = rig
        .ask(
            json!({"prompt": "May the agent run this?", "kind": "approval",
                    "action": {"tool": "shell", "args": {"command": "rm -rf build"}},
                    "answerers": [format!("slack:{ALICE}")]}),
        )
        .await;
    let opener = element(&rig, &q, "askbridge-modal-reason").await;
    let view = open(&rig, ALICE, &opener, "trigger-reason").await;
    assert_eq!(block_ids(&view), ["reason"]);
    assert_eq!(view["blocks"][1]["element"]["type"], "plain_text_input");
    assert!(rig.get(&q.id).await.is_pending(), "opening changes nothing");
    let answer = submit(
        &rig,
        ALICE,
        &view,
        json!({"reason": {"reason": {"type": "plain_text_input", "value": "not on Fridays"}}}),
    )
    .await;
    assert_eq!(answer, json!({"response_action": "clear"}));
    let resolved = rig.wait_status(&q.id, Status::Declined).await;
    let resolution = serde_json::to_value(resolved.resolution.unwrap()).unwrap();
    assert!(
        resolution.to_string().contains("not on Fridays"),
        "{resolution}"
    );
    assert_eq!(resolution["by"], format!("slack:{ALICE}"));
}

#[tokio::test]
async fn a_three_field_form_through_a_modal_shows_a_bad_value_on_its_field_then_answers() {
    let rig = Rig::start().await;
    let q = rig.ask(form_question()).await;
    let (ts, posted) = rig.shown(&q).await;
    println!("chat.postMessage: {posted}");
    // Field by field in the thread stays: the first field's buttons are there beside the opener.
    let ids: Vec<Value> = elements(&posted)
        .iter()
        .map(|e| e["action_id"].clone())
        .collect();
    assert!(
        ids.len() > 2 && ids.contains(&json!("askbridge-0")),
        "{ids:?}"
    );
    let opener = element(&rig, &q, "askbridge-modal-form").await;
    let view = open(&rig, ALICE, &opener, "trigger-form").await;
    assert_eq!(block_ids(&view), ["field-0", "field-1", "field-2"]);
    let types: Vec<&str> = view["blocks"].as_array().unwrap()[1..]
        .iter()
        .map(|b| b["element"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["static_select", "number_input", "checkboxes"]);
    println!("views.open: {view:#}");

    let bad = submit(&rig, ALICE, &view, form_values("99")).await;
    println!("submission with replicas 99 -> {bad}");
    assert_eq!(bad["response_action"], "errors");
    let errors = bad["errors"].as_object().unwrap();
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["field-1"]);
    assert!(
        errors["field-1"].as_str().unwrap().contains("out of range"),
        "{bad}"
    );
    assert!(rig.get(&q.id).await.is_pending());

    let good = submit(&rig, ALICE, &view, form_values("3")).await;
    println!("submission with replicas 3 -> {good}");
    assert_eq!(good, json!({"response_action": "clear"}));
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(
        serde_json::to_value(answered.resolution.unwrap().value).unwrap(),
        json!({"env": "production", "replicas": 3, "notify": true})
    );
    let message = rig.withdrawn(&ts).await;
    println!("chat.update: {message}");
}

#[tokio::test]
async fn a_strangers_submission_is_refused_and_changes_nothing() {
    let rig = Rig::start().await;
    let q = rig.ask(form_question()).await;
    let opener = element(&rig, &q, "askbridge-modal-form").await;
    // The stranger's click opens nothing: a line only they see says why.
    rig.act(BOB, opener.clone(), "trigger-bob").await;
    let line = eventually_some(WITHIN, "a line to the stranger", || async {
        ephemerals(&rig).into_iter().next()
    })
    .await;
    assert_eq!(line.body["user"], BOB);
    assert_eq!(line.body["text"], "You can't answer this question.");
    assert!(rig.fake.calls_of("views.open").is_empty());
    // A submission of Alice's modal made as Bob (a forged or shared view) is refused too.
    let view = open(&rig, ALICE, &opener, "trigger-alice").await;
    let answer = submit(&rig, BOB, &view, form_values("3")).await;
    assert_eq!(answer["response_action"], "update", "{answer}");
    assert_eq!(
        answer["view"]["blocks"][0]["text"]["text"],
        "You can't answer this question."
    );
    assert!(rig.get(&q.id).await.is_pending());
}

#[tokio::test]
async fn a_submission_after_the_question_ended_is_refused_politely() {
    let rig = Rig::start().await;
    let q = rig.ask(form_question()).await;
    let opener = element(&rig, &q, "askbridge-modal-form").await;
    let view = open(&rig, ALICE, &opener, "trigger-late").await;
    let api = askbridge_core::Actor::new("api", "api");
    rig.bridge.cancel_question(&q.id, api, None).await.unwrap();
    rig.wait_status(&q.id, Status::Cancelled).await;
    let answer = submit(&rig, ALICE, &view, form_values("3")).await;
    assert_eq!(answer["response_action"], "update", "{answer}");
    let line = answer["view"]["blocks"][0]["text"]["text"]
        .as_str()
        .unwrap();
    assert!(line.starts_with("This question was withdrawn."), "{line}");
    assert_eq!(rig.get(&q.id).await.status, Status::Cancelled);
    assert!(crate::fakes::slack::check_view(&answer["view"]).is_ok());
}

fn approval_to_edit(args_schema: Value) -> Value {
    json!({"prompt": "Deploy?", "kind": "approval",
           "action": {"tool": "deploy", "args": deploy().args},
           "allowed": ["once", "edit", "reject"], "args_schema": args_schema,
           "answerers": [format!("slack:{ALICE}")]})
}

pub(crate) fn edit_values(env: &str, replicas: &str) -> Value {
    json!({
        "field-0": {"value": {"type": "static_select",
                              "selected_option": {"text": {"type": "plain_text", "text": env}, "value": env}}},
        "field-1": {"value": {"type": "number_input", "value": replicas}},
    })
}

#[tokio::test]
async fn an_approvals_edit_opens_a_prefilled_modal_a_bad_value_is_shown_on_its_field_then_it_edits()
{
    let rig = Rig::start().await;
    let q = rig.ask(approval_to_edit(deploy_schema())).await;
    let opener = element(&rig, &q, "askbridge-modal-edit").await;
    assert_eq!(opener["text"]["text"], "Edit");
    let view = open(&rig, ALICE, &opener, "trigger-edit").await;
    println!("views.open: {view:#}");
    assert_eq!(view["callback_id"], "askbridge-edit");
    assert_eq!(block_ids(&view), ["field-0", "field-1"]);
    // Prefilled with the proposed arguments (the fake refused an initial option not offered).
    let env = &view["blocks"][1]["element"];
    assert_eq!(env["initial_option"]["text"]["text"], "staging");
    assert_eq!(view["blocks"][2]["element"]["initial_value"], "2");
    assert!(rig.get(&q.id).await.is_pending(), "opening changes nothing");

    let production = env["options"][1]["value"].as_str().unwrap();
    let bad = submit(&rig, ALICE, &view, edit_values(production, "11")).await;
    println!("submission with replicas 11 -> {bad}");
    assert_eq!(bad["response_action"], "errors", "{bad}");
    let errors = bad["errors"].as_object().unwrap();
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["field-1"]);
    assert!(
        errors["field-1"].as_str().unwrap().contains("out of range"),
        "{bad}"
    );
    assert!(
        rig.get(&q.id).await.is_pending(),
        "a refused edit changes nothing"
    );

    let good = submit(&rig, ALICE, &view, edit_values(production, "3")).await;
    assert_eq!(good, json!({"response_action": "clear"}));
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    let resolution = serde_json::to_value(answered.resolution.unwrap()).unwrap();
    let approved = json!({"env": "production", "replicas": 3});
    assert_edited(&resolution, &format!("slack:{ALICE}"), approved);
}

#[tokio::test]
async fn without_a_flat_schema_edit_stays_a_command_for_the_json() {
    let rig = Rig::start().await;
    let nested = json!({"type": "object", "properties": {
        "env": {"anyOf": [{"type": "string"}, {"type": "null"}]}}});
    let q = rig.ask(approval_to_edit(nested)).await;
    let (_, posted) = rig.shown(&q).await;
    let edit = elements(&posted)
        .into_iter()
        .find(|e| e["text"]["text"] == "Edit")
        .unwrap_or_else(|| panic!("no Edit button in {posted}"));
    assert_ne!(edit["action_id"], "askbridge-modal-edit", "{edit}");
    rig.act(ALICE, edit, "trigger-json").await;
    let line = eventually_some(WITHIN, "the line asking for JSON", || async {
        ephemerals(&rig).into_iter().next()
    })
    .await;
    let text = line.body["text"].as_str().unwrap();
    assert!(text.contains("as JSON"), "{text}");
    assert!(rig.fake.calls_of("views.open").is_empty());
    assert!(rig.get(&q.id).await.is_pending());
}
