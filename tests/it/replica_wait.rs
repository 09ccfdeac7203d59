//! The replica wait on a Redis Cluster (`WAIT 1` after an ask or a claim) holds only the writes it
//! is for: with one master's replica frozen, that master's first writes wait out the timeout once,
//! while writes to its other slots, to other masters, and its own later writes go through; a
//! master left without any replica is not sent `WAIT`s that cannot succeed; and a write the store
//! had to send again (a failover under way) makes every master check its replicas first.

use crate::redis_cluster::{self, RedisCluster};
use crate::support;
use askbridge::store::StoreOptions;
use askbridge::store::prelude::*;
use askbridge::store::redis::{
    DEFAULT_REPLICA_WAIT, RedisStore, UNREPLICATED_PAUSE, question_key, slot,
};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::{Millis, NewQuestion, Question, QuestionId};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const PREFIX: &str = "replica-wait";

/// A new question whose key is in `slot`.
fn question_in(slot_wanted: u16) -> Question {
    loop {
        let id = QuestionId::random();
        if slot(&question_key(PREFIX, &id)) == slot_wanted {
            return NewQuestion::ask("Go?")
                .session("replica-wait")
                .options(["yes", "no"])
                .into_question(id, Millis::now(), DEFAULT_TIMEOUT)
                .unwrap();
        }
    }
}

/// The slots the store's buckets use, by the port of the master serving each.
fn slots_by_master(cluster: &RedisCluster) -> BTreeMap<u16, Vec<u16>> {
    let mut slots = Vec::new();
    // Random ids fall in all sixteen buckets long before this runs out.
    for _ in 0..10_000 {
        let id = QuestionId::random();
        let slot = slot(&question_key(PREFIX, &id));
        if !slots.contains(&slot) {
            slots.push(slot);
        }
    }
    let mut by_master: BTreeMap<u16, Vec<u16>> = BTreeMap::new();
    for slot in slots {
        by_master
            .entry(cluster.master_of(slot))
            .or_default()
            .push(slot);
    }
    by_master
}

/// A store on `cluster`, and the slots of its buckets by master.
async fn store_on(cluster: &RedisCluster) -> (Arc<RedisStore>, BTreeMap<u16, Vec<u16>>) {
    let store =
        support::redis_cluster_store(&cluster.urls, PREFIX.into(), StoreOptions::default()).await;
    (Arc::new(store), slots_by_master(cluster))
}

/// Inserts `question` and says how long it took.
async fn timed_insert(store: Arc<RedisStore>, question: Question) -> Duration {
    let started = Instant::now();
    store.insert(&question).await.unwrap();
    started.elapsed()
}

