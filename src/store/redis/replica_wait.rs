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
//!   is a tiny write to the slot's marker key and then `WAIT 1 <timeout>`. Replication offsets
//!   are per master and only grow: a replica that has the marker has every write the master
//!   acknowledged before the marker was sent, in any slot.
//! - One round covers every write completed before it was sent: writers arriving while a slot's
//!   round is out share the next one. A slot has at most one round out and one gathering, so
//!   under load the waits cost a few rounds per master, not one per write.
//! - A round that times out means that master has no replica keeping up: every slot that master
//!   serves (its own `CLUSTER NODES` says which) skips the wait for [`UNREPLICATED_PAUSE`], and
//!   writers waiting on those slots are released at once instead of after their own rounds.

use super::keys::{self, BUCKETS, Keys};
use askbridge_core::error::Chain;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How long writes to a master whose replica did not confirm in time skip the wait: long enough
/// that a master left without a replica (after a failover) costs one timed-out wait per pause,
/// not one per write; short enough to notice soon when a replica is back.
pub const UNREPLICATED_PAUSE: Duration = Duration::from_secs(10);

/// Waits for a replica after writes; cheap to clone (one per store).
#[derive(Clone)]
pub(super) struct ReplicaWait {
    inner: Arc<Inner>,
}

struct Inner {
    /// Reserved for rounds (see the module documentation).
    rounds: ClusterConnection,
    /// The store's shared connection, to ask a timed-out master which slots it serves.
    shared: ClusterConnection,
    timeout: Duration,
    /// Every bucket's slot. Fixed at start: the store writes nowhere else.
    slots: Mutex<HashMap<u16, Slot>>,
}

/// One slot's rounds.
struct Slot {
    /// The key each round writes (in this slot, so the round goes to the write's master).
    marker: String,
    /// Rounds sent so far; a round is known by its number in this count.
    sent: u64,
    /// The round the latest writer needs (`sent + 1` while one gathers writers).
    wanted: u64,
    /// Whether a task is sending this slot's rounds.
    driving: bool,
    /// What writers waiting on this slot watch.
    news: watch::Sender<News>,
}

#[derive(Clone, Copy, Default)]
struct News {
    /// The last round that came back.
    done: u64,
    /// Writes skip the wait until then.
    skip_until: Option<Instant>,
}

impl News {
    fn skipping(&self, now: Instant) -> bool {
        self.skip_until.is_some_and(|until| until > now)
    }
}

impl ReplicaWait {
    /// `rounds` must be a connection nothing else uses; `shared` is the store's.
    pub(super) fn new(
        rounds: ClusterConnection,
        shared: ClusterConnection,
        timeout: Duration,
        keys: &Keys,
    ) -> Self {
        let slots = (0..BUCKETS)
            .map(|bucket| {
                let marker = keys.replica_mark(bucket);
                let slot = Slot {
                    marker: marker.clone(),
                    sent: 0,
                    wanted: 0,
                    driving: false,
                    news: watch::channel(News::default()).0,
                };
                (keys::slot(&marker), slot)
            })
            .collect();
        ReplicaWait {
            inner: Arc::new(Inner {
                rounds,
                shared,
                timeout,
                slots: Mutex::new(slots),
            }),
        }
    }

