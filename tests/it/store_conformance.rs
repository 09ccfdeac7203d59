//! One suite, three stores: every test below runs against memory, embedded (redb) and Redis.

use crate::support::{RedisServer, redis_store_with};
use askbridge::Error;
use askbridge::store::embedded::EmbeddedStore;
use askbridge::store::memory::MemoryStore;
use askbridge::store::{Event, EventKind, ListFilter, Shown, Store, StoreOptions};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::run::{Acquire, JournalEntry, Origin, Run, RunState};
use askbridge_core::{Action, Rule, Scope};
use askbridge_core::{
    Actor, Answer, Claim, ClaimOutcome, Millis, NewQuestion, Question, QuestionId, Status,
    Transition,
};
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

/// A store and whatever must stay alive for it (a temp dir, a redis-server).
pub(crate) struct Fixture {
    pub store: Arc<dyn Store>,
    _keep: Box<dyn Any + Send>,
}

pub(crate) async fn memory(options: StoreOptions) -> Fixture {
    Fixture {
        store: Arc::new(MemoryStore::new(options)),
        _keep: Box::new(()),
    }
}

pub(crate) async fn embedded(options: StoreOptions) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path(), options).await.unwrap();
    Fixture {
        store: Arc::new(store),
        _keep: Box::new(dir),
    }
}

pub(crate) async fn redis(options: StoreOptions) -> Fixture {
    let fixture = redis_store_with(options).await;
    Fixture {
        store: fixture.store,
        _keep: Box::new(fixture.server),
    }
}

fn question(session: &str, targets: &[&str], timeout: Duration) -> Question {
    NewQuestion::ask("Which library?")
        .session(session)
        .options(["dayjs", "luxon"])
        .targets(targets.iter().copied())
        .timeout(timeout)
        .into_question(QuestionId::random(), Millis::now(), DEFAULT_TIMEOUT)
        .unwrap()
}

fn claim(transition: Transition, by: &str) -> Claim {
    Claim::new(transition, Actor::new(by, "test"), Millis::now())
}

fn answer(text: &str) -> Transition {
    Transition::Answer {
        value: Answer::Text(text.into()),
    }
}

async fn insert_then_get_round_trips(f: Fixture) {
    let q = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    assert_eq!(f.store.get(&q.id).await.unwrap(), Some(q.clone()));
    assert_eq!(f.store.get(&QuestionId::random()).await.unwrap(), None);
}

async fn insert_never_overwrites(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    let mut other = question("s2", &[], DEFAULT_TIMEOUT);
    other.id = q.id.clone();
    assert!(matches!(f.store.insert(&other).await, Err(Error::IdTaken)));
    assert_eq!(f.store.get(&q.id).await.unwrap().unwrap().session_id, "s1");
}

