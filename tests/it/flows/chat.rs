//! Runs from chat: a message starts a flow and each answer resumes it, declines and expiry
//! reach the flow, a flow's error or change fails the run in one line, and blocking mode runs the
//! same flow with waiting asks.

use super::*;

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
