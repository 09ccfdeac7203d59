//! A session's pending page: on every store, its newest pending questions and nothing else; on
//! Redis, a page that reads no resolved question of the session, and the pending questions stored
//! before the session's pending index entered in it on connect. A session's history and its
//! questions of one outcome: on every store, newest resolved first, a page at a time (the
//! embedded store's reads only that page: `embedded_a_sessions_history_reads_a_page` in
//! `mod.rs`).

use super::listings::all_pages;
use super::{Fixture, SETTLE, answer, claim, question};
use crate::support::{redis_store_on, redis_store_with};
use askbridge::store::prelude::*;
use askbridge::store::{ClaimOptions, HistoryFilter, ListFilter, StoreOptions};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::{Question, QuestionId, Status};

fn of_session(session: &str, status: Status, limit: usize) -> ListFilter {
    ListFilter {
        session_id: Some(session.into()),
        status: Some(status),
        limit,
        ..ListFilter::pending()
    }
}

/// The TTL of `key` on a test's Redis, ms (-1 for none).
async fn pttl(connection: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
    redis::cmd("PTTL")
        .arg(key)
        .query_async(connection)
        .await
        .unwrap()
}

/// The keys matching `pattern` on a test's Redis.
async fn keys(connection: &mut redis::aio::MultiplexedConnection, pattern: &str) -> Vec<String> {
    redis::cmd("KEYS")
        .arg(pattern)
        .query_async(connection)
        .await
        .unwrap()
}

fn ids(questions: Vec<Question>) -> Vec<QuestionId> {
    questions.into_iter().map(|q| q.id).collect()
}

/// Asks `n` questions in `session`, a millisecond apart, and answers each `answered` one.
async fn ask(
    store: &dyn askbridge::store::Store,
    session: &str,
    n: usize,
    answered: bool,
) -> Vec<Question> {
    let mut asked = Vec::new();
    for _ in 0..n {
        let q = question(session, &[], DEFAULT_TIMEOUT);
        store.insert(&q).await.unwrap();
        if answered {
            let by = claim(answer("dayjs"), "telegram:1");
            store
                .claim(&q, &by, ClaimOptions::new(SETTLE))
                .await
                .unwrap();
        }
        asked.push(q);
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    asked
}

async fn a_sessions_pending_page_is_its_newest_pending(f: Fixture) {
    let pending = ask(&*f.store, "s", 4, false).await;
    let answered = ask(&*f.store, "s", 3, true).await;
    ask(&*f.store, "other", 2, false).await;
    let page = f
        .store
        .list(&of_session("s", Status::Pending, 3))
        .await
        .unwrap();
    let newest: Vec<QuestionId> = pending.iter().rev().take(3).map(|q| q.id.clone()).collect();
    assert_eq!(ids(page), newest);
    let all = f
        .store
        .list(&of_session("s", Status::Pending, usize::MAX))
        .await
        .unwrap();
    assert_eq!(all.len(), 4);
    let resolved = f
        .store
        .list(&of_session("s", Status::Answered, 10))
        .await
        .unwrap();
    let expected: Vec<QuestionId> = answered.iter().rev().map(|q| q.id.clone()).collect();
    assert_eq!(ids(resolved), expected);
}

conformance!(
    a_sessions_pending_page_is_its_newest_pending,
    a_sessions_history_pages_through_its_resolved_questions,
);

async fn a_sessions_history_pages_through_its_resolved_questions(f: Fixture) {
    // One outcome only: a page's cursor entry must not take the place of the next page's first.
    let answered = ask(&*f.store, "s", 7, true).await;
    ask(&*f.store, "other", 2, true).await;
    ask(&*f.store, "s", 1, false).await;
    let newest: Vec<QuestionId> = answered.iter().rev().map(|q| q.id.clone()).collect();
    let store = f.store.clone();
    let seen = all_pages(|after| {
        let store = store.clone();
        async move {
            let filter = HistoryFilter {
                session_id: Some("s".into()),
                after,
                limit: 3,
                ..HistoryFilter::default()
            };
            let page = store.history(&filter).await.unwrap();
            assert!(page.items.len() <= 3);
            (page.items, page.next)
        }
    })
    .await;
    assert_eq!(
        ids(seen),
        newest,
        "every resolved question once, newest first"
    );
    let page = f
        .store
        .list(&of_session("s", Status::Answered, 3))
        .await
        .unwrap();
    assert_eq!(ids(page), newest[..3]);
    let declined = f
        .store
        .list(&of_session("s", Status::Declined, 3))
        .await
        .unwrap();
    assert!(declined.is_empty());
}

/// Redis only: a session's pending page reads no resolved question of the session. The resolved
/// questions' records are made unreadable; the pending page still answers (it read none of
/// them), where the session's resolved listing, which reads them, fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_sessions_pending_page_reads_no_resolved_question() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    let resolved = ask(&*fixture.store, "s", 40, true).await;
    let pending = ask(&*fixture.store, "s", 1, false).await;
    let mut connection = fixture.server.connection().await;
    spoil(&mut connection, &resolved).await;
    let page = fixture
        .store
        .list(&of_session("s", Status::Pending, 50))
        .await;
    assert_eq!(ids(page.unwrap()), [pending[0].id.clone()]);
    assert!(
        fixture
            .store
            .list(&of_session("s", Status::Answered, 50))
            .await
            .is_err()
    );
}

