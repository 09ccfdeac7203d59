//! What askbridge sends to Redis, counted through MONITOR (lines a script runs inside Redis are
//! left out, and so are blocking stream reads): the hot path's budget, the idle cost of parked
//! waiters, and that every script's keys fall in one Redis Cluster slot.

use crate::support::{FakeChannel, api_origin, bridge_over, eventually, message, redis_store};
use askbridge::Flows;
use askbridge::bridge::Attempt;
use askbridge::bridge::{Bridge, ProgramReply, Storing};
use askbridge::store::redis::slot;
use askbridge_core::run::{JournalEntry, RunState};
use askbridge_core::{Actor, Answer, Inbox, NewQuestion, QuestionId, Target};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// MONITOR's lines, as they arrive.
struct Monitor {
    lines: Arc<Mutex<Vec<String>>>,
}

impl Monitor {
    fn start(port: u16) -> Self {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(b"MONITOR\r\n").unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { return };
                sink.lock().unwrap().push(line);
            }
        });
        std::thread::sleep(Duration::from_millis(100));
        Monitor { lines }
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lines.lock().unwrap())
    }
}

/// The arguments of a MONITOR line (`+<time> [<db> <client>] "CMD" "arg" ...`), unescaped
/// enough for key names.
fn arguments(line: &str) -> Vec<String> {
    let Some(rest) = line.split_once("] ").map(|(_, rest)| rest) else {
        return Vec::new();
    };
    rest.split("\" \"")
        .map(|a| a.trim_matches('"').replace("\\\"", "\""))
        .collect()
}

/// Commands clients sent, without script internals and idle background work (blocking stream
/// reads; the sweeper's slow poll of the open index's head).
fn sent(lines: &[String]) -> Vec<Vec<String>> {
    lines
        .iter()
        .filter(|l| l.starts_with('+') && !l.contains(" lua] "))
        .map(|l| arguments(l))
        .filter(|args| {
            let name = args.first().map(|a| a.to_uppercase()).unwrap_or_default();
            !name.is_empty() && name != "XREAD" && name != "ZRANGE"
        })
        .collect()
}

async fn settle_a_moment() {
    tokio::time::sleep(Duration::from_millis(400)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_one_command_and_an_answer_with_its_effects_at_most_four() {
    let fixture = redis_store().await;
    let (bridge, _) = bridge_over(fixture.store.clone()).await;
    let n = 20;
    let (ids, asks, monitor) = asks_counted(&bridge, fixture.server.port, n, || {
        NewQuestion::new("budget", "Which?").options(["a", "b"])
    })
    .await;
    assert!(
        asks.len() <= n,
        "{} commands for {n} asks: {asks:?}",
        asks.len()
    );
    for id in &ids {
        answer(&bridge, id).await;
    }
    settle_a_moment().await;
    let answers = sent(&monitor.take());
    assert!(
        answers.len() <= 4 * n,
        "{} commands for {n} answers: {answers:?}",
        answers.len()
    );
    eprintln!(
        "per ask {:.2}, per answer {:.2}",
        asks.len() as f64 / n as f64,
        answers.len() as f64 / n as f64
    );
}

// Shown in a chat, an ask costs one command more: the record of where it was shown, which
// also tells whether the question is still pending (a pending one needs no settle, so no read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_shown_in_a_chat_is_two_commands() {
    let fixture = redis_store().await;
    let (bridge, chat) = bridge_over(fixture.store.clone()).await;
    let n = 20;
    let (ids, commands, _) = asks_counted(&bridge, fixture.server.port, n, || {
        NewQuestion::new("shown", "Which?").targets(["chat:1"])
    })
    .await;
    for id in &ids {
        assert_eq!(chat.shows(id.as_str()), 1, "{id} shown once");
    }
    assert!(
        commands.len() <= 2 * n,
        "{} commands for {n} shown asks: {commands:?}",
        commands.len()
    );
    eprintln!("per shown ask {:.2}", commands.len() as f64 / n as f64);
}

/// Warms `bridge` up with one question made by `ask`, answered (scripts loaded, connections
/// open), then asks `n` more: their ids, the commands they sent, and the monitor for what
/// follows.
async fn asks_counted(
    bridge: &Bridge,
    port: u16,
    n: usize,
    ask: impl Fn() -> NewQuestion,
) -> (Vec<QuestionId>, Vec<Vec<String>>, Monitor) {
    let warm = bridge.create(ask()).await.unwrap();
    answer(bridge, &warm.id).await;
    settle_a_moment().await;
    let monitor = Monitor::start(port);
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(bridge.create(ask()).await.unwrap().id);
    }
    settle_a_moment().await;
    let commands = sent(&monitor.take());
    (ids, commands, monitor)
}

