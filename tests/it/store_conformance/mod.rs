//! One suite, three stores: every test runs against memory, embedded (redb) and Redis, grouped
//! by the store role it checks (`questions.rs`, `votes.rs`, `outbox.rs`, `runs.rs`, `kept.rs`,
//! `records.rs`, `rule_index.rs`, `listings.rs`, `sessions.rs`), plus Redis-only tests below.

use crate::support::{RedisServer, redis_store_with};
use askbridge::store::ClaimOptions;
use askbridge::store::embedded::EmbeddedStore;
use askbridge::store::memory::MemoryStore;
use askbridge::store::prelude::*;
use askbridge::store::{Shown, Store, StoreOptions};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::{
    Action, Actor, Answer, Claim, ClaimOutcome, Millis, NewQuestion, Question, QuestionId, Rule,
    Scope, Transition,
};
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

/// Runs each named test (a function of a [`Fixture`] in the invoking module) on every store.
macro_rules! conformance {
    ($($test:ident),* $(,)?) => {
        mod memory_store {
            $(#[tokio::test] async fn $test() { super::$test(crate::store_conformance::memory(crate::store_conformance::options(stringify!($test))).await).await })*
        }
        mod embedded_store {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $test() { super::$test(crate::store_conformance::embedded(crate::store_conformance::options(stringify!($test))).await).await })*
        }
        mod redis_store {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $test() { super::$test(crate::store_conformance::redis(crate::store_conformance::options(stringify!($test))).await).await })*
        }
        mod redis_cluster_store {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $test() { super::$test(crate::store_conformance::cluster(crate::store_conformance::options(stringify!($test)), concat!(module_path!(), "::", stringify!($test))).await).await })*
        }
    };
}

mod decisions;
mod kept;
mod listings;
mod outbox;
mod questions;
mod records;
mod rule_index;
mod runs;
mod sessions;
mod votes;

/// A claim's outcome and the question afterwards, as most tests look at them.
pub(crate) trait Pair {
    fn pair(self) -> (ClaimOutcome, Question);
}

impl Pair for askbridge::store::Claimed {
    fn pair(self) -> (ClaimOutcome, Question) {
        (self.outcome, self.question)
    }
}

/// How long after a resolution the tests ask the outbox entry to become due.
pub(crate) const SETTLE: Duration = Duration::from_secs(10);

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

/// A store on the shared Redis Cluster, under a key prefix of its own.
pub(crate) async fn cluster(options: StoreOptions, test: &str) -> Fixture {
    let cluster = crate::redis_cluster::shared();
    let prefix: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let store = crate::support::redis_cluster_store(&cluster.urls, prefix, options).await;
    Fixture {
        store: Arc::new(store),
        _keep: Box::new(()),
    }
}

pub(crate) async fn redis(options: StoreOptions) -> Fixture {
    let fixture = redis_store_with(options).await;
    Fixture {
        store: fixture.store,
        _keep: Box::new(fixture.server),
    }
}

pub(crate) fn question(session: &str, targets: &[&str], timeout: Duration) -> Question {
    NewQuestion::ask("Which library?")
        .session(session)
        .options(["dayjs", "luxon"])
        .targets(targets.iter().copied())
        .timeout(timeout)
        .into_question(QuestionId::random(), Millis::now(), DEFAULT_TIMEOUT)
        .unwrap()
}

/// An "always allow `make`" rule with this id.
pub(crate) fn rule(id: &str) -> Rule {
    Rule {
        id: id.into(),
        action: Action::new("shell", serde_json::json!({"command": "make"})),
        scope: Scope::Everywhere,
        created_by: "telegram:1".into(),
        created_at: Millis(5),
        question_id: None,
        quorum: 0,
    }
}

pub(crate) fn claim(transition: Transition, by: &str) -> Claim {
    Claim::new(transition, Actor::new(by, "test"), Millis::now())
}

pub(crate) fn answer(text: &str) -> Transition {
    Transition::Answer {
        value: Answer::Text(text.into()),
    }
}

pub(crate) fn options(test: &str) -> StoreOptions {
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
        .claim(
            &q,
            &claim(answer("luxon"), "x:1"),
            ClaimOptions::new(SETTLE),
        )
        .await
        .unwrap()
        .unwrap()
        .pair();
    assert_eq!(
        outcome,
        ClaimOutcome::Won,
        "the pending question survived and scripts were re-loaded"
    );
    let _: &RedisServer = &fixture.server;
}

/// Redis only: every key of one question is in one slot.
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
            Millis::now(),
        )
        .await
        .unwrap();
    fixture.store.mark_effect(&q.id, "resume").await.unwrap();
    let mut connection = fixture.server.connection().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{}*", q.id))
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(keys.len(), 3, "{keys:?}");
    let slot = askbridge::store::redis::slot(&keys[0]);
    assert!(
        keys.iter()
            .all(|k| askbridge::store::redis::slot(k) == slot),
        "{keys:?}"
    );
    // Once resolved, every key of the question expires with the retention, including effects
    // marked after the claim.
    fixture
        .store
        .claim(
            &q,
            &claim(answer("dayjs"), "x:1"),
            ClaimOptions::new(SETTLE),
        )
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

