//! Redis: a store hands the events it writes (asks, answers, rules; runs and votes the same way)
//! to its own process at once and its reader skips them in the stream (`store/redis/events.rs`);
//! another store's reader decodes them. Each event must reach each process exactly once: a store
//! that also decoded its own would see it twice, one that skipped without delivering would never
//! see it.

use crate::store_conformance::{answer, claim, question, rule};
use crate::support::RedisServer;
use askbridge::store::redis::RedisStore;
use askbridge::store::{
    ClaimOptions, Event, EventKind, Events, Questions, Rules, StoreOptions, Votes,
};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::run::{Origin, Run};
use askbridge_core::{Millis, NewQuestion, Question, QuestionId};
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::broadcast;

async fn store(server: &RedisServer) -> RedisStore {
    crate::support::redis_store_on(server, StoreOptions::default()).await
}

/// Events counted by kind and the id of the question, run or rule they are about.
type Counts = HashMap<(&'static str, String), usize>;

fn about(event: &Event) -> String {
    match event {
        Event::Question { question, .. } => question.id.to_string(),
        Event::Run { run, .. } => run.id.to_string(),
        Event::Rule { rule, .. } => rule.id.to_string(),
    }
}

/// Every event `events` holds up to and including `marker`'s ask, counted. The reader sends a
/// whole XREAD reply before reading again, so once the marker is here, whatever came with it or
/// before it is too.
async fn counted_until(events: &mut broadcast::Receiver<Event>, marker: &QuestionId) -> Counts {
    let mut counts = Counts::new();
    let mut count = |event: Event| {
        *counts
            .entry((event.kind().name(), about(&event)))
            .or_insert(0) += 1;
    };
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("the marker arrives")
            .unwrap();
        let is_marker = about(&event) == marker.to_string();
        count(event);
        if is_marker {
            break;
        }
    }
    while let Ok(event) = events.try_recv() {
        count(event);
    }
    counts
}

