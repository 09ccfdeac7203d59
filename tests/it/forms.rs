//! Forms: a three-field form answered over HTTP as one object, on Telegram one field at a time
//! (through teloxide against the fake Bot API, drafts in Redis, a bad value in between, /back and
//! /skip), and read into a Rust type.

use crate::fakes::telegram::{FakeTelegram, Sent};
use crate::support::{
    Process, RedisServer, ask_when_connected, eventually_some, found, get_json, post_json,
};
use crate::telegram::{GROUP, alice};
use askbridge::bridge::Attempt;
use serde_json::{Value, json};
use std::time::Duration;

fn deploy_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "environment": {"type": "string", "title": "Environment", "enum": ["staging", "production"], "enumNames": ["Staging", "Production"]},
            "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 10},
            "notify": {"type": "boolean", "title": "Notify the team", "default": false},
            "note": {"type": "string", "title": "Note", "maxLength": 200}
        },
        "required": ["environment", "replicas"]
    })
}

fn ask_body(targets: Value) -> Value {
    json!({
        "session_id": "forms",
        "kind": "form",
        "prompt": "Deploy settings?",
        "form": deploy_form(),
        "targets": targets,
        "answerers": [format!("telegram:{}", alice().id), "api"],
        "timeout_s": 600,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_answered_over_http_as_one_object_checked_against_its_fields() {
    let server = Process::spawn(&["serve", "--ephemeral"], &[]);
    let base = &server.base;
    let bad = json!({"kind": "form", "session_id": "forms", "prompt": "?", "form": {"type": "object", "properties": {}}});
    let refused = post_json(base, "/api/questions", bad).await;
    assert_eq!(refused.status(), 422);
    assert_eq!(refused.json::<Value>().await.unwrap()["field"], "form");
    let response = post_json(base, "/api/questions", ask_body(json!([]))).await;
    assert_eq!(response.status(), 201);
    let question: Value = response.json().await.unwrap();
    let id = question["id"].as_str().unwrap();
    let names: Vec<&str> = question["form"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let reply = format!("/api/questions/{id}/reply");
    for (answer, why) in [
        (json!({"environment": "qa", "replicas": 2}), "Environment"),
        (
            json!({"environment": "staging", "replicas": 11}),
            "Replicas",
        ),
        (json!({"environment": "staging"}), "Replicas is required"),
        (
            json!({"environment": "staging", "replicas": 2, "colour": "red"}),
            "no field \"colour\"",
        ),
        (json!("staging"), "does not fit"),
    ] {
        let response = post_json(base, &reply, json!({"answer": answer})).await;
        assert_eq!(response.status(), 422, "{answer}");
        let body: Value = response.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains(why),
            "{answer}: {body}"
        );
    }
    assert_eq!(
        get_json(base, &format!("/api/questions/{id}")).await["status"],
        "pending"
    );
    let good = json!({"environment": "production", "replicas": 3});
    let response = post_json(base, &reply, json!({"answer": good})).await;
    assert_eq!(response.status(), 200);
    let answered: Value = response.json().await.unwrap();
    assert_eq!(
        answered["resolution"]["value"],
        json!({"environment": "production", "replicas": 3, "notify": false}),
        "the default fills the optional field left out"
    );
}

fn last_from_bot(fake: &FakeTelegram, contains: &str) -> Option<Sent> {
    fake.sent_in(GROUP)
        .into_iter()
        .rev()
        .find(|m| m.text.contains(contains))
}

async fn bot_says(fake: &FakeTelegram, contains: &str) -> Sent {
    found(Duration::from_secs(10), contains, || {
        last_from_bot(fake, contains)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_in_field_by_field_on_telegram_with_a_bad_value_in_between() {
    let redis = RedisServer::start();
    let fake = FakeTelegram::start();
    let server = Process::spawn(&["serve"], &fake.serve_env(&redis));
    let body = ask_body(json!([format!("telegram:{GROUP}")]));
    let question = ask_when_connected(&server.base, body).await;
    let id = question["id"].as_str().unwrap().to_owned();

    // The question's message asks the first field, with its choices as buttons.
    let shown = bot_says(&fake, "Field 1 of 4: Environment").await;
    fake.tap(GROUP, shown.id, &alice(), &shown.payload("1. Staging"));
    let second = bot_says(&fake, "Field 2 of 4: Replicas").await;
    assert!(
        second.text.contains("✓ Environment: staging"),
        "{}",
        second.text
    );
    assert!(
        second.text.contains("a whole number from 1 to 10"),
        "{}",
        second.text
    );

    // A value that does not fit: why, and the same field again; nothing stored.
    fake.say(GROUP, &alice(), "eleven");
    let refused = bot_says(&fake, "That does not fit Replicas").await;
    assert!(
        refused
            .text
            .contains("\"eleven\" is not a whole number from 1 to 10"),
        "{}",
        refused.text
    );
    assert!(refused.text.contains("Field 2 of 4"), "{}", refused.text);
    fake.say(GROUP, &alice(), "12");
    bot_says(&fake, "12 is out of range").await;
    fake.say(GROUP, &alice(), "3");
    let third = bot_says(&fake, "Field 3 of 4: Notify the team").await;
    let buttons: Vec<String> = third
        .buttons()
        .into_iter()
        .flatten()
        .map(|(label, _)| label)
        .collect();
    assert!(
        buttons.contains(&"Yes".to_owned()) && buttons.contains(&"Skip".to_owned()),
        "{buttons:?}"
    );

    // Back to the field before, then on again; /skip without an id (one form is open here).
    fake.say(GROUP, &alice(), &format!("/back {id}"));
    bot_says(&fake, "↩ Deploy settings?").await;
    fake.say(GROUP, &alice(), "4");
    let third = bot_says(&fake, "✓ Replicas: 4").await;
    fake.tap(GROUP, third.id, &alice(), &third.payload("Yes"));
    bot_says(&fake, "Field 4 of 4: Note").await;
    fake.say(GROUP, &alice(), "/skip");

    let answered = eventually_some(Duration::from_secs(10), "the form answered", || {
        let (base, id) = (server.base.clone(), id.clone());
        async move {
            let q = get_json(&base, &format!("/api/questions/{id}")).await;
            (q["status"] == "answered").then_some(q)
        }
    })
    .await;
    assert_eq!(
        answered["resolution"]["value"],
        json!({"environment": "staging", "replicas": 4, "notify": true})
    );
    assert_eq!(
        answered["resolution"]["by"],
        format!("telegram:{}", alice().id)
    );
    bot_says(
        &fake,
        "✓ Answered: environment: staging, replicas: 4, notify: true",
    )
    .await;

    println!("--- Telegram transcript: a form ---\n{}", fake.transcript());
}

#[tokio::test]
async fn a_forms_answer_reads_into_a_rust_type() {
    use askbridge::Bridge;
    use askbridge::store::memory::MemoryStore;
    use askbridge_core::form::FormSchema;
    use askbridge_core::{Actor, Answer, NewQuestion, Target};
    use std::sync::Arc;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Deploy {
        environment: String,
        replicas: u32,
        notify: bool,
        note: Option<String>,
    }

    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .channel(crate::support::FakeChannel::new("chat"))
        .start()
        .await
        .unwrap();
    let schema: FormSchema = serde_json::from_value(deploy_form()).unwrap();
    let session = bridge.session("typed");
    let asking = tokio::spawn(async move {
        session
            .form::<Deploy>(
                NewQuestion::ask("Deploy settings?")
                    .targets(["chat:1"])
                    .form(schema),
            )
            .await
    });
    let pending = eventually_some(Duration::from_secs(5), "the form asked", || {
        let bridge = bridge.clone();
        async move {
            let list = bridge
                .list(&askbridge::store::ListFilter::pending())
                .await
                .unwrap();
            list.into_iter().next()
        }
    })
    .await;
    let value = json!({"environment": "staging", "replicas": 2});
    let Value::Object(fields) = value else {
        unreachable!()
    };
    bridge
        .attempt(Attempt::reply(
            &pending.id,
            Answer::Object(fields).into(),
            Actor::api(),
            &Target::api(),
        ))
        .await
        .unwrap();
    let deploy = asking.await.unwrap().unwrap();
    assert_eq!(
        deploy,
        Deploy {
            environment: "staging".into(),
            replicas: 2,
            notify: false,
            note: None
        }
    );
}

/// A flow asks for a form and gets a typed value; the run ends with it.
#[tokio::test]
async fn a_flow_reads_a_forms_answer_into_its_type() {
    use askbridge::Flows;
    use askbridge::bridge::ProgramReply;
    use askbridge_core::form::FormSchema;
    use askbridge_core::run::RunState;
    use askbridge_core::{Actor, Answer, NewQuestion, Target};

    #[derive(serde::Deserialize)]
    struct Deploy {
        environment: String,
        replicas: u32,
    }

    let flows = Flows::new()
        .flow("deploy", "asks for settings", |ctx| async move {
            let schema: FormSchema = serde_json::from_value(deploy_form()).unwrap();
            let deploy: Deploy = ctx
                .form(NewQuestion::ask("Deploy settings?").form(schema))
                .await?;
            Ok(format!("{} x{}", deploy.environment, deploy.replicas))
        })
        .unwrap();
    let (bridge, _chat) = crate::support::memory_bridge_running(flows).await;
    let origin = crate::support::api_origin();
    let run = bridge
        .start_run("deploy", "", origin, askbridge::bridge::Storing::AtStart)
        .await
        .unwrap();
    let waiting = eventually_some(Duration::from_secs(10), "the run waits on its form", || {
        let (bridge, id) = (bridge.clone(), run.id.clone());
        async move {
            let run = bridge.get_run(id.as_str()).await.ok()?;
            run.waiting_on
        }
    })
    .await;
    let Value::Object(fields) = json!({"environment": "production", "replicas": 5}) else {
        unreachable!()
    };
    let reply = ProgramReply::from(Answer::Object(fields));
    bridge
        .attempt(Attempt::reply(
            &waiting,
            reply,
            Actor::api(),
            &Target::api(),
        ))
        .await
        .unwrap();
    let done = eventually_some(Duration::from_secs(10), "the run done", || {
        let (bridge, id) = (bridge.clone(), run.id.clone());
        async move {
            let run = bridge.get_run(id.as_str()).await.ok()?;
            (run.state == RunState::Done).then_some(run)
        }
    })
    .await;
    assert_eq!(done.result.as_deref(), Some("production x5"));
}