/// Redis only: rules an older askbridge stored (no index entries) are filed by action when a
/// store connects, so approvals keep finding them; a rule revoked meanwhile is not filed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_rules_stored_before_the_index_are_filed_on_connect() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    let kept = Rule {
        id: askbridge_core::RuleId::for_question(&QuestionId::random()),
        ..rule("x")
    };
    fixture.store.put_rule(&kept).await.unwrap();
    // As an older askbridge left it: the rule, without its entries, or with its entries in the
    // index's older shape (a sorted set), which nothing reads any more.
    let mut connection = fixture.server.connection().await;
    let mut older = Vec::new();
    for pattern in ["*rules:for:*", "*rules:at"] {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(pattern)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert_eq!(keys.len(), 1, "{pattern}: {keys:?}");
        let _: () = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut connection)
            .await
            .unwrap();
        older.push(keys[0].replace("rules:at", "rules:by-action"));
    }
    let _: () = redis::cmd("ZADD")
        .arg(&older[1])
        .arg(0)
        .arg(format!("entry/*/{}", kept.id))
        .query_async(&mut connection)
        .await
        .unwrap();
    let digest = kept.action.digest();
    assert!(
        fixture
            .store
            .rules_for(&digest, "s1")
            .await
            .unwrap()
            .is_empty()
    );
    let restarted = crate::support::redis_store_on(&fixture.server, StoreOptions::default()).await;
    assert_eq!(
        restarted.rules_for(&digest, "s1").await.unwrap(),
        vec![kept.clone()]
    );
    let left: usize = redis::cmd("EXISTS")
        .arg(&older[1])
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(
        left, 0,
        "the older index is deleted once its bucket is filed"
    );
    restarted.delete_rule(&kept.id).await.unwrap().unwrap();
    assert!(restarted.rules_for(&digest, "s1").await.unwrap().is_empty());
}

/// Embedded only: a session's pending page reads that page, not every question the session had.
/// The resolved questions' records are made unreadable in the file; the pending page still
/// answers (it read none of them), where the session's resolved listing, which reads them all,
/// fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_a_sessions_pending_page_reads_no_resolved_question() {
    use askbridge::store::ListFilter;
    use askbridge_core::Status;
    let (dir, store, resolved) = embedded_resolved(20).await;
    let pending = question("s", &[], DEFAULT_TIMEOUT);
    store.insert(&pending).await.unwrap();
    drop(store);
    spoil(
        &dir.path().join(askbridge::store::embedded::FILE_NAME),
        &resolved,
    )
    .await;

    let store = EmbeddedStore::open(dir.path(), StoreOptions::default())
        .await
        .unwrap();
    let session = |status| ListFilter {
        session_id: Some("s".into()),
        status: Some(status),
        ..ListFilter::pending()
    };
    let listed = store.list(&session(Status::Pending)).await.unwrap();
    let ids: Vec<QuestionId> = listed.into_iter().map(|q| q.id).collect();
    assert_eq!(ids, [pending.id]);
    assert!(store.list(&session(Status::Answered)).await.is_err());
}

/// Embedded only: a session's history page, and its page of one outcome, read that page, not
/// every question the session had. The records of all but its newest eleven resolved questions
/// are made unreadable in the file; two pages of five still answer (each reads its five and one
/// more, which says whether a next page follows), the third reads unreadable ones and fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_a_sessions_history_reads_a_page() {
    use askbridge::store::{HistoryFilter, ListFilter};
    use askbridge_core::Status;
    let (dir, store, resolved) = embedded_resolved(40).await;
    drop(store);
    spoil(
        &dir.path().join(askbridge::store::embedded::FILE_NAME),
        &resolved[..29],
    )
    .await;

    let store = EmbeddedStore::open(dir.path(), StoreOptions::default())
        .await
        .unwrap();
    let newest: Vec<QuestionId> = resolved.iter().rev().cloned().collect();
    let history = |after| HistoryFilter {
        session_id: Some("s".into()),
        after,
        limit: 5,
        ..HistoryFilter::default()
    };
    let first = store.history(&history(None)).await.unwrap();
    let ids = |qs: Vec<askbridge_core::Question>| qs.into_iter().map(|q| q.id).collect::<Vec<_>>();
    assert_eq!(ids(first.items), newest[..5]);
    let second = store.history(&history(first.next)).await.unwrap();
    assert_eq!(ids(second.items), newest[5..10]);
    let answered = ListFilter {
        session_id: Some("s".into()),
        status: Some(Status::Answered),
        limit: 5,
        ..ListFilter::pending()
    };
    assert_eq!(ids(store.list(&answered).await.unwrap()), newest[..5]);
    // The page after those reads the unreadable ones, and says so.
    assert!(store.history(&history(second.next)).await.is_err());
}

/// An embedded store in a new folder with `count` questions of session `s` answered, a few
/// milliseconds apart (oldest first).
async fn embedded_resolved(count: usize) -> (tempfile::TempDir, EmbeddedStore, Vec<QuestionId>) {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path(), StoreOptions::default())
        .await
        .unwrap();
    let mut resolved = Vec::new();
    for _ in 0..count {
        let q = question("s", &[], DEFAULT_TIMEOUT);
        store.insert(&q).await.unwrap();
        let by = claim(answer("dayjs"), "telegram:1");
        store
            .claim(&q, &by, ClaimOptions::new(SETTLE))
            .await
            .unwrap();
        resolved.push(q.id);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    (dir, store, resolved)
}

/// Writes what no question decodes from over the records of `ids` (once the store that had the
/// file open has let it go).
async fn spoil(file: &std::path::Path, ids: &[QuestionId]) {
    let table = redb::TableDefinition::<&str, &str>::new("questions");
    for _ in 0..100 {
        match redb::Database::open(file) {
            Ok(db) => {
                let txn = db.begin_write().unwrap();
                {
                    let mut questions = txn.open_table(table).unwrap();
                    for id in ids {
                        questions.insert(id.as_str(), "not a question").unwrap();
                    }
                }
                txn.commit().unwrap();
                return;
            }
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(other) => panic!("{other}"),
        }
    }
    panic!("the store kept the file open");
}
