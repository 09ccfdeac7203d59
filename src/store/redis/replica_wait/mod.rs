//! Waiting for a replica (`WAIT 1`) on a Redis Cluster without holding any other write.
//!
//! Redis Cluster replicates asynchronously: an ask or a claim acknowledged by a master that dies
//! before its replica had it is lost in the failover. So after those writes the store waits, at
//! most `replica_wait`, until a replica has them. `WAIT` blocks the connection it is sent on until
//! it returns; sent on the multiplexed connection every command shares, each one held every
//! command to that node, and with a replica not answering the waits queued one behind another,
//! 500 ms each, long after the slot was meant to stop waiting (issue 37: asks took 3-10 s after a
//! failover, and WAIT halved the cluster's throughput). Hence:
//!
//! - Rounds of waiting go over a cluster connection of their own: no write queues behind them.
//! - `WAIT` counts the writes made on its own connection, and this one makes no others, so a round
//!   is a tiny write to the marker key of each slot it covers, then `WAIT 1 <timeout>`, all in one
//!   pipeline to one node. Replication offsets are per master and only grow: a replica that has
//!   the markers has every write the master acknowledged before them, in any slot.
//! - Rounds are per master, not per slot: the buckets' slots are grouped by the master serving
//!   them (its `CLUSTER NODES`, read at start and again when a round fails or times out). Rounds
//!   of one master's slots sent apart queued on that node's connection, `WAIT` after `WAIT`.
//!   Every marker in a round must be written where the `WAIT` runs: a slot that moved answers
//!   MOVED, the round fails (its writers go on unconfirmed, logged) and the groups are read again.
//! - One round covers every write completed before it was sent: writers arriving while a master's
//!   round is out share the next one. A master has at most one round out and one gathering, so
//!   under load the waits cost a few rounds per master, not one per write.
//! - A round that times out means that master has no replica keeping up: its slots skip the wait
//!   for [`UNREPLICATED_PAUSE`], and writers waiting on them are released at once instead of
//!   after their own rounds.
//! - After a round that timed out or failed, or a write the store had to send again (a failover
//!   under way), the next round first asks the master's `ROLE`: a master with no replica online (the one just promoted, whose old master
//!   died) is paused at once instead of costing its first writers a `WAIT` that cannot succeed.

use super::cluster_nodes;
use super::keys::{self, BUCKETS, Keys};
use askbridge_core::error::Chain;
use group::{Group, lock};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, SingleNodeRoutingInfo, SlotAddr};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod group;

/// How long writes to a master whose replica did not confirm in time skip the wait: long enough
/// that a master left without a replica (after a failover) costs one timed-out wait per pause,
/// not one per write; short enough to notice soon when a replica is back.
pub const UNREPLICATED_PAUSE: Duration = Duration::from_secs(10);

/// The least time between two readings of the groups after failed rounds: a failover fails
/// every round for seconds, and one reading a second is enough to follow it.
const REGROUP_EVERY: Duration = Duration::from_secs(1);

/// Waits for a replica after writes; cheap to clone (one per store).
#[derive(Clone)]
pub(super) struct ReplicaWait {
    inner: Arc<Inner>,
}

struct Inner {
    /// Reserved for rounds (see the module documentation).
    rounds: ClusterConnection,
    /// The store's shared connection, to read which master serves which slot.
    shared: ClusterConnection,
    timeout: Duration,
    /// Every bucket's slot and the key its rounds write there. Fixed: the store writes nowhere
    /// else.
    markers: HashMap<u16, String>,
    /// Each bucket slot's group, replaced whole when the groups are read again (rounds already
    /// out finish on the groups they began in).
    groups: Mutex<HashMap<u16, Arc<Group>>>,
    /// Whether a reading of the groups is under way, and when the last one began.
    regrouping: AtomicBool,
    regrouped: Mutex<Option<Instant>>,
}

impl ReplicaWait {
    /// `rounds` must be a connection nothing else uses; `shared` is the store's. Reads the
    /// groups once (a slot per group if that fails: correct, only slower).
    pub(super) async fn new(
        rounds: ClusterConnection,
        shared: ClusterConnection,
        timeout: Duration,
        keys: &Keys,
    ) -> Self {
        let markers: HashMap<u16, String> = (0..BUCKETS)
            .map(|bucket| {
                let marker = keys.replica_mark(bucket);
                (keys::slot(&marker), marker)
            })
            .collect();
        let groups = markers
            .keys()
            .map(|slot| (*slot, Group::new(None, false)))
            .collect();
        let waits = ReplicaWait {
            inner: Arc::new(Inner {
                rounds,
                shared,
                timeout,
                markers,
                groups: Mutex::new(groups),
                regrouping: AtomicBool::new(false),
                regrouped: Mutex::new(None),
            }),
        };
        waits.regroup().await;
        waits
    }

