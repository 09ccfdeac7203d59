//! The Redis store: production, shared by any number of askbridge processes.
//!
//! - `keys.rs`: the key layout (below);
//! - `scripts.rs` and `lua/*.lua`: the Lua scripts, one file each;
//! - `retry.rs`: the one place that sends commands, retrying connection errors;
//! - `replica_wait/`: on a cluster, waiting for a replica after an ask or a claim without
//!   holding other writes; `cluster_nodes.rs` reads `CLUSTER NODES` for it and for the store's
//!   shape;
//! - `codec.rs`: how questions and runs are spread over hash fields (`compact.rs`: a question's
//!   JSON without its empty fields);
//! - `args.rs` and `lua/lib/args.lua`: the scripts' named arguments, one struct per script;
//! - a file per role, named as in the other stores: `questions.rs` (with `claim.rs`, a claim's
//!   arguments and reply), `outbox.rs` (deliveries, the outbox, dedupe), `votes.rs` (votes,
//!   drafts) with `decisions.rs` (a batch's decisions), `runs.rs`, `rules.rs`, `audit.rs`, `leases.rs`, `listings.rs` and `pages.rs` (the
//!   ops page's paged listings), `events.rs` (the event stream every process reads).
//!
//! # Keys
//!
//! In sixteen buckets, each a hash tag of its own, so that every script touches one Redis Cluster
//! slot: the table is in `keys.rs`. Each bucket's event stream is replicated but kept out of the
//! AOF (`lua/lib/announce.lua`): events announce what their script wrote into the records, and a
//! process whose reader may have missed some re-reads its waiters' records ([`Events::missed`]).
//! Every event carries the tag of the store that wrote it, which hands it to its own process at
//! once; its reader skips it (`events.rs`).
//!
//! An ask is one script (the question, its indexes and its event); a claim is one script (the
//! resolution, its event, its audit record, its outbox entry). Readers check every question they
//! load against their filter, so a stale index entry never shows up in a result.
//!
//! # Failures
//!
//! After a Redis restart, the connection manager's next command fails once and then reconnects;
//! every operation retries connection errors a few times with backoff. Scripts are sent by SHA and
//! re-loaded on NOSCRIPT (Redis forgets them on restart). A retried claim or insert may find its
//! own earlier attempt already applied; that is recognised and reported as success.

mod args;
mod audit;
mod claim;
mod cluster_nodes;
mod codec;
mod compact;
mod connection;
mod decisions;
mod events;
mod kept;
mod keys;
mod leases;
mod listings;
mod outbox;
mod pages;
mod questions;
mod replica_wait;
mod retry;
mod rules;
mod runs;
mod scripts;
mod session_index;
mod votes;

use super::{Admin, EVENT_BUFFER, Error, Event, Events, FINAL, Result, StoreOptions};
use askbridge_core::Millis;
use async_trait::async_trait;
use connection::Connection;
use keys::{BUCKETS, Keys};
use redis::aio::ConnectionManagerConfig;
use replica_wait::ReplicaWait;
pub use replica_wait::UNREPLICATED_PAUSE;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, watch};

pub use keys::{BUCKETS as KEY_BUCKETS, DEFAULT_PREFIX, slot};

/// The key of question `id`'s hash under `prefix`, for tools and tests that look at Redis
/// directly.
pub fn question_key(prefix: &str, id: &askbridge_core::QuestionId) -> String {
    Keys::new(prefix).question(id.as_str())
}

/// Connection settings.
#[derive(Clone, Debug)]
pub struct RedisOptions {
    /// `redis://[user:password@]host:port/db`; for a Redis Cluster, several seed nodes separated
    /// by commas (`redis://10.0.0.1:6379,redis://10.0.0.2:6379`), or one with `cluster` set.
    pub url: String,
    /// Speak the cluster protocol even with one seed URL.
    pub cluster: bool,
    /// On a cluster, how long a claim or an ask waits for a replica to have it (`WAIT 1`);
    /// zero turns the wait off. [`DEFAULT_REPLICA_WAIT`] unless configured.
    pub replica_wait: Duration,
    /// How long the event reader lets events gather after a read that found some (see
    /// `events.rs`). [`DEFAULT_EVENTS_GATHER`] unless configured.
    pub events_gather: Duration,
    /// Prefix of every key; lets several deployments (or tests) share one Redis.
    pub prefix: String,
    /// Shared store settings.
    pub store: StoreOptions,
}

