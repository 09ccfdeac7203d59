//! The sessions role (leases `askbridge exec` renews, closed sessions) and the idempotency role
//! (what a create with an `Idempotency-Key` made).

use super::Fixture;
use askbridge::store::{Inserted, ListFilter};
use askbridge_core::Millis;
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

async fn session_leases_lapse_and_closed_sessions_are_known(f: Fixture) {
    let now = Millis::now();
    let store = &f.store;
    store.hold_session("live", now.after(HOUR)).await.unwrap();
    store
        .hold_session("dead", Millis(now.0 - 1_000))
        .await
        .unwrap();
    store
        .hold_session("older", Millis(now.0 - 5_000))
        .await
        .unwrap();
    assert_eq!(
        store.lapsed_sessions(now, 10).await.unwrap(),
        vec!["older".to_owned(), "dead".to_owned()],
        "oldest lapse first"
    );
    assert_eq!(store.lapsed_sessions(now, 1).await.unwrap(), vec!["older"]);
    // A renewal moves the lease on.
    store.hold_session("older", now.after(HOUR)).await.unwrap();
    assert_eq!(store.lapsed_sessions(now, 10).await.unwrap(), vec!["dead"]);
    assert!(!store.session_closed("dead").await.unwrap());
    store.close_session("dead", HOUR).await.unwrap();
    assert!(store.session_closed("dead").await.unwrap());
    assert!(!store.session_closed("live").await.unwrap());
    assert!(
        store.lapsed_sessions(now, 10).await.unwrap().is_empty(),
        "a closed session's lease is gone"
    );
    // A new holder may open it again.
    store.reopen_session("dead").await.unwrap();
    assert!(!store.session_closed("dead").await.unwrap());
    // Closed is remembered for the time asked, then forgotten.
    store
        .close_session("brief", Duration::from_millis(50))
        .await
        .unwrap();
    assert!(store.session_closed("brief").await.unwrap());
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert!(!store.session_closed("brief").await.unwrap());
}

/// A question's insert in a closed session is refused by the store, in the same step (on Redis,
/// by the insert script: the ask costs no command more); listings do not see the mark.
async fn a_closed_session_refuses_new_questions_until_reopened(f: Fixture) {
    let store = &f.store;
    let asked = |n: usize| super::question("shut", &[], Duration::from_secs(60 + n as u64));
    let before = asked(0);
    assert_eq!(store.insert(&before).await.unwrap(), Inserted::Created);
    store.close_session("shut", HOUR).await.unwrap();
    // Every bucket refuses, whatever the id.
    for n in 1..=24 {
        assert_eq!(store.insert(&asked(n)).await.unwrap(), Inserted::Closed);
    }
    let filter = ListFilter {
        session_id: Some("shut".into()),
        limit: 100,
        ..ListFilter::pending()
    };
    let listed = store.list(&filter).await.unwrap();
    assert_eq!(
        listed.len(),
        1,
        "only the question asked before: {listed:?}"
    );
    assert_eq!(listed[0].id, before.id);
    let other = super::question("open", &[], Duration::from_secs(60));
    assert_eq!(store.insert(&other).await.unwrap(), Inserted::Created);
    store.reopen_session("shut").await.unwrap();
    assert_eq!(store.insert(&asked(30)).await.unwrap(), Inserted::Created);
}

async fn an_idempotency_key_keeps_its_first_value(f: Fixture) {
    let store = &f.store;
    assert_eq!(store.remember_key("k", "first", HOUR).await.unwrap(), None);
    assert_eq!(
        store.remember_key("k", "second", HOUR).await.unwrap(),
        Some("first".to_owned())
    );
    store.replace_key("k", "made", HOUR).await.unwrap();
    assert_eq!(
        store.remember_key("k", "third", HOUR).await.unwrap(),
        Some("made".to_owned())
    );
    store.forget_key("k").await.unwrap();
    assert_eq!(store.remember_key("k", "again", HOUR).await.unwrap(), None);
    // Keys are apart, and each lapses after its time.
    assert_eq!(store.remember_key("other", "x", HOUR).await.unwrap(), None);
    let brief = Duration::from_millis(50);
    assert_eq!(store.remember_key("brief", "x", brief).await.unwrap(), None);
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(store.remember_key("brief", "y", HOUR).await.unwrap(), None);
}

async fn of_racing_first_uses_of_a_key_one_wins(f: Fixture) {
    let mut racers = Vec::new();
    for n in 0..8 {
        let store = f.store.clone();
        racers.push(tokio::spawn(async move {
            store
                .remember_key("raced", &format!("v{n}"), HOUR)
                .await
                .unwrap()
        }));
    }
    let mut winners = 0;
    let mut held = Vec::new();
    for racer in racers {
        match racer.await.unwrap() {
            None => winners += 1,
            Some(value) => held.push(value),
        }
    }
    assert_eq!(winners, 1);
    held.dedup();
    assert_eq!(
        held.len(),
        1,
        "every loser sees the winner's value: {held:?}"
    );
}

conformance!(
    session_leases_lapse_and_closed_sessions_are_known,
    a_closed_session_refuses_new_questions_until_reopened,
    an_idempotency_key_keeps_its_first_value,
    of_racing_first_uses_of_a_key_one_wins,
);