/// Redis only: pending questions stored before the session's pending index (as an older
/// askbridge left them: no index, no mark) are entered in it on connect; resolved ones are not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_pending_questions_stored_before_the_session_index_are_entered_on_connect() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    let asked = ask(&*fixture.store, "s", 5, false).await;
    let by = claim(answer("dayjs"), "telegram:1");
    fixture
        .store
        .claim(&asked[4], &by, ClaimOptions::new(SETTLE))
        .await
        .unwrap();
    let mut connection = fixture.server.connection().await;
    for pattern in ["*session-pending:*", "*sessions-indexed"] {
        let older = keys(&mut connection, pattern).await;
        assert!(!older.is_empty(), "{pattern}");
        let _: () = redis::cmd("DEL")
            .arg(&older)
            .query_async(&mut connection)
            .await
            .unwrap();
    }
    let pending = of_session("s", Status::Pending, 10);
    assert!(
        fixture.store.list(&pending).await.unwrap().is_empty(),
        "the page reads the index"
    );
    let restarted = redis_store_on(&fixture.server, StoreOptions::default()).await;
    let expected: Vec<QuestionId> = asked[..4].iter().rev().map(|q| q.id.clone()).collect();
    assert_eq!(ids(restarted.list(&pending).await.unwrap()), expected);
    let marks = keys(&mut connection, "*sessions-indexed").await;
    assert_eq!(marks.len(), 16, "every bucket is marked done");
}

/// Redis only: a session's pending index as an askbridge that gave it a TTL left it (a TTL, the
/// buckets marked `1`) loses its TTL on connect, keeps its ids, and the buckets are marked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_pending_index_left_with_a_ttl_loses_it_on_connect() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    let asked = ask(&*fixture.store, "s", 5, false).await;
    let mut connection = fixture.server.connection().await;
    let indexes = keys(&mut connection, "*session-pending:s").await;
    assert!(!indexes.is_empty());
    for key in &indexes {
        let ttl = pttl(&mut connection, key).await;
        assert_eq!(ttl, -1, "an ask gives the index no TTL: {key}");
        let _: i64 = redis::cmd("PEXPIRE")
            .arg(key)
            .arg(3_600_000)
            .query_async(&mut connection)
            .await
            .unwrap();
    }
    for mark in keys(&mut connection, "*sessions-indexed").await {
        let _: () = redis::cmd("SET")
            .arg(&mark)
            .arg(1)
            .query_async(&mut connection)
            .await
            .unwrap();
    }
    let restarted = redis_store_on(&fixture.server, StoreOptions::default()).await;
    for key in &indexes {
        assert_eq!(pttl(&mut connection, key).await, -1, "{key}");
    }
    let expected: Vec<QuestionId> = asked.iter().rev().map(|q| q.id.clone()).collect();
    let pending = of_session("s", Status::Pending, 10);
    assert_eq!(ids(restarted.list(&pending).await.unwrap()), expected);
    for mark in keys(&mut connection, "*sessions-indexed").await {
        let value: String = redis::cmd("GET")
            .arg(&mark)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert_eq!(value, "2", "{mark}");
    }
}