/// Each event of `expected` (its kind, and what it is about) is in `counts` exactly once.
fn each_once(counts: &Counts, expected: &[(EventKind, &dyn ToString)]) {
    for (kind, id) in expected {
        let key = (kind.name(), id.to_string());
        assert_eq!(counts.get(&key), Some(&1), "{kind:?}: {counts:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_reaches_each_store_once() {
    let server = RedisServer::start();
    let (a, b) = (store(&server).await, store(&server).await);
    let (mut heard_by_a, mut heard_by_b) = (a.subscribe(), b.subscribe());

    let asked = question("s1", &[], DEFAULT_TIMEOUT);
    a.insert(&asked).await.unwrap();
    a.claim(
        &asked,
        &claim(answer("dayjs"), "api"),
        ClaimOptions::new(Duration::from_secs(1)),
    )
    .await
    .unwrap()
    .unwrap();
    let rule = rule("rule-1");
    a.put_rule(&rule).await.unwrap();
    a.delete_rule(&rule.id).await.unwrap();
    // Written by the other store after A's: A's reader decodes it, after skipping its own.
    let marker_of_b = question("s2", &[], DEFAULT_TIMEOUT);
    b.insert(&marker_of_b).await.unwrap();
    let by_a = counted_until(&mut heard_by_a, &marker_of_b.id).await;
    each_once(
        &by_a,
        &[
            (EventKind::Asked, &asked.id as &dyn ToString),
            (EventKind::Replied, &asked.id),
            (EventKind::RuleCreated, &rule.id),
            (EventKind::RuleRevoked, &rule.id),
            (EventKind::Asked, &marker_of_b.id),
        ],
    );

    // B heard its own ask at once and A's events through the stream; a marker of A's, written
    // last, closes what B may still hear.
    let marker_of_a = question("s3", &[], DEFAULT_TIMEOUT);
    a.insert(&marker_of_a).await.unwrap();
    let by_b = counted_until(&mut heard_by_b, &marker_of_a.id).await;
    each_once(
        &by_b,
        &[
            (EventKind::Asked, &asked.id as &dyn ToString),
            (EventKind::Replied, &asked.id),
            (EventKind::RuleCreated, &rule.id),
            (EventKind::RuleRevoked, &rule.id),
            (EventKind::Asked, &marker_of_b.id),
            (EventKind::Asked, &marker_of_a.id),
        ],
    );
}

/// The events a script puts together from pieces (an ask around the stored question, a vote
/// with the votes it keeps) read back on another store exactly as the writer handed them to its
/// own process: the pieces written in Rust and what the script splices in make the same event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_a_script_puts_together_read_back_as_the_writer_delivered_them() {
    let server = RedisServer::start();
    let (a, b) = (store(&server).await, store(&server).await);
    let (mut heard_by_a, mut heard_by_b) = (a.subscribe(), b.subscribe());
    let asked = askbridge_core::NewQuestion::confirm("Deploy?")
        .session("s1")
        .quorum(2, ["chat:1", "chat:2"])
        .into_question(
            QuestionId::random(),
            askbridge_core::Millis::now(),
            DEFAULT_TIMEOUT,
        )
        .unwrap();
    a.insert(&asked).await.unwrap();
    let due = askbridge_core::Millis::now();
    for by in ["chat:1", "chat:2"] {
        let yes = askbridge_core::Claim::new(
            askbridge_core::Transition::Answer {
                value: askbridge_core::Answer::Bool(true),
            },
            askbridge_core::Actor::new(by, "test"),
            askbridge_core::Millis::now(),
        );
        let vote = askbridge_core::tally::vote_of(&asked, &yes).unwrap();
        a.vote(&asked, &vote, due).await.unwrap().unwrap();
    }
    let marker = question("s2", &[], DEFAULT_TIMEOUT);
    a.insert(&marker).await.unwrap();
    let until_marker = |events: &mut broadcast::Receiver<Event>| {
        let mut seen = Vec::new();
        while let Ok(event) = events.try_recv() {
            let done = about(&event) == marker.id.to_string();
            seen.push(event);
            if done {
                break;
            }
        }
        seen
    };
    let delivered = until_marker(&mut heard_by_a);
    let kinds: Vec<_> = delivered.iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [
            EventKind::Asked,
            EventKind::Voted,
            EventKind::Voted,
            EventKind::Asked
        ],
        "what A handed its own process"
    );
    let decoded = first_heard(&mut heard_by_b, delivered.len()).await;
    // Each bucket has its stream, and one read that brings several gives them in bucket order:
    // a question's own events keep their order, two questions' need not.
    let by_question = |mut events: Vec<Event>| {
        events.sort_by_key(about);
        events
    };
    assert_eq!(by_question(decoded), by_question(delivered));
}

/// A script that announces several events writes them as one stream entry
/// (`lua/lib/announce.lua`): a run stored parked on its first question (the ask, the run), and
/// a claim that carries the run ahead (the answer, the next ask, the run parked on it). Another
/// store's reader hands out each of them once, in the order written, as the writer handed them
/// to its own process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_written_as_one_entry_reach_another_store_each_once_in_order() {
    use askbridge::store::{AheadRun, Runs, TakeRun};
    let server = RedisServer::start();
    let (a, b) = (store(&server).await, store(&server).await);
    let (mut heard_by_a, mut heard_by_b) = (a.subscribe(), b.subscribe());
    let started = started_run(Some("chat:1"));
    let now = started.created_at;
    let first = run_question(&started, 0, "Go?");
    let next = run_question(&started, 1, "And then?");
    let mut parked = started.clone();
    parked.park_on(first.id.clone(), started.updated_at);
    a.insert_parked(&started, &parked, "p1", &first)
        .await
        .unwrap();
    let mut carried = parked.clone();
    carried.park_on(next.id.clone(), Millis(parked.updated_at.0 + 1));
    let options = ClaimOptions {
        take_run: Some(TakeRun {
            owner: "p2",
            lease_until: now.after(LEASE),
        }),
        ahead: Some(AheadRun {
            was: parked.updated_at,
            run: &carried,
            next: &next,
        }),
        ..ClaimOptions::new(Duration::from_secs(1))
    };
    let claimed = a
        .claim(&first, &claim(answer("yes"), "api"), options)
        .await
        .unwrap()
        .unwrap();
    assert!(claimed.ahead, "carried ahead");
    let written = [
        (EventKind::Asked, first.id.to_string()),
        (EventKind::RunWaiting, started.id.to_string()),
        (EventKind::Replied, first.id.to_string()),
        (EventKind::Asked, next.id.to_string()),
        (EventKind::RunWaiting, started.id.to_string()),
    ];
    let told = |events: Vec<Event>| -> Vec<(EventKind, String)> {
        events.iter().map(|e| (e.kind(), about(e))).collect()
    };
    let by_a = told(first_heard(&mut heard_by_a, written.len()).await);
    assert_eq!(by_a, written, "handed to A's own process");
    let by_b = told(first_heard(&mut heard_by_b, written.len()).await);
    assert_eq!(by_b, written, "read by B from the stream");
    // Nothing more: each once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(heard_by_b.try_recv().is_err(), "an event heard twice");
}

