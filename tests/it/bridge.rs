//! The registry: ask/confirm/can_ask, expiry, cancellation, first-answer-wins withdrawal,
//! recovery after a restart, and retries while a channel is down.

use crate::store_conformance;
use crate::support::{Call, FakeChannel, bridge_over, eventually, eventually_some, memory_bridge};
use askbridge::Error;
use askbridge::bridge::Attempt;
use askbridge::bridge::Bridge;
use askbridge::store::memory::MemoryStore;
use askbridge::store::{ListFilter, StoreOptions};
use askbridge::{AskError, NoAnswer};
use askbridge_core::{Actor, Answer, Kind, NewQuestion, Status, Transition};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(5);

fn answer(text: &str) -> Transition {
    Transition::Answer {
        value: Answer::Text(text.into()),
    }
}

async fn first_pending(bridge: &Bridge) -> askbridge_core::Question {
    eventually_some(WITHIN, "a pending question", || {
        let bridge = bridge.clone();
        async move {
            bridge
                .list(&ListFilter::pending())
                .await
                .unwrap()
                .into_iter()
                .next()
        }
    })
    .await
}

#[tokio::test]
async fn ask_returns_the_answer_given_on_a_surface() {
    let (bridge, _) = memory_bridge().await;
    let session = bridge.session("run-1");
    assert!(session.can_ask());
    let asking = tokio::spawn(async move {
        session
            .ask(NewQuestion::ask("Which library?").options(["dayjs", "luxon"]))
            .await
    });
    let q = first_pending(&bridge).await;
    assert_eq!(q.session_id, "run-1");
    assert_eq!(q.targets, vec!["chat:1".to_owned()]);
    bridge
        .attempt(Attempt::transition(
            &q.id,
            answer("luxon"),
            Actor::new("chat:7", "chat"),
            &"chat:1".into(),
        ))
        .await
        .unwrap();
    assert_eq!(asking.await.unwrap().unwrap(), Answer::Text("luxon".into()));
}

#[tokio::test]
async fn a_decline_reaches_the_asker_with_its_message() {
    let (bridge, _) = memory_bridge().await;
    let session = bridge.session("run-1");
    let asking = tokio::spawn(async move { session.ask(NewQuestion::ask("Name?")).await });
    let q = first_pending(&bridge).await;
    let decline = Transition::Decline {
        message: Some("ask Bob".into()),
    };
    bridge
        .attempt(Attempt::transition(
            &q.id,
            decline,
            Actor::new("chat:7", "chat"),
            &"chat:1".into(),
        ))
        .await
        .unwrap();
    match asking.await.unwrap() {
        Err(AskError::NoAnswer(NoAnswer::Declined { message })) => {
            assert_eq!(message.as_deref(), Some("ask Bob"))
        }
        other => panic!("expected a decline, got {other:?}"),
    }
}