async fn answer(bridge: &Bridge, id: &QuestionId) {
    bridge
        .attempt(Attempt::reply(
            id,
            ProgramReply::from(Answer::Text("a".into())),
            Actor::api(),
            &Target::api(),
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_parked_waiters_cost_at_most_fifty_commands_a_second() {
    let fixture = redis_store().await;
    let (bridge, _) = bridge_over(fixture.store.clone()).await;
    let mut waiters = Vec::new();
    for _ in 0..1000 {
        let q = bridge
            .create(NewQuestion::new("idle", "Later?"))
            .await
            .unwrap();
        let bridge = bridge.clone();
        waiters.push(tokio::spawn(async move {
            bridge.wait(&q.id, Duration::from_secs(60)).await
        }));
    }
    settle_a_moment().await;
    let monitor = Monitor::start(fixture.server.port);
    let window = Duration::from_secs(6);
    tokio::time::sleep(window).await;
    // Everything but the blocking stream read counts here, the sweeper's poll included.
    let lines = monitor.take();
    let commands: Vec<Vec<String>> = lines
        .iter()
        .filter(|l| l.starts_with('+') && !l.contains(" lua] "))
        .map(|l| arguments(l))
        .filter(|args| {
            args.first()
                .is_some_and(|a| !a.eq_ignore_ascii_case("XREAD"))
        })
        .collect();
    let per_second = commands.len() as f64 / window.as_secs_f64();
    assert!(
        per_second <= 50.0,
        "{per_second:.1} commands/s with 1,000 idle waiters: {commands:?}"
    );
    for waiter in waiters {
        waiter.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_script_touches_keys_of_one_slot() {
    let fixture = redis_store().await;
    let (bridge, _chat) = bridge_over(fixture.store.clone()).await;
    let mut approvers = bridge.options().clone();
    approvers.approvers = vec!["chat:7".into()];
    let flows = Flows::new()
        .flow("two", "asks twice", |ctx| async move {
            let first = ctx.ask(NewQuestion::ask("First?")).await?;
            let second = ctx.ask(NewQuestion::ask("Second?")).await?;
            Ok(format!("{first} {second}"))
        })
        .unwrap();
    let bridge = Bridge::builder(fixture.store.clone())
        .options(approvers)
        .channel(FakeChannel::new("chat"))
        .runner(Arc::new(flows))
        .start()
        .await
        .unwrap();
    let monitor = Monitor::start(fixture.server.port);
    // Asked, shown, answered with a withdrawal; an approval answered "always" (a rule, marked as
    // an effect); a question expired by the sweeper; a run started, parked, resumed and ended.
    let shown = bridge
        .create(NewQuestion::new("slots", "Shown?").targets(["chat:1"]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    answer(&bridge, &shown.id).await;
    let approval = bridge
        .create(
            NewQuestion::ask("Run it?")
                .session("slots")
                .targets(["chat:1"])
                .approve(askbridge_core::Action::new(
                    "shell",
                    serde_json::json!({"c": "ls"}),
                )),
        )
        .await
        .unwrap();
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} always", approval.id),
        ))
        .await
        .unwrap();
    // A quorum: a vote (its own script), then the completing claim.
    let quorum = bridge
        .create(
            NewQuestion::confirm("Both agree?")
                .session("slots")
                .targets(["chat:1"])
                .quorum(2, ["chat:7", "chat:8"]),
        )
        .await
        .unwrap();
    for voter in ["chat:7", "chat:8"] {
        bridge
            .handle(message(
                voter,
                "chat:1",
                &format!("/answer {} yes", quorum.id),
            ))
            .await
            .unwrap();
    }
    bridge
        .create(NewQuestion::new("slots", "Soon?").timeout(Duration::from_millis(300)))
        .await
        .unwrap();
    bridge
        .handle(message("chat:7", "chat:1", "/run two"))
        .await
        .unwrap();
    for _ in 0..2 {
        let waiting =
            crate::support::eventually_some(Duration::from_secs(10), "the run's question", || {
                let bridge = bridge.clone();
                async move {
                    bridge
                        .list(&askbridge::store::ListFilter {
                            target: Some("chat:1".into()),
                            ..askbridge::store::ListFilter::pending()
                        })
                        .await
                        .unwrap()
                        .into_iter()
                        .find(|q| q.run_id.is_some())
                }
            })
            .await;
        bridge
            .handle(message(
                "chat:7",
                "chat:1",
                &format!("/answer {} ok", waiting.id),
            ))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // A run stored with its first question, as for a caller waiting for it (insert_parked.lua).
    let origin = crate::support::api_origin();
    let started = bridge
        .start_run("two", "", origin, askbridge::bridge::Storing::WithFirstStep)
        .await
        .unwrap();
    crate::support::eventually_some(Duration::from_secs(10), "the run parked", || {
        let store = fixture.store.clone();
        let id = started.id.clone();
        async move {
            let run = askbridge::store::Runs::get_run(store.as_ref(), &id)
                .await
                .unwrap()?;
            (run.state == askbridge_core::run::RunState::Waiting).then_some(run)
        }
    })
    .await;
    eventually(Duration::from_secs(10), "the expiry", || {
        let store = fixture.store.clone();
        async move {
            askbridge::store::Questions::list(
                store.as_ref(),
                &askbridge::store::ListFilter {
                    status: Some(askbridge_core::Status::Expired),
                    ..Default::default()
                },
            )
            .await
            .unwrap()
            .len()
                == 1
        }
    })
    .await;
    settle_a_moment().await;
    let mut scripts = 0;
    let mut names = std::collections::BTreeSet::new();
    for args in sent(&monitor.take()) {
        if !args[0].eq_ignore_ascii_case("EVALSHA") {
            continue;
        }
        scripts += 1;
        names.insert(args[1].clone());
        let count: usize = args[2].parse().unwrap();
        let keys = &args[3..3 + count];
        let slots: std::collections::BTreeSet<u16> = keys.iter().map(|k| slot(k)).collect();
        assert_eq!(slots.len(), 1, "a script over several slots: {keys:?}");
    }
    assert!(
        names.len() >= 8,
        "only {} different scripts ran ({scripts} calls)",
        names.len()
    );
}

/// Scripts Redis ran: EVALSHAs, less those refused as not loaded yet (each followed by a SCRIPT
/// LOAD and the same EVALSHA again).
fn scripts_run(sent: &[Vec<String>]) -> usize {
    let named = |name: &str| {
        sent.iter()
            .filter(|args| args[0].eq_ignore_ascii_case(name))
            .count()
    };
    named("EVALSHA") - named("SCRIPT")
}

/// The run `id` once it waits on a question other than `after`: that question's id.
async fn next_question(bridge: &Bridge, id: &str, after: Option<&QuestionId>) -> QuestionId {
    let news = bridge
        .wait_run(id, after, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(news.run.state, RunState::Waiting, "{:?}", news.run);
    news.run.waiting_on.clone().unwrap()
}

/// An answer to a run's question is carried ahead (flows/ahead.rs): one script stores the
/// answer, the run parked on its next question, and that question. When the run changed in the
/// store since this process heard of it, the claim takes the run instead (its next question
/// costs a second script), and a step still runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_answered_is_carried_to_its_next_question_in_one_script() {
    let fixture = redis_store().await;
    let steps = Arc::new(AtomicUsize::new(0));
    let counted = steps.clone();
    let flows = Flows::new()
        .flow("three", "asks three times, then a step", move |ctx| {
            let counted = counted.clone();
            async move {
                let a = ctx.ask(NewQuestion::ask("First?")).await?;
                let b = ctx.ask(NewQuestion::ask("Second?")).await?;
                let c = ctx.ask(NewQuestion::ask("Third?")).await?;
                let n = ctx
                    .step("count", async move {
                        counted.fetch_add(1, Ordering::SeqCst) + 1
                    })
                    .await?;
                Ok(format!("{a} {b} {c} {n}"))
            }
        })
        .unwrap();
    let (bridge, _) = crate::support::bridge_running(fixture.store.clone(), flows).await;
    let run = bridge
        .start_run("three", "", api_origin(), Storing::WithFirstStep)
        .await
        .unwrap();
    let id = run.id.as_str();
    let first = next_question(&bridge, id, None).await;
    settle_a_moment().await;

    let monitor = Monitor::start(fixture.server.port);
    answer(&bridge, &first).await;
    let second = next_question(&bridge, id, Some(&first)).await;
    settle_a_moment().await;
    let sent_now = sent(&monitor.take());
    assert_eq!(scripts_run(&sent_now), 1, "carried ahead: {sent_now:?}");
    assert!(
        sent_now
            .iter()
            .all(|args| ["EVALSHA", "SCRIPT"].contains(&args[0].to_uppercase().as_str())),
        "nothing but the script: {sent_now:?}"
    );
    let stored = bridge.get_run(id).await.unwrap();
    assert!(stored.knows(&first), "the answer is in the journal");
    assert_eq!(stored.waiting_on.as_ref(), Some(&second));
    assert!(bridge.get(&second).await.unwrap().is_pending());

    // The run as stored changes behind this process's back: its copy must not be carried ahead.
    let mut connection = fixture.server.connection().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*:run:{id}"))
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let _: () = redis::cmd("HSET")
        .arg(&keys[0])
        .arg("updated_at")
        .arg(stored.updated_at.0 + 1)
        .query_async(&mut connection)
        .await
        .unwrap();
    answer(&bridge, &second).await;
    let third = next_question(&bridge, id, Some(&second)).await;
    settle_a_moment().await;
    let scripts = scripts_run(&sent(&monitor.take()));
    assert!(scripts >= 2, "taken, then parked: {scripts} scripts");
    assert!(bridge.get_run(id).await.unwrap().knows(&second));

    // The last answer reaches a step: executed after the claim, once, and its result written
    // with the run's end (flows/gate.rs): two scripts, the claim and the end.
    answer(&bridge, &third).await;
    let done = bridge
        .wait_run(id, Some(&third), Duration::from_secs(10))
        .await
        .unwrap()
        .run;
    assert_eq!(done.state, RunState::Done, "{done:?}");
    assert_eq!(done.result.as_deref(), Some("a a a 1"));
    assert_eq!(steps.load(Ordering::SeqCst), 1);
    settle_a_moment().await;
    let scripts = scripts_run(&sent(&monitor.take()));
    assert_eq!(scripts, 2, "the claim and the end");
    let stored = bridge.get_run(id).await.unwrap();
    assert_eq!(stored.state, RunState::Done);
    assert!(
        stored
            .journal
            .iter()
            .any(|e| matches!(e, JournalEntry::Step { name, .. } if name == "count")),
        "the step's result is stored: {stored:?}"
    );
}

/// The answer times kept for the percentiles: a claim trims their list only once it holds twice
/// what is read (one command fewer per answer the rest of the time), and reading takes the
/// newest only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answer_times_are_trimmed_in_steps_and_read_newest_first() {
    use askbridge::store::Questions;
    let fixture = redis_store().await;
    let (bridge, _) = bridge_over(fixture.store.clone()).await;
    let question = bridge
        .create(NewQuestion::new("times", "How long?"))
        .await
        .unwrap();
    let mut connection = fixture.server.connection().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("askbridge:*:q:{}", question.id))
        .query_async(&mut connection)
        .await
        .unwrap();
    let bucket = keys[0].rsplit_once(":q:").unwrap().0.to_owned();
    let times = format!("{bucket}:answers");
    let old = vec!["999999"; 249];
    let length: usize = redis::cmd("LPUSH")
        .arg(&times)
        .arg(&old)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(length, 249);
    let counts = fixture
        .store
        .counts(askbridge_core::Millis(0))
        .await
        .unwrap();
    assert_eq!(counts.answer_ms.len(), 125, "only the newest are read");

    // The 250th time reaches twice what is kept: the list is cut back to the newest 125.
    answer(&bridge, &question.id).await;
    let length: usize = redis::cmd("LLEN")
        .arg(&times)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(length, 125);
    let counts = fixture
        .store
        .counts(askbridge_core::Millis(0))
        .await
        .unwrap();
    assert_eq!(counts.answer_ms.len(), 125);
    assert!(
        counts.answer_ms[0] < 999_999,
        "the newest answer time comes first: {:?}",
        &counts.answer_ms[..3]
    );
}

/// The keys matching `pattern` on a test's Redis.
async fn keys_like(
    connection: &mut redis::aio::MultiplexedConnection,
    pattern: &str,
) -> Vec<String> {
    redis::cmd("KEYS")
        .arg(pattern)
        .query_async(connection)
        .await
        .unwrap()
}

/// The TTL of each of `keys`, ms.
async fn ttls(connection: &mut redis::aio::MultiplexedConnection, keys: &[String]) -> Vec<i64> {
    let mut ttls = Vec::new();
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(connection)
            .await
            .unwrap();
        ttls.push(ttl);
    }
    ttls
}

/// The session's keys as the script lines MONITOR saw touch them: each command's name.
fn session_commands(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .filter(|l| l.contains(" lua] ") && l.contains(":session"))
        .filter_map(|l| l.split(" lua] ").nth(1).map(str::to_owned))
        .filter_map(|l| l.split(' ').next().map(|c| c.trim_matches('"').to_owned()))
        .collect()
}

/// A session's keys as an ask and a claim touch them: the ask enters its pending index only;
/// the claim moves the id to its resolved index, whose TTL it extends only when it would expire
/// too soon, and then trims the ids whose question is no longer kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_extends_its_sessions_resolved_index_only_when_it_would_expire_too_soon() {
    let fixture = redis_store().await;
    let (bridge, _) = bridge_over(fixture.store.clone()).await;
    let mut connection = fixture.server.connection().await;
    let ask = || bridge.create(NewQuestion::new("kept", "Which?").options(["a", "b"]));
    // It must outlive its newest question, kept for the retention after its claim.
    let retention = Duration::from_secs(7 * 24 * 3600).as_millis() as i64;
    // Questions land in the 16 buckets by id: 256 asks all miss a given bucket once in some
    // fifteen million runs.
    let mut asked = Vec::new();
    for _ in 0..256 {
        asked.push(ask().await.unwrap());
    }
    let pending = keys_like(&mut connection, "*:session-pending:kept").await;
    assert_eq!(pending.len(), 16, "{pending:?}");
    assert!(
        keys_like(&mut connection, "*:session:kept")
            .await
            .is_empty()
    );
    // The pending index has no TTL, as the pending index of all questions has none.
    let none = ttls(&mut connection, &pending).await;
    assert!(none.iter().all(|ttl| *ttl == -1), "{none:?}");
    let monitor = Monitor::start(fixture.server.port);
    let question = ask().await.unwrap();
    settle_a_moment().await;
    assert_eq!(
        session_commands(monitor.take()),
        ["ZADD"],
        "the session's keys as the ask touches them"
    );
    for question in &asked {
        answer(&bridge, &question.id).await;
    }
    let resolved = keys_like(&mut connection, "*:session-done:answered:kept").await;
    assert_eq!(resolved.len(), 16, "{resolved:?}");
    let first = ttls(&mut connection, &resolved).await;
    assert!(first.iter().all(|ttl| *ttl >= retention), "{first:?}");
    // Far enough ahead: the next claim writes no expiry, and reads the index's TTL only.
    monitor.take();
    answer(&bridge, &question.id).await;
    settle_a_moment().await;
    assert_eq!(
        session_commands(monitor.take()),
        ["ZREM", "ZADD", "PTTL"],
        "the session's keys as the claim touches them"
    );
    // Too soon (as an hour of claims into it later), with an id resolved longer ago than the
    // retention: the claims into each bucket extend it again, and that id leaves.
    for key in &resolved {
        let _: i64 = redis::cmd("PEXPIRE")
            .arg(key)
            .arg(retention - 1_000)
            .query_async(&mut connection)
            .await
            .unwrap();
        let _: i64 = redis::cmd("ZADD")
            .arg(key)
            .arg(1_000)
            .arg("long-gone")
            .query_async(&mut connection)
            .await
            .unwrap();
    }
    for _ in 0..256 {
        let question = ask().await.unwrap();
        answer(&bridge, &question.id).await;
    }
    let extended = ttls(&mut connection, &resolved).await;
    assert!(
        extended.iter().all(|ttl| *ttl >= retention),
        "{extended:?} < {retention}"
    );
    for key in &resolved {
        let gone: Option<f64> = redis::cmd("ZSCORE")
            .arg(key)
            .arg("long-gone")
            .query_async(&mut connection)
            .await
            .unwrap();
        assert_eq!(gone, None, "{key}");
    }
}