async fn first_claim_wins_and_later_claims_change_nothing(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    let (outcome, won) = f
        .store
        .claim(&q, &claim(answer("dayjs"), "telegram:1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, ClaimOutcome::Won);
    assert_eq!(won.status, Status::Answered);
    for late in [
        answer("luxon"),
        Transition::Decline { message: None },
        Transition::Expire,
        Transition::Cancel { reason: None },
    ] {
        let (outcome, seen) = f
            .store
            .claim(&q, &claim(late, "discord:2"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(outcome, ClaimOutcome::AlreadyResolved);
        assert_eq!(seen, won, "a later claim reports the winner");
    }
    let stored = f.store.get(&q.id).await.unwrap().unwrap();
    assert_eq!(stored, won);
    let resolution = stored.resolution.unwrap();
    assert_eq!(resolution.by, "telegram:1");
    assert_eq!(resolution.value, Some(Answer::Text("dayjs".into())));
}

async fn a_late_claim_expires_the_question_with_its_default(f: Fixture) {
    let mut q = question("s1", &[], Duration::from_millis(1));
    q.default = Some(Answer::Text("luxon".into()));
    f.store.insert(&q).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let (outcome, seen) = f
        .store
        .claim(&q, &claim(answer("dayjs"), "telegram:1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, ClaimOutcome::Expired);
    assert_eq!(seen.status, Status::Expired);
    assert_eq!(
        seen.resolution.unwrap().value,
        Some(Answer::Text("luxon".into()))
    );
}

async fn claiming_a_missing_question_says_so(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    assert!(
        f.store
            .claim(&q, &claim(answer("dayjs"), "x:1"))
            .await
            .unwrap()
            .is_none()
    );
}

async fn concurrent_claims_have_exactly_one_winner(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    let mut tasks = Vec::new();
    for n in 0..50 {
        let (store, q) = (f.store.clone(), q.clone());
        tasks.push(tokio::spawn(async move {
            let label = if n % 2 == 0 { "dayjs" } else { "luxon" };
            store
                .claim(&q, &claim(answer(label), &format!("telegram:{n}")))
                .await
                .unwrap()
                .unwrap()
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (outcome, seen) = task.await.unwrap();
        if outcome == ClaimOutcome::Won {
            winners.push(seen);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one of 50 concurrent claims wins");
    assert_eq!(f.store.get(&q.id).await.unwrap().unwrap(), winners[0]);
}

async fn lists_filter_by_status_session_and_target(f: Fixture) {
    let a = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    let b = question("s1", &["chat:2"], DEFAULT_TIMEOUT);
    let c = question("s2", &["chat:1"], DEFAULT_TIMEOUT);
    for q in [&a, &b, &c] {
        f.store.insert(q).await.unwrap();
    }
    f.store
        .claim(&b, &claim(answer("dayjs"), "x:1"))
        .await
        .unwrap();
    // As the bridge does once a resolution's effects are done.
    f.store.settle(&b.id, Some(&b)).await.unwrap();
    let ids = |questions: Vec<Question>| {
        let mut ids: Vec<String> = questions.into_iter().map(|q| q.id.to_string()).collect();
        ids.sort();
        ids
    };
    let sorted = |list: &[&Question]| {
        let mut ids: Vec<String> = list.iter().map(|q| q.id.to_string()).collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(f.store.list(&ListFilter::pending()).await.unwrap()),
        sorted(&[&a, &c])
    );
    let by_session = ListFilter {
        session_id: Some("s1".into()),
        ..ListFilter::pending()
    };
    assert_eq!(ids(f.store.list(&by_session).await.unwrap()), sorted(&[&a]));
    let answered = ListFilter {
        status: Some(Status::Answered),
        ..ListFilter::default()
    };
    assert_eq!(ids(f.store.list(&answered).await.unwrap()), sorted(&[&b]));
    let answered_s1 = ListFilter {
        session_id: Some("s1".into()),
        ..answered.clone()
    };
    assert_eq!(
        ids(f.store.list(&answered_s1).await.unwrap()),
        sorted(&[&b])
    );
    let in_chat_1 = ListFilter {
        target: Some("chat:1".into()),
        ..ListFilter::pending()
    };
    assert_eq!(
        ids(f.store.list(&in_chat_1).await.unwrap()),
        sorted(&[&a, &c])
    );
    assert_eq!(f.store.count_pending().await.unwrap(), 2);
    let newest_first = f.store.list(&ListFilter::pending()).await.unwrap();
    assert!(newest_first[0].created_at >= newest_first[1].created_at);
}

async fn due_entries_are_leased_rescheduled_and_settled(f: Fixture) {
    let soon = question("s1", &["chat:1"], Duration::from_millis(1));
    let later = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    f.store.insert(&soon).await.unwrap();
    f.store.insert(&later).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let now = Millis::now();
    let lease = Duration::from_secs(30);
    assert_eq!(
        f.store.lease_due(now, lease, 10).await.unwrap(),
        vec![soon.id.clone()]
    );
    assert!(
        f.store.lease_due(now, lease, 10).await.unwrap().is_empty(),
        "a leased entry is hidden"
    );
    assert_eq!(
        f.store
            .lease_due(now.after(lease), lease, 10)
            .await
            .unwrap(),
        vec![soon.id.clone()],
        "until the lease ends"
    );
    let mut open = f.store.open_ids().await.unwrap();
    open.sort();
    let mut expected = vec![soon.id.clone(), later.id.clone()];
    expected.sort();
    assert_eq!(open, expected);
    f.store.reschedule(&later.id, now).await.unwrap();
    assert_eq!(
        f.store.lease_due(now, lease, 10).await.unwrap(),
        vec![later.id.clone()]
    );
    f.store
        .claim(&soon, &claim(Transition::Expire, "askbridge"))
        .await
        .unwrap();
    f.store.settle(&soon.id, Some(&soon)).await.unwrap();
    assert_eq!(f.store.open_ids().await.unwrap(), vec![later.id.clone()]);
    let in_chat = ListFilter {
        target: Some("chat:1".into()),
        ..ListFilter::pending()
    };
    assert_eq!(f.store.list(&in_chat).await.unwrap().len(), 1);
    // Rescheduling enters an entry again (a settle that must retry after another removed it).
    f.store.reschedule(&soon.id, now).await.unwrap();
    assert_eq!(f.store.open_ids().await.unwrap().len(), 2);
}

async fn deliveries_and_effects_are_recorded(f: Fixture) {
    let q = question("s1", &["chat:1", "chat:2"], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    for (target, reference) in [("chat:1", "m1"), ("chat:2", "m2"), ("chat:1", "m3")] {
        f.store
            .record_shown(
                &q.id,
                &Shown {
                    target: target.into(),
                    reference: reference.into(),
                },
            )
            .await
            .unwrap();
    }
    let mut shown = f.store.shown(&q.id).await.unwrap();
    shown.sort_by(|a, b| a.target.cmp(&b.target));
    assert_eq!(
        shown,
        vec![
            Shown {
                target: "chat:1".into(),
                reference: "m3".into()
            },
            Shown {
                target: "chat:2".into(),
                reference: "m2".into()
            },
        ]
    );
    assert!(f.store.mark_effect(&q.id, "event").await.unwrap());
    assert!(
        !f.store.mark_effect(&q.id, "event").await.unwrap(),
        "an effect is marked once"
    );
    assert!(f.store.mark_effect(&q.id, "withdraw:chat:1").await.unwrap());
    let mut done = f.store.effects_done(&q.id).await.unwrap();
    done.sort();
    assert_eq!(done, vec!["event".to_owned(), "withdraw:chat:1".to_owned()]);
}

async fn duplicate_deliveries_are_recognised(f: Fixture) {
    assert!(
        f.store
            .first_sighting("telegram:update:1", Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(
        !f.store
            .first_sighting("telegram:update:1", Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(
        f.store
            .first_sighting("telegram:update:2", Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(
        f.store
            .first_sighting("short", Duration::from_millis(30))
            .await
            .unwrap()
    );
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert!(
        f.store
            .first_sighting("short", Duration::from_millis(30))
            .await
            .unwrap(),
        "forgotten after the window"
    );
}

async fn published_events_reach_subscribers(f: Fixture) {
    let mut events = f.store.subscribe();
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    f.store.publish(&Event::of(&q)).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.kind, EventKind::Asked);
    assert_eq!(event.question, q);
}

async fn purge_forgets_old_resolved_questions_only(f: Fixture) {
    let old = question("s1", &[], DEFAULT_TIMEOUT);
    let pending = question("s1", &[], DEFAULT_TIMEOUT);
    f.store.insert(&old).await.unwrap();
    f.store.insert(&pending).await.unwrap();
    f.store
        .claim(&old, &claim(answer("dayjs"), "x:1"))
        .await
        .unwrap();
    f.store.settle(&old.id, Some(&old)).await.unwrap();
    // The fixture's retention is 1 s.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    f.store.purge(Millis::now()).await.unwrap();
    assert_eq!(
        f.store.get(&old.id).await.unwrap(),
        None,
        "resolved and older than the retention"
    );
    assert!(
        f.store.get(&pending.id).await.unwrap().is_some(),
        "pending questions are never purged"
    );
    let answered = ListFilter {
        status: Some(Status::Answered),
        ..ListFilter::default()
    };
    assert!(f.store.list(&answered).await.unwrap().is_empty());
}

fn run() -> Run {
    let origin = Origin {
        chat: Some("chat:1".into()),
        user: "chat:7".into(),
        user_name: None,
    };
    Run::new(
        "deploy",
        "staging",
        origin,
        "p1",
        Millis(1_000),
        Millis(31_000),
    )
}

async fn runs_are_stored_without_overwriting(f: Fixture) {
    let r = run();
    f.store.insert_run(&r).await.unwrap();
    assert_eq!(f.store.get_run(&r.id).await.unwrap(), Some(r.clone()));
    assert!(f.store.get_run("rnothing").await.unwrap().is_none());
    let mut other = run();
    other.id = r.id.clone();
    other.flow = "other".into();
    assert!(matches!(
        f.store.insert_run(&other).await,
        Err(Error::IdTaken)
    ));
}

async fn a_run_is_taken_for_its_answer_once(f: Fixture) {
    let mut r = run();
    let question = r.question_id(0);
    f.store.insert_run(&r).await.unwrap();
    r.state = RunState::Waiting;
    r.waiting_on = Some(question.clone());
    r.owner = None;
    r.lease_until = None;
    assert!(f.store.save_run(&r, "p1").await.unwrap());
    assert!(
        f.store
            .expired_runs(Millis(u64::MAX / 2), 10)
            .await
            .unwrap()
            .is_empty(),
        "waiting runs need no executor"
    );
    let mut tasks = Vec::new();
    for n in 0..20 {
        let (store, id, question) = (f.store.clone(), r.id.clone(), question.clone());
        tasks.push(tokio::spawn(async move {
            store
                .acquire_run(
                    &id,
                    Acquire::Answer(&question),
                    &format!("p{n}"),
                    Millis(2_000),
                    Millis(32_000),
                )
                .await
                .unwrap()
        }));
    }
    let mut taken = Vec::new();
    for task in tasks {
        taken.extend(task.await.unwrap());
    }
    assert_eq!(taken.len(), 1, "one of 20 processes takes the run");
    assert_eq!(taken[0].state, RunState::Running);
    assert_eq!(
        f.store.get_run(&r.id).await.unwrap().unwrap().owner,
        taken[0].owner
    );
    let other = r.question_id(1);
    assert!(
        f.store
            .acquire_run(
                &r.id,
                Acquire::Answer(&other),
                "p9",
                Millis(2_000),
                Millis(3_000)
            )
            .await
            .unwrap()
            .is_none()
    );
}

async fn runs_are_recovered_only_after_their_lease(f: Fixture) {
    let r = run();
    f.store.insert_run(&r).await.unwrap();
    assert!(
        f.store
            .expired_runs(Millis(30_000), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        f.store
            .acquire_run(
                &r.id,
                Acquire::Recovery,
                "p2",
                Millis(30_000),
                Millis(60_000)
            )
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        f.store.expired_runs(Millis(31_000), 10).await.unwrap(),
        vec![r.id.clone()]
    );
    let taken = f
        .store
        .acquire_run(
            &r.id,
            Acquire::Recovery,
            "p2",
            Millis(31_000),
            Millis(61_000),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (taken.owner.as_deref(), taken.lease_until),
        (Some("p2"), Some(Millis(61_000)))
    );
    assert!(
        f.store
            .expired_runs(Millis(40_000), 10)
            .await
            .unwrap()
            .is_empty(),
        "the new lease counts"
    );
}

async fn saving_a_run_is_fenced_by_its_owner(f: Fixture) {
    let mut r = run();
    f.store.insert_run(&r).await.unwrap();
    r.journal.push(JournalEntry::Step {
        name: "s".into(),
        value: serde_json::json!(1),
    });
    assert!(
        !f.store.save_run(&r, "p2").await.unwrap(),
        "a process that does not hold it cannot write"
    );
    assert!(f.store.save_run(&r, "p1").await.unwrap());
    assert_eq!(
        f.store.get_run(&r.id).await.unwrap().unwrap().journal.len(),
        1
    );
    r.state = RunState::Done;
    r.result = Some("ok".into());
    assert!(f.store.save_run(&r, "p1").await.unwrap());
    assert_eq!(
        f.store
            .expired_runs(Millis(u64::MAX / 2), 10)
            .await
            .unwrap(),
        vec![r.id.clone()],
        "done but not reported"
    );
    r.reported = true;
    r.owner = None;
    assert!(f.store.save_run(&r, "p1").await.unwrap());
    assert!(
        f.store
            .expired_runs(Millis(u64::MAX / 2), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.store.get_run(&r.id).await.unwrap().unwrap(), r);
}

async fn rules_are_stored_listed_and_deleted(f: Fixture) {
    let action = Action::new("shell", serde_json::json!({"command": "make"}));
    let rule = Rule {
        id: "rule-1".into(),
        action,
        scope: Scope::Everywhere,
        created_by: "telegram:1".into(),
        created_at: Millis(5),
        question_id: None,
    };

    f.store.put_rule(&rule).await.unwrap();
    f.store.put_rule(&rule).await.unwrap();
    assert_eq!(f.store.rules().await.unwrap(), vec![rule.clone()]);
    assert!(f.store.delete_rule("rule-1").await.unwrap());
    assert!(!f.store.delete_rule("rule-1").await.unwrap());
    assert!(f.store.rules().await.unwrap().is_empty());
}

async fn the_audit_trail_keeps_order_and_filters(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    let mut entries = Vec::new();
    for (n, session) in ["s1", "s2", "s1"].iter().enumerate() {
        let mut entry = AuditEntry::refused(
            &format!("chat:{n}"),
            "chat",
            Some(q.id.to_string()),
            None,
            "no",
        );
        entry.at = Millis(1_000 + n as u64);
        entry.session_id = Some((*session).into());
        f.store.append_audit(&entry).await.unwrap();
        entries.push(entry);
    }
    let all = f.store.audit(&AuditFilter::default()).await.unwrap();
    assert_eq!(all, entries, "oldest first");
    let s1 = f
        .store
        .audit(&AuditFilter {
            session_id: Some("s1".into()),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(s1, vec![entries[0].clone(), entries[2].clone()]);
    let recent = f
        .store
        .audit(&AuditFilter {
            since: Some(Millis(1_001)),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(recent, entries[1..].to_vec());
    let one = f
        .store
        .audit(&AuditFilter {
            limit: 1,
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(one, entries[..1].to_vec());
}

macro_rules! conformance {
    ($($test:ident),* $(,)?) => {
        mod memory_store {
            $(#[tokio::test] async fn $test() { super::$test(super::memory(super::options(stringify!($test))).await).await })*
        }
        mod embedded_store {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $test() { super::$test(super::embedded(super::options(stringify!($test))).await).await })*
        }
        mod redis_store {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $test() { super::$test(super::redis(super::options(stringify!($test))).await).await })*
        }
    };
}

fn options(test: &str) -> StoreOptions {
    let retention = if test.starts_with("purge") {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(3600)
    };
    StoreOptions {
        retention,
        ..StoreOptions::default()
    }
}

conformance!(
    insert_then_get_round_trips,
    insert_never_overwrites,
    first_claim_wins_and_later_claims_change_nothing,
    a_late_claim_expires_the_question_with_its_default,
    claiming_a_missing_question_says_so,
    concurrent_claims_have_exactly_one_winner,
    lists_filter_by_status_session_and_target,
    due_entries_are_leased_rescheduled_and_settled,
    deliveries_and_effects_are_recorded,
    duplicate_deliveries_are_recognised,
    published_events_reach_subscribers,
    purge_forgets_old_resolved_questions_only,
    runs_are_stored_without_overwriting,
    a_run_is_taken_for_its_answer_once,
    runs_are_recovered_only_after_their_lease,
    saving_a_run_is_fenced_by_its_owner,
    rules_are_stored_listed_and_deleted,
    the_audit_trail_keeps_order_and_filters,
);

/// Redis only: the store keeps working across a redis-server crash and restart (reconnection,
/// and scripts re-loaded after NOSCRIPT), and the AOF keeps the pending question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_store_survives_a_redis_restart() {
    let mut fixture = redis_store_with(StoreOptions::default()).await;
    let q = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    fixture.store.insert(&q).await.unwrap();
    fixture.server.restart();
    let (outcome, _) = fixture
        .store
        .claim(&q, &claim(answer("luxon"), "x:1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome,
        ClaimOutcome::Won,
        "the pending question survived and scripts were re-loaded"
    );
    let _: &RedisServer = &fixture.server;
}

/// Redis only: every key of one question shares its hash tag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_keys_of_a_question_share_one_hash_tag() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    let q = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    fixture.store.insert(&q).await.unwrap();
    fixture
        .store
        .record_shown(
            &q.id,
            &Shown {
                target: "chat:1".into(),
                reference: "m".into(),
            },
        )
        .await
        .unwrap();
    fixture.store.mark_effect(&q.id, "event").await.unwrap();
    let client = redis::Client::open(fixture.server.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{}*", q.id))
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(keys.len(), 3, "{keys:?}");
    let tag = format!("{{{}}}", q.id);
    assert!(keys.iter().all(|k| k.contains(&tag)), "{keys:?}");
    // Once resolved, every key of the question expires with the retention, including effects
    // marked after the claim.
    fixture
        .store
        .claim(&q, &claim(answer("dayjs"), "x:1"))
        .await
        .unwrap();
    fixture
        .store
        .mark_effect(&q.id, "withdraw:chat:1")
        .await
        .unwrap();
    for key in &keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert!(ttl > 0, "{key} has no TTL ({ttl})");
    }
}