    /// Returns once a replica has the write just made to `key`, its slot's master was found
    /// without a replica keeping up (see the module documentation), or a round failed (logged).
    pub(super) async fn wait(&self, key: &str) {
        let slot = keys::slot(key);
        let Some(group) = lock(&self.inner.groups).get(&slot).cloned() else {
            tracing::debug!(key, slot, "no replica wait: not a bucket's slot");
            return;
        };
        let (needed, mut news) = {
            let mut rounds = lock(&group.rounds);
            if group.news.borrow().skipping(Instant::now()) {
                return;
            }
            // The round not sent yet covers this write: join it, or ask for one.
            rounds.gathering.insert(slot);
            if !rounds.driving {
                rounds.driving = true;
                tokio::spawn(self.clone().drive(group.clone()));
            }
            (rounds.sent + 1, group.news.subscribe())
        };
        let answered = news.wait_for(|n| n.done >= needed || n.skipping(Instant::now()));
        // A round waits at most `timeout` in Redis, and one timing out releases the others of
        // its master: past twice that, something else is wrong and the write goes on unconfirmed.
        if tokio::time::timeout(self.inner.timeout * 2, answered)
            .await
            .is_err()
        {
            tracing::warn!(
                key,
                slot,
                "the replica wait did not come back in time; the write is acknowledged unconfirmed"
            );
        }
    }

    /// Makes every group's next round ask its master's `ROLE` first: a write failed and was sent
    /// again, perhaps because a master died (its slots' next master may have no replica).
    pub(super) fn suspect_all(&self) {
        for group in lock(&self.inner.groups).values() {
            lock(&group.rounds).suspect();
        }
    }

