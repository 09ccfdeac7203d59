//! Follow-up runs: a chat message starts a flow, its asks return "pending", the next message
//! resumes it; steps run once; crashes and races resume exactly once; HTTP flows and callbacks.

use crate::support::{
    Call, FakeChannel, RedisServer, api_origin, bridge_over, bridge_running, bridge_with,
    eventually, eventually_some, http, memory_bridge, memory_bridge_running, message, serve,
    serve_api,
};
use askbridge::bridge::Attempt;
use askbridge::bridge::{Bridge, Storing};
use askbridge::config::Secret;
use askbridge::flows::FlowContext;
use askbridge::flows::http::HttpFlow;
use askbridge::http::{AppState, app};
use askbridge::signing;
use askbridge::store::memory::MemoryStore;
use askbridge::store::{ListFilter, Store, StoreOptions};
use askbridge::{BridgeOptions, Error, Flows, Interrupt, NoAnswer};
use askbridge_core::run::{Origin, RunState};
use askbridge_core::{Actor, Answer, Inbox, Millis, NewQuestion, Question, Transition};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(10);

/// Counts how often the flow's code ran, and how often its step's side effect happened.
#[derive(Clone, Default)]
struct Counters {
    executions: Arc<AtomicUsize>,
    side_effects: Arc<AtomicUsize>,
}

/// A flow with three asks and a step: the shape the issue asks to test.
fn trip(counters: &Counters) -> Flows {
    let counters = counters.clone();
    Flows::new()
        .flow("trip", "plans a trip", move |ctx: FlowContext| {
            let counters = counters.clone();
            async move {
                counters.executions.fetch_add(1, Ordering::SeqCst);
                let city = ctx.input().to_owned();
                let transport = ctx
                    .ask(
                        NewQuestion::ask(format!("How do we get to {city}?"))
                            .options(["train", "plane", "car"]),
                    )
                    .await?;
                let nights = match ctx
                    .ask(NewQuestion::ask("How many nights?").options(["1", "2", "3"]))
                    .await
                {
                    Ok(nights) => nights.to_string(),
                    Err(Interrupt::NoAnswer(NoAnswer::Declined { message })) => {
                        format!("unknown ({})", message.unwrap_or_default())
                    }
                    Err(other) => return Err(other),
                };
                let side_effects = counters.side_effects.clone();
                let booking = ctx
                    .step("book", async move {
                        format!(
                            "booking #{}",
                            side_effects.fetch_add(1, Ordering::SeqCst) + 1
                        )
                    })
                    .await?;
                let insure = ctx
                    .confirm(
                        NewQuestion::confirm("Add travel insurance?")
                            .timeout(Duration::from_secs(600)),
                    )
                    .await?;
                Ok(format!(
                    "{city} by {transport}, {nights} nights, {booking}, insurance: {insure}"
                ))
            }
        })
        .unwrap()
}

async fn waiting_question(bridge: &Bridge, chat: &str, prompt_start: &str) -> Question {
    let filter = ListFilter {
        target: Some(chat.into()),
        ..ListFilter::pending()
    };
    eventually_some(WITHIN, prompt_start, || {
        let bridge = bridge.clone();
        let filter = filter.clone();
        async move {
            bridge
                .list(&filter)
                .await
                .unwrap()
                .into_iter()
                .find(|q| q.prompt.starts_with(prompt_start))
        }
    })
    .await
}