/// Writes to each of `slots` until every one is confirmed by its replica at once. With every
/// replica up, a write is confirmed at once (the quickest of three: one write on a loaded machine
/// may take as long as the wait's timeout without waiting for it). A write that did take that
/// long (say a replica of a cluster just started not yet in sync) made its master skip the wait
/// for a pause, which would let the writes a test then makes through without a round: then the
/// warm-up waits the pause out and is made again.
async fn warm_up(store: &Arc<RedisStore>, slots: &[u16]) {
    for _round in 0..3 {
        let mut any_slow = false;
        for &slot in slots {
            let mut quickest = Duration::MAX;
            for _ in 0..3 {
                let took = timed_insert(store.clone(), question_in(slot)).await;
                any_slow |= took >= DEFAULT_REPLICA_WAIT - Duration::from_millis(50);
                quickest = quickest.min(took);
            }
            assert!(quickest < DEFAULT_REPLICA_WAIT, "slot {slot}: {quickest:?}");
        }
        if !any_slow {
            return;
        }
        tokio::time::sleep(UNREPLICATED_PAUSE + Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_frozen_replica_holds_no_write_but_its_masters_first() {
    let cluster = redis_cluster::private();
    let (store, by_master) = store_on(&cluster).await;
    let (&master, slots) = by_master
        .iter()
        .find(|(_, slots)| slots.len() >= 2)
        .expect("a master with two of the sixteen buckets' slots");
    let (own, sibling) = (slots[0], slots[1]);
    let elsewhere = by_master
        .iter()
        .find(|(port, _)| **port != master)
        .map(|(_, slots)| slots[0])
        .unwrap();
    warm_up(&store, &[own, sibling, elsewhere]).await;

    let frozen = cluster.freeze(cluster.replica_of(master));
    let started = Instant::now();
    // Ten writes to one slot at once: each waits for a replica that does not answer. Queued one
    // behind another (as `WAIT 1` calls on one connection were) the last took 10 x 500 ms.
    let first: Vec<_> = (0..10)
        .map(|_| tokio::spawn(timed_insert(store.clone(), question_in(own))))
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Meanwhile, a write to another slot of the same master, and one to another master.
    let sibling_write = tokio::spawn(timed_insert(store.clone(), question_in(sibling)));
    let elsewhere_write = tokio::spawn(timed_insert(store.clone(), question_in(elsewhere)));
    // After the first timeout, a later write to the same slot.
    tokio::time::sleep(DEFAULT_REPLICA_WAIT + Duration::from_millis(300)).await;
    let later = tokio::spawn(timed_insert(store.clone(), question_in(own)));

    // The bounds are loose, for a shared 2-core machine: what they tell apart is one wait of
    // 500 ms (plus scheduling noise) from waits queued behind one another (several seconds).
    let bound = Duration::from_secs(2);
    let mut slowest = Duration::ZERO;
    for write in first {
        slowest = slowest.max(write.await.unwrap());
    }
    let sibling_took = sibling_write.await.unwrap();
    let elsewhere_took = elsewhere_write.await.unwrap();
    let later_took = later.await.unwrap();
    let all_took = started.elapsed();
    drop(frozen);
    eprintln!(
        "frozen replica: first writes {slowest:?} (slowest), same master's other slot \
         {sibling_took:?}, other master {elsewhere_took:?}, same slot later {later_took:?}"
    );
    // The wait is still made: a write is not acknowledged before the replica had its chance.
    assert!(
        slowest >= DEFAULT_REPLICA_WAIT - Duration::from_millis(50),
        "the first writes did not wait for the replica: {slowest:?}"
    );
    assert!(slowest < bound, "the first writes queued: {slowest:?}");
    assert!(
        sibling_took < bound,
        "the master's other slot waited behind the timed-out slot: {sibling_took:?}"
    );
    assert!(
        elsewhere_took < bound,
        "another master's write waited: {elsewhere_took:?}"
    );
    assert!(
        later_took < bound,
        "a write after the first timeout waited behind the queued waits: {later_took:?}"
    );
    assert!(all_took < Duration::from_secs(4), "{all_took:?}");
}

/// `calls` of `command` in the `INFO commandstats` of the node at `port`.
async fn calls(port: u16, command: &str) -> u64 {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut connection)
        .await
        .unwrap();
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_left_without_a_replica_is_not_waited_on_again() {
    let cluster = redis_cluster::private();
    let (store, by_master) = store_on(&cluster).await;
    let (&master, slots) = by_master.iter().next().unwrap();
    let slot = slots[0];
    cluster.crash(cluster.replica_of(master));
    // The first write finds out: its round's WAIT times out, and the master is paused.
    let waits = calls(master, "wait").await;
    timed_insert(store.clone(), question_in(slot)).await;
    assert_eq!(
        calls(master, "wait").await,
        waits + 1,
        "one round, one WAIT"
    );
    // After the pause, the master still has no replica: the next round asks its ROLE, and
    // sends no WAIT that cannot succeed.
    tokio::time::sleep(UNREPLICATED_PAUSE + Duration::from_millis(300)).await;
    let roles = calls(master, "role").await;
    let took = timed_insert(store.clone(), question_in(slot)).await;
    eprintln!("a master without a replica, after the pause: {took:?}");
    assert_eq!(calls(master, "wait").await, waits + 1, "no WAIT was sent");
    assert_eq!(calls(master, "role").await, roles + 1, "its ROLE was asked");
    // Writes to the other masters are still waited for.
    let (&other, other_slots) = by_master.iter().nth(1).unwrap();
    let waits = calls(other, "wait").await;
    timed_insert(store.clone(), question_in(other_slots[0])).await;
    assert_eq!(calls(other, "wait").await, waits + 1);
}

/// A write the store had to send again (here: its master crashed, and the write failed until
/// the replica was promoted) makes every master's next round ask `ROLE` first, also the rounds
/// of masters whose own rounds never failed: the failover under way may have left one without a
/// replica, and a `WAIT` there would cost its first writers the whole timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_sent_again_makes_every_master_check_its_replicas() {
    let cluster = redis_cluster::private();
    let (store, by_master) = store_on(&cluster).await;
    let mut masters = by_master.iter();
    let (&crashed, crashed_slots) = masters.next().unwrap();
    let (&other, other_slots) = masters.next().unwrap();
    // Every master's round is warm: writes to each, confirmed by its replica at once (a master
    // whose replica was not yet in sync would be paused, and its next write sent no round).
    let firsts: Vec<u16> = by_master.values().map(|slots| slots[0]).collect();
    warm_up(&store, &firsts).await;
    cluster.crash(crashed);
    // A write to the crashed master's slot is sent again by the store until the promotion (and
    // made again here, as a client would, if the store's retries run out first).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if store.insert(&question_in(crashed_slots[0])).await.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "no failover in 30 s");
    }
    // The other master's rounds never failed, yet its next one asks its ROLE first.
    let (roles, waits) = (calls(other, "role").await, calls(other, "wait").await);
    timed_insert(store.clone(), question_in(other_slots[0])).await;
    assert_eq!(
        calls(other, "role").await,
        roles + 1,
        "the write sent again did not make the other master check its replicas"
    );
    // It has one online: its write is still waited for.
    assert_eq!(calls(other, "wait").await, waits + 1);
}