/// Redis only: a session an older askbridge closed (the member `!closed` in its question set)
/// is still closed to `askbridge exec`'s renewal, and a reopen takes the old mark off too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_session_closed_by_an_older_askbridge_stays_closed_until_reopened() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    ask(&*fixture.store, "old", 3, false).await;
    let mut connection = fixture.server.connection().await;
    let indexes = keys(&mut connection, "*:session-pending:old").await;
    assert!(!indexes.is_empty());
    // Bucket 0's set, where `session_closed` looks (the prefix is the test's own).
    let set = format!(
        "{}{{b00}}:session:old",
        &indexes[0][..indexes[0].find("{b").unwrap()]
    );
    let _: i64 = redis::cmd("SADD")
        .arg(&set)
        .arg("!closed")
        .query_async(&mut connection)
        .await
        .unwrap();
    assert!(fixture.store.session_closed("old").await.unwrap());
    assert!(!fixture.store.session_closed("other").await.unwrap());
    fixture.store.reopen_session("old").await.unwrap();
    assert!(!fixture.store.session_closed("old").await.unwrap());
}

/// Makes the records of `questions` unreadable: a listing that reads one of them fails.
async fn spoil(connection: &mut redis::aio::MultiplexedConnection, questions: &[Question]) {
    for q in questions {
        let record = keys(connection, &format!("*:q:{}", q.id)).await;
        assert_eq!(record.len(), 1, "{record:?}");
        let _: () = redis::cmd("HSET")
            .arg(&record[0])
            .arg("q")
            .arg("not a question")
            .query_async(connection)
            .await
            .unwrap();
    }
}

/// Redis only: a session's history page and its listing of one outcome read that page of its
/// resolved questions, not every one it had: the records of all but the newest are made
/// unreadable, and the first pages still answer, where reading further fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_sessions_history_reads_only_its_page() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    let resolved = ask(&*fixture.store, "s", 40, true).await;
    ask(&*fixture.store, "s", 2, false).await;
    let mut connection = fixture.server.connection().await;
    // A page of 3 reads 4 (the 4th tells whether a next page exists): two pages read the
    // newest 7.
    spoil(&mut connection, &resolved[..30]).await;
    let newest: Vec<QuestionId> = resolved.iter().rev().map(|q| q.id.clone()).collect();
    let first = HistoryFilter {
        session_id: Some("s".into()),
        limit: 3,
        ..HistoryFilter::default()
    };
    let page = fixture.store.history(&first).await.unwrap();
    assert_eq!(ids(page.items), newest[..3]);
    let answered = fixture
        .store
        .history(&HistoryFilter {
            status: Some(Status::Answered),
            ..first.clone()
        })
        .await
        .unwrap();
    assert_eq!(ids(answered.items), newest[..3]);
    let listed = fixture
        .store
        .list(&of_session("s", Status::Answered, 3))
        .await
        .unwrap();
    assert_eq!(ids(listed), newest[..3]);
    let next = HistoryFilter {
        after: page.next,
        ..first
    };
    let second = fixture.store.history(&next).await.unwrap();
    assert_eq!(ids(second.items), newest[3..6]);
    let further = HistoryFilter { limit: 10, ..next };
    assert!(
        fixture.store.history(&further).await.is_err(),
        "reading the spoilt records fails"
    );
}

/// Redis only: questions an older askbridge asked into a session (their ids in the session's
/// set, none in its resolved index) are still in the session's history and listings, beside
/// those resolved since, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_sessions_questions_from_an_older_askbridge_stay_in_its_history() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    let older = ask(&*fixture.store, "s", 3, true).await;
    let mut connection = fixture.server.connection().await;
    // As an older askbridge left them: in the session's set, in no resolved index of its own.
    let resolved = keys(&mut connection, "*:session-done:*:s").await;
    assert!(!resolved.is_empty());
    let _: () = redis::cmd("DEL")
        .arg(&resolved)
        .query_async(&mut connection)
        .await
        .unwrap();
    let newer = ask(&*fixture.store, "s", 2, true).await;
    for q in older.iter().chain(&newer[..1]) {
        let record = keys(&mut connection, &format!("*:q:{}", q.id)).await;
        let set = record[0].replace(&format!(":q:{}", q.id), ":session:s");
        let _: i64 = redis::cmd("SADD")
            .arg(&set)
            .arg(q.id.as_str())
            .query_async(&mut connection)
            .await
            .unwrap();
    }
    let all: Vec<QuestionId> = older
        .iter()
        .chain(&newer)
        .rev()
        .map(|q| q.id.clone())
        .collect();
    let history = HistoryFilter {
        session_id: Some("s".into()),
        ..HistoryFilter::default()
    };
    assert_eq!(
        ids(fixture.store.history(&history).await.unwrap().items),
        all
    );
    let listed = fixture
        .store
        .list(&of_session("s", Status::Answered, 10))
        .await
        .unwrap();
    assert_eq!(ids(listed), all);
}
