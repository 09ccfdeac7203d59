//! What a store tells about itself beyond its data: its shape (one node or a cluster, and
//! whether the cluster is whole) for `/healthz` and `/metrics`, and how long its round trips
//! take. Kept apart from the role traits' data types because only operators read them.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use serde::Serialize;
use std::time::Duration;

/// The store's shape as seen now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Topology {
    /// `memory`, `embedded`, `redis` or `redis-cluster`.
    pub kind: &'static str,
    /// Nodes the store is made of (known to the cluster, failing ones included).
    pub nodes: usize,
    /// Nodes serving slots (masters); the node itself on one node.
    pub masters: usize,
    /// Nodes flagged as failing by the cluster.
    pub failing: usize,
    /// False when the cluster says `cluster_state:fail` (some slot has no master).
    pub ok: bool,
}

impl Topology {
    /// A store of one part in this process or one server.
    pub fn single(kind: &'static str) -> Self {
        Topology {
            kind,
            nodes: 1,
            masters: 1,
            failing: 0,
            ok: true,
        }
    }
}

/// The label of a round trip: what the store was doing (`claim`, `ask`, `lease`...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Operation {
    /// The operation's name, one of a fixed set written in the store's code.
    pub op: &'static str,
}

/// Round-trip times of a networked store, by operation: a histogram family that the metrics
/// registry exposes as `askbridge_store_request_seconds`. Cloning shares it.
#[derive(Clone, Debug)]
pub struct RoundTrips(Family<Operation, Histogram>);

/// Bucket bounds, in seconds: a loopback round trip is ~0.1 ms, a retried one up to seconds.
const BOUNDS: [f64; 10] = [
    0.000_25, 0.000_5, 0.001, 0.002, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5,
];

impl Default for RoundTrips {
    fn default() -> Self {
        RoundTrips(Family::new_with_constructor(|| {
            Histogram::new(BOUNDS.iter().copied())
        }))
    }
}

impl RoundTrips {
    /// Records one operation (with its retries) that took `elapsed`.
    pub fn observe(&self, op: &'static str, elapsed: Duration) {
        self.0
            .get_or_create(&Operation { op })
            .observe(elapsed.as_secs_f64());
    }

    /// The family, for registering.
    pub fn family(&self) -> Family<Operation, Histogram> {
        self.0.clone()
    }
}
