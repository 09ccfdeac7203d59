//! What a run survives: waiting runs hold nothing in the process, a crash between an answer and
//! its resume and two processes on one Redis resume a run once, and a run's writes land in
//! order (its first step with it, a step's result before the function waits).

use super::*;

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
                args: None,
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
    let question = news.run.waiting_on.clone().expect("parked on More?");
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
