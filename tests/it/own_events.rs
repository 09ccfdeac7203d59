//! Redis: a store hands the events it announces to its own process at once and its reader skips
//! them in the stream (`store/redis/events.rs`); another store's reader decodes them. Each event
//! must reach each process exactly once: a store that also decoded its own would see it twice,
//! one that skipped without delivering would never see it.

use crate::store_conformance::{answer, claim, question};
use crate::support::RedisServer;
use askbridge::store::redis::{DEFAULT_REPLICA_WAIT, RedisOptions, RedisStore};
use askbridge::store::{ClaimOptions, Event, EventKind, Events, Questions, StoreOptions};
use askbridge_core::QuestionId;
use askbridge_core::question::DEFAULT_TIMEOUT;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::broadcast;

async fn store(server: &RedisServer) -> RedisStore {
    RedisStore::connect(RedisOptions {
        url: server.url(),
        cluster: false,
        replica_wait: DEFAULT_REPLICA_WAIT,
        prefix: "askbridge".into(),
        store: StoreOptions::default(),
    })
    .await
    .unwrap()
}

/// Every question event `events` holds up to and including `marker`'s ask, counted by kind and
/// question. The reader sends a whole XREAD reply before reading again, so once the marker is
/// here, whatever came with it or before it is too.
async fn counted_until(
    events: &mut broadcast::Receiver<Event>,
    marker: &QuestionId,
) -> HashMap<(&'static str, QuestionId), usize> {
    let mut counts = HashMap::new();
    let mut count = |event: Event| {
        let question = event
            .question()
            .expect("only question events here")
            .id
            .clone();
        *counts.entry((event.kind().name(), question)).or_insert(0) += 1;
    };
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("the marker arrives")
            .unwrap();
        let is_marker = event.question().is_some_and(|q| q.id == *marker);
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
    // Written by the other store after A's: A's reader decodes it, after skipping its own.
    let marker_of_b = question("s2", &[], DEFAULT_TIMEOUT);
    b.insert(&marker_of_b).await.unwrap();
    let by_a = counted_until(&mut heard_by_a, &marker_of_b.id).await;
    let once =
        |counts: &HashMap<(&'static str, QuestionId), usize>, kind: EventKind, id: &QuestionId| {
            counts.get(&(kind.name(), id.clone())).copied().unwrap_or(0)
        };
    assert_eq!(once(&by_a, EventKind::Asked, &asked.id), 1, "{by_a:?}");
    assert_eq!(once(&by_a, EventKind::Replied, &asked.id), 1, "{by_a:?}");
    assert_eq!(
        once(&by_a, EventKind::Asked, &marker_of_b.id),
        1,
        "{by_a:?}"
    );

    // B heard its own ask at once and A's two through the stream; a marker of A's, written
    // last, closes what B may still hear.
    let marker_of_a = question("s3", &[], DEFAULT_TIMEOUT);
    a.insert(&marker_of_a).await.unwrap();
    let by_b = counted_until(&mut heard_by_b, &marker_of_a.id).await;
    assert_eq!(once(&by_b, EventKind::Asked, &asked.id), 1, "{by_b:?}");
    assert_eq!(once(&by_b, EventKind::Replied, &asked.id), 1, "{by_b:?}");
    assert_eq!(
        once(&by_b, EventKind::Asked, &marker_of_b.id),
        1,
        "{by_b:?}"
    );
    assert_eq!(
        once(&by_b, EventKind::Asked, &marker_of_a.id),
        1,
        "{by_b:?}"
    );
}