    /// Returns once a replica has the write just made to `key`, its slot's master was found
    /// without a replica keeping up (see the module documentation), or a round failed (logged).
    pub(super) async fn wait(&self, key: &str) {
        let slot = keys::slot(key);
        let (needed, mut news) = {
            let mut slots = self.inner.lock();
            let Some(state) = slots.get_mut(&slot) else {
                tracing::debug!(key, slot, "no replica wait: not a bucket's slot");
                return;
            };
            if state.news.borrow().skipping(Instant::now()) {
                return;
            }
            // A round not sent yet covers this write: join it, or ask for one.
            state.wanted = state.sent + 1;
            if !state.driving {
                state.driving = true;
                tokio::spawn(self.clone().drive(slot));
            }
            (state.wanted, state.news.subscribe())
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

    /// Sends `slot`'s rounds one after another while writers want one.
    async fn drive(self, slot: u16) {
        loop {
            let (round, marker) = {
                let mut slots = self.inner.lock();
                let Some(state) = slots.get_mut(&slot) else {
                    return;
                };
                if state.wanted <= state.sent || state.news.borrow().skipping(Instant::now()) {
                    state.driving = false;
                    return;
                }
                state.sent = state.wanted;
                (state.sent, state.marker.clone())
            };
            match self.round(slot, &marker).await {
                Ok(0) => self.unreplicated(slot).await,
                Ok(_) => {}
                Err(error) => tracing::warn!(
                    slot,
                    error = %Chain(&error),
                    "cannot wait for a replica; writes to this slot are acknowledged unconfirmed"
                ),
            }
            if let Some(state) = self.inner.lock().get(&slot) {
                state.news.send_modify(|n| n.done = n.done.max(round));
            }
        }
    }

    /// One round: the marker write, then `WAIT 1`; how many replicas confirmed. Both replies
    /// are read: a marker refused where the round landed (MOVED after a failover, while this
    /// connection's map of the slots is stale) must be redirected and sent again by the client,
    /// not skipped, or that node's `WAIT` — counting writes of this connection, which made none
    /// there — would confirm at once.
    async fn round(&self, slot: u16, marker: &str) -> redis::RedisResult<i64> {
        let mut pipe = redis::pipe();
        pipe.cmd("SET").arg(marker).arg(1);
        pipe.cmd("WAIT")
            .arg(1)
            .arg(self.inner.timeout.as_millis() as u64);
        let route = SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master));
        let replies = self
            .inner
            .rounds
            .clone()
            .route_pipeline(pipe, 0, 2, route)
            .await?;
        let mut replies = replies.into_iter();
        let (Some(set), Some(wait)) = (replies.next(), replies.next()) else {
            return Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "a replica wait got fewer replies than it sent commands",
            )));
        };
        set.extract_error()?;
        redis::FromRedisValue::from_redis_value(wait).map_err(Into::into)
    }

    /// `slot`'s master confirmed nothing in time: every slot it serves skips the wait for
    /// [`UNREPLICATED_PAUSE`], releasing their waiting writers.
    async fn unreplicated(&self, slot: u16) {
        // Rounds of several of this master's slots were out together: the first to come back
        // told already.
        let known = self
            .inner
            .lock()
            .get(&slot)
            .is_some_and(|state| state.news.borrow().skipping(Instant::now()));
        if known {
            return;
        }
        let (master, ranges) = match self.master_slots(slot).await {
            Ok(found) => found,
            Err(error) => {
                tracing::debug!(slot, error = %Chain(&error), "cannot list the master's slots");
                (String::from("?"), vec![slot..=slot])
            }
        };
        let until = Instant::now() + UNREPLICATED_PAUSE;
        let mut marked = Vec::new();
        for (other, state) in self.inner.lock().iter() {
            if *other == slot || ranges.iter().any(|range| range.contains(other)) {
                state.news.send_modify(|n| n.skip_until = Some(until));
                marked.push(*other);
            }
        }
        marked.sort_unstable();
        tracing::warn!(
            slot,
            master = %master,
            slots = ?marked,
            "no replica confirmed a write within {} ms: a failover now could lose it; not waiting on this master's slots for {} s",
            self.inner.timeout.as_millis(),
            UNREPLICATED_PAUSE.as_secs()
        );
    }

    /// The address of `slot`'s master and the slots it serves, from its own `CLUSTER NODES`.
    async fn master_slots(
        &self,
        slot: u16,
    ) -> redis::RedisResult<(String, Vec<RangeInclusive<u16>>)> {
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("NODES");
        let route = Route::new(slot, SlotAddr::Master);
        let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
        let reply = self
            .inner
            .shared
            .clone()
            .route_command(cmd, routing)
            .await?;
        let nodes: String = redis::FromRedisValue::from_redis_value(reply)?;
        Ok(own_slots(&nodes))
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, HashMap<u16, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The `myself` line of `CLUSTER NODES` (`<id> <ip:port@bus> <flags> <master> <ping> <pong>
/// <epoch> <link> <slot ranges>...`): its address and slot ranges (migrating ones, in brackets,
/// left out).
fn own_slots(nodes: &str) -> (String, Vec<RangeInclusive<u16>>) {
    let Some(line) = nodes.lines().find(|line| {
        line.split_whitespace()
            .nth(2)
            .is_some_and(|f| f.split(',').any(|f| f == "myself"))
    }) else {
        return (String::from("?"), Vec::new());
    };
    let fields: Vec<&str> = line.split_whitespace().collect();
    let address = fields[1].split('@').next().unwrap_or_default().to_owned();
    let ranges = fields
        .iter()
        .skip(8)
        .filter_map(|range| {
            let (low, high) = range.split_once('-').unwrap_or((range, range));
            Some(low.parse().ok()?..=high.parse().ok()?)
        })
        .collect();
    (address, ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_masters_own_slots_are_read_from_its_line() {
        let nodes = "\
            a1 127.0.0.1:7001@17001 master - 0 0 1 connected 0-5460\n\
            b2 127.0.0.1:7002@17002 myself,master - 0 0 2 connected 5461-10922 16000 [93->-a1]\n\
            c3 127.0.0.1:7003@17003 slave b2 0 0 2 connected\n";
        let (address, ranges) = own_slots(nodes);
        assert_eq!(address, "127.0.0.1:7002");
        assert_eq!(ranges, vec![5461..=10922, 16000..=16000]);
        assert_eq!(own_slots("").1, Vec::<RangeInclusive<u16>>::new());
    }
}