/// See the module documentation.
#[derive(Clone)]
pub struct RedisStore {
    connection: Connection,
    keys: Keys,
    described: String,
    events: broadcast::Sender<Event>,
    /// Counts the event reader's comebacks (see [`Events::missed`]).
    missed: Arc<watch::Sender<u64>>,
    /// The tag of the events this store announces and delivers itself (see `events.rs`).
    origin: Arc<str>,
    options: StoreOptions,
    /// The event reader stops when the last clone of the store is dropped.
    _alive: Arc<()>,
    /// On a cluster with [`RedisOptions::replica_wait`] set, the waits for a replica.
    waits: Option<ReplicaWait>,
    /// How long each operation's round trips take (see `retry.rs`).
    round_trips: super::RoundTrips,
    /// Wakes operations pausing between attempts when Redis is back (see `retry.rs`).
    recovery: retry::Recovery,
    /// The scripts with this store's settings written in (`scripts.rs`).
    scripts: Arc<scripts::Scripts>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("at", &self.described)
            .finish()
    }
}

/// `redis://user:secret@host` without the secret, for logs.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://***@{}", &url[..scheme_end], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

impl RedisStore {
    /// Connects, checks the server answers, and starts the event reader.
    pub async fn connect(options: RedisOptions) -> Result<Self> {
        let seeds: Vec<&str> = options
            .url
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        let cluster = options.cluster || seeds.len() > 1;
        let shown: Vec<String> = seeds.iter().map(|u| redact_url(u)).collect();
        let described = if cluster {
            format!("redis cluster ({})", shown.join(", "))
        } else {
            format!("redis ({})", shown.join(", "))
        };
        let unreachable = |e| Error::unavailable(format!("cannot connect to {described}"), e);
        let alive = Arc::new(());
        let keys = Keys::new(&options.prefix);
        let (connection, reader, waits) = if cluster {
            let client = cluster_client(&seeds).map_err(unreachable)?;
            let connection = client.get_async_connection().await.map_err(unreachable)?;
            let waits = if options.replica_wait.is_zero() {
                None
            } else {
                let rounds = client.get_async_connection().await.map_err(unreachable)?;
                let shared = connection.clone();
                Some(ReplicaWait::new(rounds, shared, options.replica_wait, &keys).await)
            };
            (
                Connection::Cluster(connection),
                EventSource::Cluster(Box::new(client)),
                waits,
            )
        } else {
            let client = redis::Client::open(seeds.first().copied().unwrap_or_default())
                .map_err(unreachable)?;
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(Duration::from_secs(5)))
                .set_response_timeout(Some(Duration::from_secs(5)))
                .set_number_of_retries(3)
                .set_max_delay(Duration::from_millis(500));
            let connection = client
                .get_connection_manager_with_config(config)
                .await
                .map_err(unreachable)?;
            (
                Connection::Single(connection),
                EventSource::Single(client),
                None,
            )
        };
        let scripts = Arc::new(scripts::Scripts::new(options.store.retention));
        let store = RedisStore {
            connection,
            keys,
            described: described.clone(),
            events: broadcast::channel(EVENT_BUFFER).0,
            missed: Arc::new(watch::channel(0).0),
            origin: format!("s-{}", askbridge_core::QuestionId::random()).into(),
            options: options.store,
            _alive: Arc::clone(&alive),
            waits,
            round_trips: super::RoundTrips::default(),
            recovery: retry::Recovery::default(),
            scripts,
        };
        store.ping().await?;
        store.file_unfiled_rules().await?;
        store.index_older_sessions().await?;
        store
            .start_event_reader(reader, options.events_gather, Arc::downgrade(&alive))
            .await?;
        Ok(store)
    }

    fn connection(&self) -> Connection {
        self.connection.clone()
    }

    /// On a cluster, returns once a replica has the write just made to `key` (waiting at most
    /// [`RedisOptions::replica_wait`], and not at all on a master known to have no replica
    /// keeping up: see `replica_wait/`). At once on one node.
    pub(super) async fn replicated(&self, key: &str) {
        if let Some(waits) = &self.waits {
            waits.wait(key).await;
        }
    }
}