fn said(channel: &FakeChannel) -> Vec<String> {
    channel
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::Say { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}

async fn wait_said(channel: &Arc<FakeChannel>, needle: &str) -> String {
    eventually_some(WITHIN, needle, || {
        let channel = channel.clone();
        let needle = needle.to_owned();
        async move { said(&channel).into_iter().find(|t| t.contains(&needle)) }
    })
    .await
}

#[tokio::test]
async fn a_chat_message_starts_a_run_and_each_answer_resumes_it() {
    let counters = Counters::default();
    let (bridge, chat) = memory_bridge_running(trip(&counters)).await;
    let started = bridge
        .handle(message("chat:7", "chat:1", "/trip Lisbon"))
        .await
        .unwrap();
    assert_eq!(started.text, "▶ trip started.");
    let first = waiting_question(&bridge, "chat:1", "How do we get to Lisbon?").await;
    assert_eq!(
        first.answerers,
        vec!["chat:7".to_owned()],
        "only the starter may answer"
    );
    assert!(bridge.waiters().is_empty(), "nothing waits in memory");
    // A stranger cannot answer; the starter answers by command.
    let refused = bridge
        .handle(message(
            "chat:8",
            "chat:1",
            &format!("/answer {} 2", first.id),
        ))
        .await
        .unwrap();
    assert_eq!(refused.text, "You can't answer this question.");
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} 2", first.id),
        ))
        .await
        .unwrap();
    let second = waiting_question(&bridge, "chat:1", "How many nights?").await;
    // A plain reply that does not fit keeps it waiting; one that fits answers it.
    let wrong = bridge
        .handle(message("chat:7", "chat:1", "a week"))
        .await
        .unwrap();
    assert!(
        wrong
            .text
            .contains("That doesn't answer \"How many nights?\""),
        "{}",
        wrong.text
    );
    assert!(bridge.get(&second.id).await.unwrap().is_pending());
    bridge
        .handle(message("chat:7", "chat:1", "3"))
        .await
        .unwrap();
    let third = waiting_question(&bridge, "chat:1", "Add travel insurance?").await;
    bridge
        .handle(message("chat:7", "chat:1", "yes"))
        .await
        .unwrap();
    let result = wait_said(&chat, "✓ trip:").await;
    assert_eq!(
        result,
        "✓ trip: Lisbon by plane, 3 nights, booking #1, insurance: true"
    );
    assert_eq!(
        counters.side_effects.load(Ordering::SeqCst),
        1,
        "the step ran once across all replays"
    );
    // Started once; each answer first carries the run ahead (one poll of the function, writing
    // nothing). The first reaches the next question that way; the second meets the booking step
    // and the third the end, so those two run again after their claim.
    assert_eq!(
        counters.executions.load(Ordering::SeqCst),
        6,
        "started once, carried ahead three times, resumed twice"
    );
    assert_eq!(
        said(&chat)
            .iter()
            .filter(|t| t.starts_with("✓ trip"))
            .count(),
        1
    );
    let run_id = third.run_id.clone().unwrap();
    let run = bridge.get_run(run_id.as_str()).await.unwrap();
    assert_eq!((run.state, run.reported), (RunState::Done, true));
    assert_eq!(run.journal.len(), 4, "three asks and a step");
}

#[tokio::test]
async fn declines_and_expiry_reach_the_flow() {
    let counters = Counters::default();
    let (bridge, chat) = memory_bridge_running(trip(&counters)).await;
    bridge
        .handle(message("chat:7", "chat:1", "/run trip Oslo"))
        .await
        .unwrap();
    let first = waiting_question(&bridge, "chat:1", "How do we get to Oslo?").await;
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} train", first.id),
        ))
        .await
        .unwrap();
    let second = waiting_question(&bridge, "chat:1", "How many nights?").await;
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/decline {} ask Bob", second.id),
        ))
        .await
        .unwrap();
    let third = waiting_question(&bridge, "chat:1", "Add travel insurance?").await;
    // Let the last question expire: the flow's confirm reads a timeout as no.
    bridge
        .store()
        .claim(
            &third,
            &askbridge_core::Claim::new(
                Transition::Expire,
                askbridge_core::Decider::Deadline,
                Millis::now(),
            ),
            askbridge::store::ClaimOptions::new(Duration::ZERO),
        )
        .await
        .unwrap();
    bridge
        .store()
        .reschedule(&third.id, Millis::now())
        .await
        .unwrap();
    let result = wait_said(&chat, "✓ trip:").await;
    assert_eq!(
        result,
        "✓ trip: Oslo by train, unknown (ask Bob) nights, booking #1, insurance: false"
    );
}