    /// Sends `group`'s rounds one after another while writers want one.
    async fn drive(self, group: Arc<Group>) {
        loop {
            let (round, suspicions, slots, suspect) = {
                let mut rounds = lock(&group.rounds);
                if rounds.gathering.is_empty() || group.news.borrow().skipping(Instant::now()) {
                    rounds.driving = false;
                    return;
                }
                let (round, suspicions) = rounds.start();
                let slots: Vec<u16> = std::mem::take(&mut rounds.gathering).into_iter().collect();
                (round, suspicions, slots, rounds.suspect)
            };
            let outcome = if suspect {
                self.checked_round(&slots).await
            } else {
                self.round(&slots).await
            };
            lock(&group.rounds).ended(matches!(outcome, Ok(1..)), suspicions);
            match outcome {
                Ok(0) => self.unreplicated(&group, &slots).await,
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(
                        slots = ?slots,
                        error = %Chain(&error),
                        "cannot wait for a replica; these writes are acknowledged unconfirmed"
                    );
                    self.regroup_soon();
                }
            }
            group.news.send_modify(|n| n.done = n.done.max(round));
        }
    }

    /// A round after one that failed or timed out: none (as if it timed out) when the master
    /// has no replica online. `ROLE` follows the markers in one pipeline: written, they prove
    /// the reply is the serving master's. Sent alone, a `ROLE` for a master the client had no
    /// connection to (the one that just died) went to another node of its shard or any node,
    /// whose replicas made the promoted master look replicated: its first round then waited
    /// out its whole timeout.
    async fn checked_round(&self, slots: &[u16]) -> redis::RedisResult<i64> {
        let role = self.marked(slots, redis::cmd("ROLE")).await?;
        // A master's `ROLE` is `master`, its offset, and its replicas online.
        let online = match &role {
            redis::Value::Array(fields) => match (fields.first(), fields.get(2)) {
                (Some(redis::Value::BulkString(name)), Some(redis::Value::Array(replicas)))
                    if name == b"master" =>
                {
                    Some(replicas.len())
                }
                _ => None,
            },
            _ => None,
        };
        match online {
            Some(0) => Ok(0),
            Some(_) => self.round(slots).await,
            None => Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "the node serving the slot is not a master (yet)",
            ))),
        }
    }

    /// One round: `WAIT 1` after the markers; how many replicas confirmed.
    async fn round(&self, slots: &[u16]) -> redis::RedisResult<i64> {
        let mut wait = redis::cmd("WAIT");
        wait.arg(1).arg(self.inner.timeout.as_millis() as u64);
        let replies = self.marked(slots, wait).await?;
        redis::FromRedisValue::from_redis_value(replies).map_err(Into::into)
    }

    /// Each slot's marker write, then `last`, all in one pipeline on the node serving
    /// `slots[0]`; `last`'s reply. Every reply is read: a marker refused where the pipeline
    /// landed (MOVED after a failover, while this connection's map of the slots is stale, or a
    /// slot that moved to another master) must be redirected and sent again by the client or
    /// fail the round, not be skipped, or that node's `WAIT` — counting writes of this
    /// connection, which made none there — would confirm at once.
    async fn marked(&self, slots: &[u16], last: redis::Cmd) -> redis::RedisResult<redis::Value> {
        let mut pipe = redis::pipe();
        for slot in slots {
            let marker = self.inner.markers.get(slot).map_or("", String::as_str);
            pipe.cmd("SET").arg(marker).arg(1);
        }
        pipe.add_command(last);
        let first = slots.first().copied().unwrap_or_default();
        let route = SingleNodeRoutingInfo::SpecificNode(Route::new(first, SlotAddr::Master));
        let count = slots.len() + 1;
        let replies = self
            .inner
            .rounds
            .clone()
            .route_pipeline(pipe, 0, count, route)
            .await?;
        if replies.len() != count {
            return Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "a replica wait got another number of replies than it sent commands",
            )));
        }
        let mut replies = replies.into_iter();
        let last = replies.next_back().unwrap_or(redis::Value::Nil);
        for set in replies {
            set.extract_error()?;
        }
        Ok(last)
    }

    /// `group`'s master confirmed nothing in time: its slots skip the wait for
    /// [`UNREPLICATED_PAUSE`], releasing their waiting writers; then the groups are read again
    /// (a failover may be why), keeping the pause.
    async fn unreplicated(&self, group: &Group, slots: &[u16]) {
        let until = Instant::now() + UNREPLICATED_PAUSE;
        group.news.send_modify(|n| n.skip_until = Some(until));
        let masters = self.regroup().await;
        let first = slots.first().copied().unwrap_or_default();
        let master = masters.get(&first).map_or("?", String::as_str).to_owned();
        let mut skipped: Vec<u16> = masters
            .iter()
            .filter(|(_, address)| **address == master)
            .map(|(slot, _)| *slot)
            .collect();
        skipped.sort_unstable();
        tracing::warn!(
            master = %master,
            slots = ?skipped,
            "no replica online or none confirmed a write within {} ms: a failover now could lose it; not waiting on this master's slots for {} s",
            self.inner.timeout.as_millis(),
            UNREPLICATED_PAUSE.as_secs()
        );
    }

    /// Reads the groups again in the background, unless that happened in the last
    /// [`REGROUP_EVERY`] or is under way.
    fn regroup_soon(&self) {
        let recent = lock(&self.inner.regrouped).is_some_and(|at| at.elapsed() < REGROUP_EVERY);
        if !recent && !self.inner.regrouping.load(Ordering::Relaxed) {
            let waits = self.clone();
            tokio::spawn(async move { waits.regroup().await });
        }
    }

    /// Reads which master serves each bucket's slot and groups the slots by it (a slot no master
    /// is seen serving gets a group of its own). A group keeps the longest pause of its slots'
    /// former groups. Returns each slot's master's address (empty when the reading failed).
    async fn regroup(&self) -> HashMap<u16, String> {
        if self.inner.regrouping.swap(true, Ordering::AcqRel) {
            return HashMap::new();
        }
        *lock(&self.inner.regrouped) = Some(Instant::now());
        let read = self.masters_by_slot().await;
        self.inner.regrouping.store(false, Ordering::Release);
        let masters = match read {
            Ok(masters) => masters,
            Err(error) => {
                tracing::debug!(error = %Chain(&error), "cannot read which master serves which slot");
                return HashMap::new();
            }
        };
        let mut groups = lock(&self.inner.groups);
        let mut by_master: HashMap<&str, Vec<u16>> = HashMap::new();
        for slot in self.inner.markers.keys() {
            let master = masters.get(slot).map_or("", String::as_str);
            by_master.entry(master).or_default().push(*slot);
        }
        let mut regrouped = HashMap::new();
        for (master, slots) in by_master {
            let alone = master.is_empty();
            for members in slots.chunks(if alone { 1 } else { slots.len() }) {
                let former = || members.iter().filter_map(|slot| groups.get(slot));
                let skip_until = former().filter_map(|g| g.news.borrow().skip_until).max();
                let suspect = skip_until.is_some() || former().any(|g| lock(&g.rounds).suspect);
                let group = Group::new(skip_until, suspect);
                for slot in members {
                    regrouped.insert(*slot, group.clone());
                }
            }
        }
        *groups = regrouped;
        masters
    }

    /// Each bucket slot's master's address, from `CLUSTER NODES`.
    async fn masters_by_slot(&self) -> redis::RedisResult<HashMap<u16, String>> {
        let nodes: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query_async(&mut self.inner.shared.clone())
            .await?;
        let nodes = cluster_nodes::parse(&nodes);
        Ok(self
            .inner
            .markers
            .keys()
            .filter_map(|slot| {
                let master = nodes.iter().find(|node| node.serves(*slot))?;
                Some((*slot, master.address.clone()))
            })
            .collect())
    }
}