#[tokio::test]
async fn timeout_gives_the_default_or_an_explicit_error_never_an_empty_answer() {
    let (bridge, channel) = memory_bridge().await;
    let session = bridge.session("run-1");
    let with_default = NewQuestion::ask("Which?")
        .options(["a", "b"])
        .default_answer(Answer::Text("b".into()))
        .timeout(Duration::from_millis(300));
    assert_eq!(
        session.ask(with_default).await.unwrap(),
        Answer::Text("b".into())
    );
    let without = NewQuestion::ask("Which?")
        .options(["a", "b"])
        .timeout(Duration::from_millis(300));
    assert!(matches!(
        session.ask(without).await,
        Err(AskError::NoAnswer(NoAnswer::Timeout { .. }))
    ));
    let expired = bridge
        .list(&ListFilter {
            status: Some(Status::Expired),
            ..ListFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(expired.len(), 2);
    // The surface is told, too.
    for q in &expired {
        eventually(WITHIN, "the expired question withdrawn", || async {
            !channel.withdrawn(q.id.as_str()).is_empty()
        })
        .await;
    }
    let outcome = match &channel.withdrawn(expired[0].id.as_str())[0] {
        Call::Withdraw { outcome, .. } => outcome.clone(),
        other => panic!("{other:?}"),
    };
    assert!(outcome.starts_with("Expired"), "{outcome}");
}

#[tokio::test]
async fn the_sweeper_expires_questions_nobody_waits_for() {
    let (bridge, _) = memory_bridge().await;
    let q = bridge
        .create(
            NewQuestion::ask("Quick?")
                .session("s")
                .targets(["chat:1"])
                .timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap();
    let mut events = bridge.store().subscribe();
    let expired = tokio::time::timeout(WITHIN, async {
        loop {
            let event = events.recv().await.unwrap();
            if let Some(question) = event.question()
                && question.id == q.id
                && question.status == Status::Expired
            {
                return question.clone();
            }
        }
    })
    .await
    .expect("expired by the background sweeper");
    assert_eq!(expired.resolution.unwrap().via(), "timeout");
}

#[tokio::test]
async fn confirm_is_a_bool_and_never_fails() {
    let (bridge, _) = memory_bridge().await;
    let session = bridge.session("run-1");
    let quick = NewQuestion::confirm("Archive?").timeout(Duration::from_millis(200));
    assert!(
        !session.confirm(quick.clone()).await,
        "timeout without default reads as no"
    );
    assert!(
        session
            .confirm(quick.default_answer(Answer::Bool(true)))
            .await,
        "timeout with default yes"
    );
    let asking = {
        let session = session.clone();
        tokio::spawn(async move { session.confirm(NewQuestion::confirm("Deploy?")).await })
    };
    let q = first_pending(&bridge).await;
    assert_eq!(q.kind, Kind::Confirm);
    let yes = q.read_typed("yes").unwrap();
    bridge
        .attempt(Attempt::transition(
            &q.id,
            yes,
            Actor::new("chat:7", "chat"),
            &"chat:1".into(),
        ))
        .await
        .unwrap();
    assert!(asking.await.unwrap());
}

#[tokio::test]
async fn can_ask_is_false_and_ask_fails_at_once_without_a_surface() {
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .start()
        .await
        .unwrap();
    let session = bridge.session("headless");
    assert!(!session.can_ask());
    let started = std::time::Instant::now();
    assert!(matches!(
        session.ask(NewQuestion::ask("Anyone?")).await,
        Err(AskError::Failed(Error::NoSurface))
    ));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "fails at once instead of hanging"
    );
    assert!(
        bridge
            .list(&ListFilter::pending())
            .await
            .unwrap()
            .is_empty(),
        "nothing registered"
    );
}

#[tokio::test]
async fn cancelling_a_session_releases_its_waiters_at_once() {
    let (bridge, _) = memory_bridge().await;
    let session = bridge.session("run-9");
    let asking = {
        let session = session.clone();
        tokio::spawn(async move { session.ask(NewQuestion::ask("Name?")).await })
    };
    let other = bridge
        .create(
            NewQuestion::ask("Other?")
                .session("run-10")
                .targets(["chat:1"]),
        )
        .await
        .unwrap();
    eventually(WITHIN, "the run's question", || {
        let bridge = bridge.clone();
        async move {
            bridge
                .list(&ListFilter {
                    session_id: Some("run-9".into()),
                    ..ListFilter::pending()
                })
                .await
                .unwrap()
                .len()
                == 1
        }
    })
    .await;
    assert_eq!(session.stop().await.unwrap(), 1);
    let result = tokio::time::timeout(Duration::from_secs(2), asking)
        .await
        .expect("released at once")
        .unwrap();
    assert!(
        matches!(result, Err(AskError::NoAnswer(NoAnswer::Cancelled { .. }))),
        "{result:?}"
    );
    assert!(
        bridge.get(&other.id).await.unwrap().is_pending(),
        "other sessions are untouched"
    );
}

#[tokio::test]
async fn first_answer_wins_and_every_surface_withdraws() {
    let other = FakeChannel::new("other");
    let (bridge, chat) = crate::support::memory_bridge_and(other.clone()).await;
    let q = bridge
        .create(
            NewQuestion::ask("Which?")
                .session("s")
                .options(["a", "b"])
                .targets(["chat:1", "chat:2", "other:9"]),
        )
        .await
        .unwrap();
    eventually(WITHIN, "shown on three targets", || async {
        chat.shows(q.id.as_str()) == 2 && other.shows(q.id.as_str()) == 1
    })
    .await;
    let won = bridge
        .attempt(Attempt::transition(
            &q.id,
            answer("b"),
            Actor::new("other:5", "other"),
            &"other:9".into(),
        ))
        .await
        .unwrap();
    assert_eq!(won.status, Status::Answered);
    let late = bridge
        .attempt(Attempt::transition(
            &q.id,
            answer("a"),
            Actor::new("chat:6", "chat"),
            &"chat:1".into(),
        ))
        .await;
    match late {
        Err(Error::AlreadyResolved(winner)) => {
            assert_eq!(winner.resolution.unwrap().by(), "other:5");
        }
        other => panic!("expected already resolved, got {other:?}"),
    }
    eventually(WITHIN, "withdrawn everywhere", || async {
        chat.withdrawn(q.id.as_str()).len() == 2 && other.withdrawn(q.id.as_str()).len() == 1
    })
    .await;
    let Call::Withdraw { outcome, .. } = &chat.withdrawn(q.id.as_str())[0] else {
        unreachable!()
    };
    assert_eq!(outcome, "Answered: b, by other:5 via other");
}

/// A message the question was shown in, recorded while the winner's settle runs (the settle read
/// where it was shown before), is withdrawn too. The late delivery's own settle used to put
/// itself off in the store, and the running settle's end then took the question out of the open
/// index with it: that message kept its buttons for good.
#[tokio::test]
async fn a_message_recorded_while_the_settle_runs_is_withdrawn_too() {
    let (bridge, chat) = memory_bridge().await;
    *chat.show_held_on.lock().unwrap() = Some("chat:2".into());
    chat.withdrawals_held.store(true, Ordering::SeqCst);
    let q = bridge
        .create(
            NewQuestion::ask("Which?")
                .session("s")
                .options(["a", "b"])
                .targets(["chat:1", "chat:2"]),
        )
        .await
        .unwrap();
    let store = bridge.store().clone();
    eventually(WITHIN, "shown on chat:1, recorded", || async {
        store.shown(&q.id).await.unwrap().len() == 1
    })
    .await;
    bridge
        .attempt(Attempt::transition(
            &q.id,
            answer("b"),
            Actor::new("chat:5", "chat"),
            &"chat:1".into(),
        ))
        .await
        .unwrap();
    // The winner's settle is at chat:1's withdrawal (held); chat:2's message is shown and
    // recorded now, and its delivery finds the question resolved and asks for a settle.
    *chat.show_held_on.lock().unwrap() = None;
    eventually(WITHIN, "shown on chat:2, recorded", || async {
        store.shown(&q.id).await.unwrap().len() == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    chat.withdrawals_held.store(false, Ordering::SeqCst);
    eventually(WITHIN, "withdrawn in both chats", || async {
        chat.withdrawn(q.id.as_str()).len() == 2
    })
    .await;
}

#[tokio::test]
async fn strangers_cannot_answer_and_nothing_changes() {
    let (bridge, _) = memory_bridge().await;
    let q = bridge
        .create(
            NewQuestion::ask("Deploy?")
                .session("s")
                .options(["go"])
                .targets(["chat:1"])
                .answerers(["chat:42"]),
        )
        .await
        .unwrap();
    let stranger = bridge
        .attempt(Attempt::transition(
            &q.id,
            answer("go"),
            Actor::new("chat:7", "chat"),
            &"chat:1".into(),
        ))
        .await;
    assert!(matches!(stranger, Err(Error::Forbidden)));
    assert!(bridge.get(&q.id).await.unwrap().is_pending());
    bridge
        .attempt(Attempt::transition(
            &q.id,
            answer("go"),
            Actor::new("chat:42", "chat"),
            &"chat:1".into(),
        ))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_new_bridge_on_the_same_store_recovers_open_questions() {
    let fixture = store_conformance::embedded(StoreOptions::default()).await;
    let (first, _) = bridge_over(fixture.store.clone()).await;
    let keep = first
        .create(
            NewQuestion::ask("Still there?")
                .session("s")
                .targets(["chat:1"]),
        )
        .await
        .unwrap();
    let overdue = first
        .create(
            NewQuestion::ask("Late?")
                .session("s")
                .targets(["chat:1"])
                .timeout(Duration::from_millis(50)),
        )
        .await
        .unwrap();
    // "Crash": stop the first bridge's tasks before its sweeper sees the deadline.
    first.shutdown();
    drop(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (second, chat) = bridge_over(fixture.store.clone()).await;
    eventually(WITHIN, "the overdue question expired after restart", || {
        let second = second.clone();
        let id = overdue.id.clone();
        async move { second.get(&id).await.unwrap().status == Status::Expired }
    })
    .await;
    let answered = second
        .attempt(Attempt::transition(
            &keep.id,
            answer("yes"),
            Actor::new("chat:1", "chat"),
            &"chat:1".into(),
        ))
        .await
        .unwrap();
    assert_eq!(answered.status, Status::Answered);
    eventually(WITHIN, "withdrawn by the new process", || async {
        !chat.withdrawn(keep.id.as_str()).is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_channel_outage_delays_showing_and_withdrawing_but_loses_nothing() {
    let (bridge, chat) = memory_bridge().await;
    chat.down.store(true, Ordering::SeqCst);
    let q = bridge
        .create(
            NewQuestion::ask("During the outage?")
                .session("s")
                .targets(["chat:1"]),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(chat.shows(q.id.as_str()), 0);
    chat.down.store(false, Ordering::SeqCst);
    eventually(
        Duration::from_secs(10),
        "shown once the channel is back",
        || async { chat.shows(q.id.as_str()) == 1 },
    )
    .await;
    chat.down.store(true, Ordering::SeqCst);
    bridge
        .attempt(Attempt::transition(
            &q.id,
            answer("fine"),
            Actor::new("api", "api"),
            &"api".into(),
        ))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(chat.withdrawn(q.id.as_str()).is_empty());
    assert_eq!(
        bridge.store().open_ids().await.unwrap(),
        vec![q.id.clone()],
        "kept open until withdrawn"
    );
    chat.down.store(false, Ordering::SeqCst);
    // The retry is scheduled 15 s out; run the sweeper's pass as if that time had come.
    bridge
        .store()
        .reschedule(&q.id, askbridge_core::Millis::now())
        .await
        .unwrap();
    eventually(WITHIN, "withdrawn after the outage", || async {
        chat.withdrawn(q.id.as_str()).len() == 1
    })
    .await;
    eventually(WITHIN, "settled", || {
        let bridge = bridge.clone();
        async move { bridge.store().open_ids().await.unwrap().is_empty() }
    })
    .await;
    // Each failed attempt was counted, by surface and step.
    let text = bridge.metrics().render(&askbridge::metrics::Scrape {
        pending: 0,
        topology: None,
        leases: &[],
    });
    for series in [
        "askbridge_delivery_failures_total{surface=\"chat\",action=\"show\"}",
        "askbridge_delivery_failures_total{surface=\"chat\",action=\"withdraw\"}",
    ] {
        let count: f64 = text
            .lines()
            .find_map(|line| line.strip_prefix(series))
            .unwrap_or_else(|| panic!("{series} missing from\n{text}"))
            .trim()
            .parse()
            .unwrap();
        assert!(count >= 1.0, "{series} {count}");
    }
}

#[tokio::test]
async fn unknown_targets_are_refused_with_a_hint() {
    let (bridge, _) = memory_bridge().await;
    let result = bridge
        .create(NewQuestion::ask("?").session("s").targets(["telegram:5"]))
        .await;
    match result {
        Err(Error::UnknownTarget { target, hint }) => {
            assert_eq!(target, "telegram:5");
            assert!(hint.contains("TELEGRAM_BOT_TOKEN"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn waits_leave_nothing_behind() {
    let (bridge, _) = memory_bridge().await;
    let q = bridge
        .create(NewQuestion::ask("?").session("s").targets(["chat:1"]))
        .await
        .unwrap();
    for _ in 0..50 {
        bridge.wait(&q.id, Duration::from_millis(1)).await.unwrap();
    }
    bridge
        .attempt(Attempt::transition(
            &q.id,
            answer("x"),
            Actor::new("api", "api"),
            &"api".into(),
        ))
        .await
        .unwrap();
    for _ in 0..50 {
        assert_eq!(
            bridge
                .wait(&q.id, Duration::from_secs(5))
                .await
                .unwrap()
                .status,
            Status::Answered
        );
    }
    assert!(
        bridge
            .wait(
                &askbridge_core::QuestionId::random(),
                Duration::from_secs(1)
            )
            .await
            .is_err()
    );
    assert!(
        bridge.waiters().is_empty(),
        "timed out, resolved and unknown waits all unregister"
    );
}