/// A cluster client for `seeds`.
fn cluster_client(seeds: &[&str]) -> redis::RedisResult<redis::cluster::ClusterClient> {
    redis::cluster::ClusterClient::builder(seeds.iter().copied())
        .connection_timeout(Duration::from_secs(5))
        .response_timeout(Duration::from_secs(5))
        .retries(3)
        // The client's own pauses between retries (of CLUSTERDOWN while a failover is under way,
        // TRYAGAIN, a node reconnecting) were at least 1.28 s each by default, so a write asleep
        // when the replica was promoted answered a second or more later. Now 20-50 ms each, at
        // most 150 ms for the three: `retry.rs` retries on top of these for as long as the
        // cluster is not ready, and wakes its pausing operations when one gets through, which
        // it cannot do for a pause inside the client.
        .min_retry_wait(20)
        .max_retry_wait(50)
        .retry_wait_formula(25, 2)
        .build()
}

/// The cluster's shape from `CLUSTER INFO` (its state) and `CLUSTER NODES`.
fn cluster_topology(info: &str, nodes: &str) -> super::Topology {
    let ok = info.lines().any(|line| line.trim() == "cluster_state:ok");
    let nodes = cluster_nodes::parse(nodes);
    super::Topology {
        kind: "redis-cluster",
        nodes: nodes.len(),
        masters: nodes
            .iter()
            .filter(|n| n.master && !n.failing && !n.slots.is_empty())
            .count(),
        failing: nodes.iter().filter(|n| n.failing).count(),
        ok,
    }
}

/// How long a claim or an ask waits for a replica on a cluster, by default.
pub const DEFAULT_REPLICA_WAIT: Duration = Duration::from_millis(500);

/// How long the event reader lets events gather after a read that found some, by default (see
/// `events.rs`).
pub const DEFAULT_EVENTS_GATHER: Duration = Duration::from_millis(1);

/// What the event reader connects with.
pub(super) enum EventSource {
    /// One node.
    Single(redis::Client),
    /// A cluster.
    Cluster(Box<redis::cluster::ClusterClient>),
}

impl Events for RedisStore {
    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    fn missed(&self) -> Option<watch::Receiver<u64>> {
        Some(self.missed.subscribe())
    }
}

#[async_trait]
impl Admin for RedisStore {
    fn describe(&self) -> String {
        self.described.clone()
    }

    fn is_durable(&self) -> bool {
        true
    }

    async fn ping(&self) -> Result<()> {
        self.query::<String>("ping", &redis::cmd("PING"))
            .await
            .map(drop)
    }

    async fn topology(&self) -> Result<super::Topology> {
        if !self.connection.is_cluster() {
            return Ok(super::Topology::single("redis"));
        }
        let info: String = self
            .query("cluster info", redis::cmd("CLUSTER").arg("INFO"))
            .await?;
        let nodes: String = self
            .query("cluster nodes", redis::cmd("CLUSTER").arg("NODES"))
            .await?;
        Ok(cluster_topology(&info, &nodes))
    }

    fn round_trips(&self) -> Option<super::RoundTrips> {
        Some(self.round_trips.clone())
    }

    async fn purge(&self, now: Millis) -> Result<usize> {
        // Question keys expire by themselves (PEXPIRE at resolution); trim the index that points
        // at them. A session's resolved indexes are trimmed by the claims that extend them, and
        // expire a retention after their last claim; readers skip ids whose question is gone
        // meanwhile.
        let cutoff = now
            .0
            .saturating_sub(self.options.retention.as_millis() as u64);
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            for status in FINAL {
                pipe.cmd("ZREMRANGEBYSCORE")
                    .arg(self.keys.done(bucket, status.as_str()))
                    .arg(0)
                    .arg(cutoff);
            }
            // Ended runs expire with the retention too (their keys by TTL).
            pipe.cmd("ZREMRANGEBYSCORE")
                .arg(self.keys.runs_ended(bucket))
                .arg(0)
                .arg(cutoff);
        }
        let removed: Vec<usize> = self.query_pipe("purge", &pipe).await?;
        Ok(removed.into_iter().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_passwords_in_logs() {
        assert_eq!(
            redact_url("redis://:hunter2@db:6379/0"),
            "redis://***@db:6379/0"
        );
        assert_eq!(
            redact_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
    }
}