#[tokio::test]
async fn a_flow_error_and_a_changed_flow_fail_in_one_clear_line() {
    let failing = Flows::new()
        .flow("boom", "fails", |_ctx| async {
            Err(Interrupt::fail("the disk is full"))
        })
        .unwrap()
        .flow("count", "parses its input", |ctx| async move {
            let n: u32 = ctx.input().parse().expect("a number");
            Ok(n.to_string())
        })
        .unwrap();
    let store: Arc<dyn askbridge::store::Store> = Arc::new(MemoryStore::default());
    let shape = |prompt: &'static str| {
        move |ctx: FlowContext| async move {
            ctx.ask(NewQuestion::ask(prompt))
                .await
                .map(|a| a.to_string())
        }
    };
    let v1 = failing.clone().flow("shape", "v1", shape("Old question?"));
    let (bridge, chat) = bridge_running(store.clone(), v1.unwrap()).await;
    bridge
        .handle(message("chat:7", "chat:1", "/count many"))
        .await
        .unwrap();
    let panicked = wait_said(&chat, "count failed").await;
    assert!(
        panicked.starts_with("✗ count failed: the flow panicked: a number"),
        "{panicked}"
    );
    bridge
        .handle(message("chat:7", "chat:1", "/boom"))
        .await
        .unwrap();
    assert_eq!(
        wait_said(&chat, "boom").await,
        "✗ boom failed: the disk is full"
    );
    bridge
        .handle(message("chat:7", "chat:1", "/shape"))
        .await
        .unwrap();
    let old = waiting_question(&bridge, "chat:1", "Old question?").await;
    // The flow's code changes while the run waits: askbridge restarts with the new code.
    bridge.shutdown();
    bridge.stopped().await;
    let v2 = failing.flow("shape", "v2", shape("New question?"));
    let (bridge, chat) = bridge_running(store, v2.unwrap()).await;
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} hello", old.id),
        ))
        .await
        .unwrap();
    let failure = wait_said(&chat, "shape failed").await;
    assert_eq!(
        failure,
        "✗ shape failed: The flow changed while the run waited: it now asks \"New question?\" where its journal recorded the question \"Old question?\"."
    );
    let boom = Flows::new()
        .flow("boom", "fails", |_ctx| async {
            Err(Interrupt::fail("the disk is full"))
        })
        .unwrap();
    let guarded = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            flow_starters: vec!["chat:7".into()],
            ..BridgeOptions::default()
        })
        .runner(Arc::new(boom))
        .start()
        .await
        .unwrap();
    let stranger = guarded
        .handle(message("chat:8", "chat:1", "/boom"))
        .await
        .unwrap();
    assert_eq!(
        stranger.text,
        "You can't start flows here (ASKBRIDGE_FLOW_STARTERS)."
    );
    let unknown = bridge
        .handle(message("chat:7", "chat:1", "/run nothing"))
        .await
        .unwrap();
    assert_eq!(
        unknown.text,
        "There is no flow `nothing`. Send /help to see the flows."
    );
    let help = bridge
        .handle(message("chat:7", "chat:1", "/help"))
        .await
        .unwrap();
    assert!(
        help.text.contains("/boom  fails") && help.text.contains("/shape  v2"),
        "{}",
        help.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_runs_hold_no_task_and_no_memory_in_the_process() {
    let counters = Counters::default();
    let (bridge, _) = memory_bridge_running(trip(&counters)).await;
    let metrics = tokio::runtime::Handle::current().metrics();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let baseline = metrics.num_alive_tasks();
    const RUNS: usize = 2000;
    for n in 0..RUNS {
        let origin = Origin {
            chat: Some("chat:1".into()),
            user: format!("chat:{n}").into(),
            user_name: None,
        };
        bridge
            .start_run("trip", "Rome", origin, Storing::AtStart)
            .await
            .unwrap();
    }
    eventually(
        Duration::from_secs(30),
        "every run parked on its first question",
        || {
            let bridge = bridge.clone();
            async move {
                bridge
                    .list(&ListFilter {
                        limit: usize::MAX,
                        ..ListFilter::pending()
                    })
                    .await
                    .unwrap()
                    .len()
                    == RUNS
            }
        },
    )
    .await;
    eventually(Duration::from_secs(30), "their tasks ended", || async {
        metrics.num_alive_tasks() <= baseline + 5
    })
    .await;
    assert!(bridge.waiters().is_empty());
    assert_eq!(counters.executions.load(Ordering::SeqCst), RUNS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_the_answer_and_the_resume_is_picked_up_at_startup() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::default());
    let counters = Counters::default();
    let (first, _) = bridge_with(store.clone(), |b| b.runner(Arc::new(trip(&counters)))).await;
    first
        .handle(message("chat:7", "chat:1", "/trip Paris"))
        .await
        .unwrap();
    let question = waiting_question(&first, "chat:1", "How do we get to Paris?").await;
    first.shutdown();
    // The first process wins the claim, then dies before its effects (the resume) run.
    let claim = askbridge_core::Claim::new(
        Transition::Answer {
            value: Answer::Text("car".into()),
        },
        Actor::new("chat:7", "chat"),
        Millis::now(),
    );
    store
        .claim(
            &question,
            &claim,
            askbridge::store::ClaimOptions::new(Duration::ZERO),
        )
        .await
        .unwrap();
    // A new process on the same store finds the resolved question in the outbox.
    // Flows are registered before the bridge starts, as `serve` does: a sweep that found the
    // resolved question before the flow was there would leave it to the grace period.
    let (second, _) = bridge_with(store.clone(), |b| b.runner(Arc::new(trip(&counters)))).await;
    let next = waiting_question(&second, "chat:1", "How many nights?").await;
    assert_eq!(next.run_id, question.run_id);
    assert_eq!(
        counters.executions.load(Ordering::SeqCst),
        2,
        "resumed exactly once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_on_one_redis_resume_a_run_once() {
    let server = RedisServer::start();
    let connect = || async {
        let store = crate::support::redis_store_on(&server, StoreOptions::default()).await;
        Arc::new(store) as Arc<dyn Store>
    };
    let counters = Counters::default();
    let (a, chat_a) = bridge_with(connect().await, |a| a.runner(Arc::new(trip(&counters)))).await;
    let (b, chat_b) = bridge_with(connect().await, |b| b.runner(Arc::new(trip(&counters)))).await;
    a.handle(message("chat:7", "chat:1", "/trip Rome"))
        .await
        .unwrap();
    let first = waiting_question(&a, "chat:1", "How do we get to Rome?").await;
    // B gets the answer; A's sweeper is made to settle the same question at the same time.
    let answering = b.handle(message(
        "chat:7",
        "chat:1",
        &format!("/answer {} 1", first.id),
    ));
    let sweeping = async {
        a.store()
            .reschedule(&first.id, Millis::now())
            .await
            .unwrap();
        a.sweep_once().await.unwrap();
    };
    let (reply, ()) = tokio::join!(answering, sweeping);
    assert!(reply.unwrap().text.starts_with("✓ Answered: train"));
    let second = waiting_question(&b, "chat:1", "How many nights?").await;
    for bridge in [&a, &b] {
        bridge
            .store()
            .reschedule(&first.id, Millis::now())
            .await
            .unwrap();
        bridge.sweep_once().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        counters.executions.load(Ordering::SeqCst),
        2,
        "one start, one resume"
    );
    a.attempt(Attempt::transition(
        &second.id,
        Transition::Answer {
            value: Answer::Text("2".into()),
        },
        Actor::new("chat:7", "chat"),
        &"chat:1".into(),
    ))
    .await
    .unwrap();
    let third = waiting_question(&a, "chat:1", "Add travel insurance?").await;
    b.handle(message(
        "chat:7",
        "chat:1",
        &format!("/answer {} no", third.id),
    ))
    .await
    .unwrap();
    let chats = [chat_a, chat_b];
    eventually(WITHIN, "the result posted once", || async {
        chats
            .iter()
            .map(|c| said(c).iter().filter(|t| t.starts_with("✓ trip")).count())
            .sum::<usize>()
            == 1
    })
    .await;
    assert_eq!(counters.side_effects.load(Ordering::SeqCst), 1);
    // One start and one resume per answer (4); a process that knows the run also executes it
    // once ahead of a claim, and drops that at the step and at the end (flows/ahead.rs).
    let executions = counters.executions.load(Ordering::SeqCst);
    assert!((4..=6).contains(&executions), "{executions} executions");
}

#[tokio::test]
async fn blocking_mode_runs_the_same_flow_with_waiting_asks() {
    let counters = Counters::default();
    let (bridge, _) = memory_bridge_running(trip(&counters)).await;
    let session = bridge.session("blocking-1");
    let running = {
        let bridge = bridge.clone();
        let flows = trip(&counters);
        tokio::spawn(async move { flows.run_blocking(&bridge, "trip", "Vienna", session).await })
    };
    for (prompt, answer) in [
        ("How do we get to Vienna?", "train"),
        ("How many nights?", "1"),
        ("Add travel insurance?", "no"),
    ] {
        let q = waiting_question(&bridge, "chat:1", prompt).await;
        let transition = q.read_typed(answer).unwrap();
        bridge
            .attempt(Attempt::transition(
                &q.id,
                transition,
                Actor::new("chat:7", "chat"),
                &"chat:1".into(),
            ))
            .await
            .unwrap();
    }
    let result = tokio::time::timeout(WITHIN, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        result,
        "Vienna by train, 1 nights, booking #1, insurance: false"
    );
    assert_eq!(
        counters.executions.load(Ordering::SeqCst),
        1,
        "blocking mode runs once, without replays"
    );
}

/// A flow endpoint in the test: checks askbridge's signature with its own secret, then plays a
/// two-question flow from the journal it receives.
async fn flow_endpoint(secret: &'static str) -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let recorder = seen.clone();
    let route = axum::routing::post(
        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let recorder = recorder.clone();
            async move {
                let signature = headers
                    .get(signing::SIGNATURE_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                if signing::verify(
                    secret.as_bytes(),
                    signature,
                    &body,
                    Millis::now(),
                    signing::DEFAULT_TOLERANCE,
                )
                .is_err()
                {
                    return (
                        axum::http::StatusCode::UNAUTHORIZED,
                        axum::Json(json!({"error": "bad signature"})),
                    );
                }
                let request: Value = serde_json::from_slice(&body).unwrap();
                recorder.lock().unwrap().push(request.clone());
                let journal = request["journal"].as_array().unwrap();
                let reply = match journal.len() {
                    0 => json!({"ask": {"prompt": "Which region?", "options": ["eu", "us"]}}),
                    1 => {
                        json!({"ask": {"kind": "confirm", "prompt": format!("Scale {} to 3 nodes?", journal[0]["value"].as_str().unwrap())}})
                    }
                    _ => {
                        json!({"reply": format!("scaled {} ({})", journal[0]["value"].as_str().unwrap(), journal[1]["value"])})
                    }
                };
                (axum::http::StatusCode::OK, axum::Json(reply))
            }
        },
    );
    let url = format!(
        "{}/flow",
        serve(axum::Router::new().route("/flow", route)).await
    );
    (url, seen)
}

/// A bridge with the endpoint's flow registered as `scale`, signing with `secret`, and a run of
/// it started.
async fn scale_run(secret: &str) -> (Bridge, Arc<FakeChannel>, Arc<std::sync::Mutex<Vec<Value>>>) {
    let (url, seen) = flow_endpoint("endpoint-secret").await;
    let flow = HttpFlow::new("scale", &url, Secret::new(secret));
    let flows = Flows::new().register("scale", Arc::new(flow)).unwrap();
    let (bridge, chat) = memory_bridge_running(flows).await;
    bridge
        .handle(message("chat:7", "chat:1", "/scale web"))
        .await
        .unwrap();
    (bridge, chat, seen)
}

#[tokio::test]
async fn an_http_flow_endpoint_is_called_signed_and_resumed_with_its_journal() {
    let (bridge, chat, seen) = scale_run("endpoint-secret").await;
    let region = waiting_question(&bridge, "chat:1", "Which region?").await;
    bridge
        .handle(message("chat:7", "chat:1", "eu"))
        .await
        .unwrap();
    waiting_question(&bridge, "chat:1", "Scale eu to 3 nodes?").await;
    bridge
        .handle(message("chat:7", "chat:1", "y"))
        .await
        .unwrap();
    assert_eq!(
        wait_said(&chat, "✓ scale").await,
        "✓ scale: scaled eu (true)"
    );
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0]["input"], "web");
    assert_eq!(requests[0]["origin"]["user"], "chat:7");
    assert_eq!(requests[1]["journal"][0]["question_id"], region.id.as_str());
    assert_eq!(requests[1]["journal"][0]["status"], "answered");
    assert_eq!(requests[2]["journal"][1]["value"], true);
}