// A stream keeps about 1,000 events a bucket however they are packed: an entry of two events
// (a run stored parked on its first question) trims its stream to about 500 entries. Each
// bucket's stream is filled with 1,100 entries of one event first (before the store connects,
// so that its reader starts after them); then runs are stored, enough for every bucket to get one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_of_two_events_trims_its_stream_to_half_as_many_entries() {
    use askbridge::store::Runs;
    let server = RedisServer::start();
    let mut connection = server.connection().await;
    let streams: Vec<String> = (0..16)
        .map(|b| format!("askbridge:{{b{b:02}}}:events"))
        .collect();
    let mut fill = redis::pipe();
    for stream in &streams {
        for _ in 0..1_100 {
            fill.cmd("XADD")
                .arg(stream)
                .arg("*")
                .arg("data")
                .arg("{}")
                .ignore();
        }
    }
    let () = fill.query_async(&mut connection).await.unwrap();
    let store = store(&server).await;
    for _ in 0..300 {
        let run = started_run(None);
        let q = run_question(&run, 0, "Go?");
        let mut parked = run.clone();
        parked.park_on(q.id.clone(), run.updated_at);
        store.insert_parked(&run, &parked, "p1", &q).await.unwrap();
    }
    for stream in &streams {
        let length: usize = redis::cmd("XLEN")
            .arg(stream)
            .query_async(&mut connection)
            .await
            .unwrap();
        // 500 entries and at most a node's 100 more (`MAXLEN ~` trims whole nodes), where an
        // entry cap of 1,000 whatever they hold kept 1,000 and more.
        assert!(length <= 600, "{stream} holds {length} entries");
    }
}

/// The lease the runs above are taken with.
const LEASE: Duration = Duration::from_secs(30);

/// A run of `deploy` started now by chat:7 (in `chat`, if given), leased to `p1`.
fn started_run(chat: Option<&str>) -> Run {
    let origin = Origin {
        chat: chat.map(Into::into),
        user: "chat:7".into(),
        user_name: None,
    };
    let now = Millis::now();
    Run::new("deploy", "staging", origin, "p1", now, now.after(LEASE))
}

/// Question `n` of `run`, asking `text`.
fn run_question(run: &Run, n: usize, text: &str) -> Question {
    let mut q = NewQuestion::ask(text)
        .session(run.session_id())
        .into_question(run.question_id(n), Millis::now(), DEFAULT_TIMEOUT)
        .unwrap();
    q.run_id = Some(run.id.clone());
    q
}

/// The next `n` events of `events`, each within 10 s.
async fn first_heard(events: &mut broadcast::Receiver<Event>, n: usize) -> Vec<Event> {
    let mut seen = Vec::new();
    while seen.len() < n {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("every event arrives")
            .unwrap();
        seen.push(event);
    }
    seen
}