#[tokio::test]
async fn an_http_flow_refusing_a_wrong_signature_fails_the_run_clearly() {
    let (_bridge, chat, seen) = scale_run("not-the-secret").await;
    assert_eq!(
        wait_said(&chat, "scale failed").await,
        "✗ scale failed: the flow endpoint answered 401 Unauthorized"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "the endpoint acted on nothing"
    );
}

#[tokio::test]
async fn callback_urls_get_the_resolved_question_signed() {
    let received = Arc::new(std::sync::Mutex::new(Vec::<(String, Value)>::new()));
    let recorder = received.clone();
    let route = axum::routing::post(
        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let recorder = recorder.clone();
            async move {
                let signature = headers
                    .get(signing::SIGNATURE_HEADER)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                let ok = signing::verify(
                    b"callback-secret",
                    &signature,
                    &body,
                    Millis::now(),
                    signing::DEFAULT_TOLERANCE,
                )
                .is_ok();
                recorder
                    .lock()
                    .unwrap()
                    .push((ok.to_string(), serde_json::from_slice(&body).unwrap()));
                axum::http::StatusCode::NO_CONTENT
            }
        },
    );
    let callback = format!(
        "{}/done",
        serve(axum::Router::new().route("/done", route)).await
    );
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            signing_secret: Some(Secret::new("callback-secret")),
            // The test's receiver is on loopback, which callbacks may not reach by default.
            callback_egress: askbridge::egress::Egress::public_only()
                .allow(["127.0.0.1"])
                .unwrap(),
            ..BridgeOptions::default()
        })
        .start()
        .await
        .unwrap();
    let router = app(AppState::new(bridge.clone(), None));
    let base = serve(router).await;
    let body =
        json!({"session_id": "cb", "prompt": "Ship?", "kind": "confirm", "callback_url": callback});
    let q: Value = http()
        .post(format!("{base}/api/questions"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = q["id"].as_str().unwrap();
    http()
        .post(format!("{base}/api/questions/{id}/reply"))
        .json(&json!({"answer": true}))
        .send()
        .await
        .unwrap();
    let (verified, question) = eventually_some(WITHIN, "the callback", || {
        let received = received.clone();
        async move { received.lock().unwrap().first().cloned() }
    })
    .await;
    assert_eq!(verified, "true", "signed with the shared secret");
    assert_eq!(question["id"], id);
    assert_eq!(question["resolution"]["value"], true);
    // Without a secret configured, callback URLs are refused rather than sent unsigned.
    let (plain, _) = memory_bridge().await;
    let mut with_callback = NewQuestion::ask("x").session("s");
    with_callback.callback_url = Some("http://127.0.0.1:9/cb".into());
    assert!(matches!(
        plain.create(with_callback).await,
        Err(Error::Model(askbridge_core::Error::Invalid {
            field: "callback_url",
            ..
        }))
    ));
}

#[tokio::test]
async fn runs_start_over_the_http_api_too() {
    let counters = Counters::default();
    let (bridge, _) = memory_bridge_running(trip(&counters)).await;
    let router = app(AppState::new(bridge.clone(), None));
    let base = serve(router).await;
    let response = http()
        .post(format!("{base}/api/runs"))
        .json(&json!({"flow": "trip", "input": "Bern"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let run: Value = response.json().await.unwrap();
    let run_id = run["id"].as_str().unwrap().to_owned();
    let question = eventually_some(WITHIN, "the run's question", || {
        let bridge = bridge.clone();
        let run_id = run_id.clone();
        async move {
            bridge
                .list(&ListFilter::pending())
                .await
                .unwrap()
                .into_iter()
                .find(|q| q.run_id.as_ref().is_some_and(|r| r.as_str() == run_id))
        }
    })
    .await;
    assert!(question.targets.is_empty(), "no chat: answered over HTTP");
    assert_eq!(question.answerers, vec!["api".to_owned()]);
    let r = http()
        .post(format!("{base}/api/questions/{}/reply", question.id))
        .json(&json!({"answer": "car"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let bad = http()
        .post(format!("{base}/api/runs"))
        .json(&json!({"flow": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    let stored: Value = http()
        .get(format!("{base}/api/runs/{run_id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stored["flow"], "trip");
}

#[tokio::test]
async fn a_run_asks_for_approval_and_is_bound_to_the_action() {
    // Without approvers, a run's approval fails the run, clearly: nobody may approve it.
    let clean = Flows::new()
        .flow("clean", "cleans", |ctx: FlowContext| async move {
            let action = askbridge_core::Action::new("shell", json!({"command": "make clean"}));
            ctx.approve(NewQuestion::ask("May I clean?").approve(action))
                .await?;
            Ok("cleaned".into())
        })
        .unwrap();
    let (unconfigured, unconfigured_chat) = memory_bridge_running(clean).await;
    unconfigured
        .handle(message("chat:7", "chat:1", "/clean"))
        .await
        .unwrap();
    let failure = wait_said(&unconfigured_chat, "clean failed").await;
    assert!(failure.contains("an approval needs approvers"), "{failure}");
    // With the starter configured as an approver, the run waits for the decision.
    let command = Arc::new(std::sync::Mutex::new("rm -rf build/".to_owned()));
    let current = command.clone();
    let clean = Flows::new()
        .flow("clean", "cleans the build", move |ctx: FlowContext| {
            let command = current.lock().unwrap().clone();
            async move {
                let action = askbridge_core::Action::new("shell", json!({"command": command}));
                let approval = ctx
                    .approve(NewQuestion::ask("May I clean?").approve(action.clone()))
                    .await?;
                assert!(approval.covers(&action));
                Ok(format!("ran `{command}` ({approval:?})"))
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
        .runner(Arc::new(clean))
        .start()
        .await
        .unwrap();
    bridge
        .handle(message("chat:7", "chat:1", "/clean"))
        .await
        .unwrap();
    let q = waiting_question(&bridge, "chat:1", "May I clean?").await;
    assert_eq!(
        q.answerers,
        vec!["chat:7".to_owned()],
        "the configured approvers"
    );
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} once", q.id),
        ))
        .await
        .unwrap();
    assert!(
        wait_said(&chat, "✓ clean")
            .await
            .starts_with("✓ clean: ran `rm -rf build/` (Once")
    );
    // The action changes while a second run waits: the approval does not stretch to it.
    bridge
        .handle(message("chat:7", "chat:1", "/clean"))
        .await
        .unwrap();
    let second = eventually_some(WITHIN, "the second approval", || {
        let bridge = bridge.clone();
        let first = q.id.clone();
        async move {
            bridge
                .list(&ListFilter::pending())
                .await
                .unwrap()
                .into_iter()
                .find(|p| p.id != first && p.prompt == "May I clean?")
        }
    })
    .await;
    *command.lock().unwrap() = "rm -rf /".to_owned();
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} once", second.id),
        ))
        .await
        .unwrap();
    let failure = wait_said(&chat, "clean failed").await;
    assert!(
        failure.starts_with("✗ clean failed: The flow changed while the run waited"),
        "{failure}"
    );
}

/// `GET /api/runs/{id}/wait` hands a client each next question of a run, and its end, without
/// polling: on the process that drives the run, and on another one sharing the Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_follows_a_run_question_by_question_with_run_wait() {
    let fixture = crate::support::redis_store().await;
    let (driver, _) = bridge_running(
        fixture.store.clone(),
        askbridge::demo::with_example_flows(Flows::new()).unwrap(),
    )
    .await;
    let other_store =
        crate::support::redis_store_on(&fixture.server, StoreOptions::default()).await;
    let (watcher, _) = bridge_over(Arc::new(other_store)).await;
    let driver_base = serve_api(driver.clone()).await;
    let watcher_base = serve_api(watcher.clone()).await;
    let run: Value = http()
        .post(format!("{driver_base}/api/runs"))
        .json(&json!({"flow": "release", "input": "2.0"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run_id = run["id"].as_str().unwrap().to_owned();
    let mut after = String::new();
    let mut prompts = Vec::new();
    for (n, answer) in [json!("beta"), json!("Faster."), json!(true)]
        .into_iter()
        .enumerate()
    {
        // Alternate between the two processes' endpoints.
        let base = if n % 2 == 0 {
            &driver_base
        } else {
            &watcher_base
        };
        let waited: Value = http()
            .get(format!(
                "{base}/api/runs/{run_id}/wait?after={after}&timeout_s=10"
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(waited["state"], "waiting", "{waited}");
        let question = &waited["question"];
        assert_eq!(question["id"], waited["waiting_on"]);
        prompts.push(question["prompt"].as_str().unwrap().to_owned());
        after = question["id"].as_str().unwrap().to_owned();
        let replied = http()
            .post(format!("{base}/api/questions/{after}/reply"))
            .json(&json!({"answer": answer}))
            .send()
            .await
            .unwrap();
        let status = replied.status();
        assert_eq!(status, 200, "{n}: {}", replied.text().await.unwrap());
    }
    let finished: Value = http()
        .get(format!(
            "{watcher_base}/api/runs/{run_id}/wait?after={after}&timeout_s=10"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(finished["state"], "done", "{finished}");
    assert!(
        finished["result"]
            .as_str()
            .unwrap()
            .starts_with("Published 2.0 on beta")
    );
    assert_eq!(
        prompts,
        [
            "Release 2.0 on which channel?",
            "One line for the release notes?",
            "Publish 2.0 on beta?"
        ]
    );
    // A wait that nothing answers returns the run as it is when the time is up.
    let unknown = http()
        .get(format!(
            "{driver_base}/api/runs/r0000000000zz/wait?timeout_s=0"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

/// `POST /api/runs` with `wait_s` responds at the run's first question, and
/// `POST /api/runs/{id}/answer` answers the question the run waits on and responds with its next
/// step: one round trip per step, on either of two processes sharing the Redis. Bad answers and
/// stale question ids change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_answers_a_run_step_by_step_in_one_round_trip_each() {
    let fixture = crate::support::redis_store().await;
    let (driver, _) = bridge_running(
        fixture.store.clone(),
        askbridge::demo::with_example_flows(Flows::new()).unwrap(),
    )
    .await;
    let other_store =
        crate::support::redis_store_on(&fixture.server, StoreOptions::default()).await;
    let (other, _) = bridge_over(Arc::new(other_store)).await;
    let bases = [
        serve_api(driver.clone()).await,
        serve_api(other.clone()).await,
    ];
    let post = |url: String, body: Value| async move {
        let response = http().post(url).json(&body).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().await.unwrap())
    };
    let (status, first) = post(
        format!("{}/api/runs", bases[0]),
        json!({"flow": "release", "input": "2.0", "wait_s": 10}),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["state"], "waiting", "{first}");
    assert_eq!(first["question"]["prompt"], "Release 2.0 on which channel?");
    let run_id = first["id"].as_str().unwrap().to_owned();
    let first_question = first["question"]["id"].as_str().unwrap().to_owned();

    // An answer that does not fit (two values for a one-value question): refused, the run
    // still waits on the same question.
    let (status, refused) = post(
        format!("{}/api/runs/{run_id}/answer", bases[1]),
        json!({"answer": ["beta", "stable"]}),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    // A question id the run does not wait on: refused, nothing answered.
    let (status, stale) = post(
        format!("{}/api/runs/{run_id}/answer", bases[1]),
        json!({"answer": "beta", "question_id": "q000000000"}),
    )
    .await;
    assert_eq!(status, 409, "{stale}");
    assert_eq!(stale["waiting_on"], first_question.as_str(), "{stale}");

    let mut prompts = Vec::new();
    let mut step = first;
    for (n, answer) in [json!("beta"), json!("Faster.")].into_iter().enumerate() {
        let question_id = step["question"]["id"].clone();
        let (status, next) = post(
            format!("{}/api/runs/{run_id}/answer", bases[(n + 1) % 2]),
            json!({"answer": answer, "question_id": question_id, "timeout_s": 10}),
        )
        .await;
        assert_eq!(status, 200, "{next}");
        assert_eq!(next["state"], "waiting", "{next}");
        assert_ne!(next["question"]["id"], question_id);
        prompts.push(next["question"]["prompt"].as_str().unwrap().to_owned());
        step = next;
    }
    assert_eq!(
        prompts,
        ["One line for the release notes?", "Publish 2.0 on beta?"]
    );
    // The last answer, without naming the question: the run's end comes back.
    let (status, done) = post(
        format!("{}/api/runs/{run_id}/answer", bases[0]),
        json!({"answer": true, "timeout_s": 10}),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["state"], "done", "{done}");
    assert!(
        done["result"]
            .as_str()
            .unwrap()
            .starts_with("Published 2.0 on beta"),
        "{done}"
    );
    // Nothing left to answer.
    let (status, over) = post(
        format!("{}/api/runs/{run_id}/answer", bases[1]),
        json!({"answer": true}),
    )
    .await;
    assert_eq!(status, 409, "{over}");
    assert!(
        over["error"].as_str().unwrap().contains("it is done"),
        "{over}"
    );
    let (status, unknown) = post(
        format!("{}/api/runs/r0000000000zz/answer", bases[0]),
        json!({"answer": true}),
    )
    .await;
    assert_eq!(status, 404, "{unknown}");
}

/// A run started for a caller that waits for its first step is stored by its first write,
/// whatever that is: a step's journal entry, its first question, or its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stored_with_its_first_step_is_stored_by_whichever_write_comes_first() {
    let fixture = crate::support::redis_store().await;
    let flows = Flows::new()
        .flow("count", "a step, then a question", |ctx| async move {
            let n = ctx.step("count", async { 41 + 1 }).await?;
            let more = ctx.ask(NewQuestion::ask("More?")).await?;
            Ok(format!("{n} {more}"))
        })
        .unwrap()
        .flow("broken", "fails before asking", |_ctx| async move {
            Err(Interrupt::fail("no input"))
        })
        .unwrap();
    let (bridge, _) = bridge_running(fixture.store.clone(), flows).await;
    let origin = crate::support::api_origin();
    let settled = |id: askbridge_core::RunId, state: RunState| {
        let bridge = bridge.clone();
        async move {
            crate::support::eventually_some(Duration::from_secs(10), "the run's state", || {
                let (bridge, id) = (bridge.clone(), id.clone());
                async move {
                    let run = bridge.get_run(id.as_str()).await.ok()?;
                    (run.state == state).then_some(run)
                }
            })
            .await
        }
    };
    let counting = bridge
        .start_run("count", "", origin.clone(), Storing::WithFirstStep)
        .await
        .unwrap();
    let parked = settled(counting.id.clone(), RunState::Waiting).await;
    assert_eq!(
        parked.journal.len(),
        1,
        "the step's entry: {:?}",
        parked.journal
    );
    let question = bridge
        .get(parked.waiting_on.as_ref().unwrap())
        .await
        .unwrap();
    assert_eq!(question.prompt, "More?");
    bridge
        .attempt(Attempt::reply(
            &question.id,
            askbridge::bridge::ProgramReply {
                answer: Answer::Text("yes".into()),
                message: None,
                digest: None,
            },
            Actor::api(),
            &askbridge_core::Target::api(),
        ))
        .await
        .unwrap();
    let done = settled(counting.id, RunState::Done).await;
    assert_eq!(done.result.as_deref(), Some("42 yes"));

    let broken = bridge
        .start_run("broken", "", origin, Storing::WithFirstStep)
        .await
        .unwrap();
    let failed = settled(broken.id, RunState::Failed).await;
    assert!(failed.result.unwrap().contains("no input"));
}

/// A step's result is written with the run's next write, but never later than the function's
/// first wait after it (flows/gate.rs): while the function sleeps, the store has it.
#[tokio::test]
async fn a_steps_result_is_written_before_the_function_waits_on_anything() {
    let works = Arc::new(AtomicUsize::new(0));
    let counted = works.clone();
    let flows = Flows::new()
        .flow(
            "slow",
            "a step, a pause, a question",
            move |ctx: FlowContext| {
                let counted = counted.clone();
                async move {
                    let n = ctx
                        .step(
                            "work",
                            async move { counted.fetch_add(1, Ordering::SeqCst) + 1 },
                        )
                        .await?;
                    tokio::time::sleep(Duration::from_millis(800)).await;
                    let more = ctx.ask(NewQuestion::ask("More?")).await?;
                    Ok(format!("{n} {more}"))
                }
            },
        )
        .unwrap();
    let (bridge, _) = memory_bridge_running(flows).await;
    let run = bridge
        .start_run("slow", "", api_origin(), Storing::AtStart)
        .await
        .unwrap();
    let id = run.id.to_string();
    let during = eventually_some(Duration::from_secs(5), "the step's record", || {
        let (bridge, id) = (bridge.clone(), id.clone());
        async move {
            let run = bridge.get_run(&id).await.unwrap();
            let recorded = run
                .journal
                .iter()
                .any(|e| matches!(e, askbridge_core::run::JournalEntry::Step { .. }));
            recorded.then_some(run)
        }
    })
    .await;
    assert_eq!(
        during.state,
        RunState::Running,
        "written during the pause, before the question"
    );
    let news = bridge
        .wait_run(&id, None, Duration::from_secs(5))
        .await
        .unwrap();
    let question = news.run.waiting_on.expect("parked on More?");
    bridge
        .attempt(Attempt::transition(
            &question,
            Transition::Answer {
                value: Answer::Text("no".into()),
            },
            Actor::api(),
            &"api".into(),
        ))
        .await
        .unwrap();
    let done = bridge
        .wait_run(&id, Some(&question), Duration::from_secs(5))
        .await
        .unwrap()
        .run;
    assert_eq!(done.result.as_deref(), Some("1 no"), "{done:?}");
    assert_eq!(works.load(Ordering::SeqCst), 1);
}
