//! Prometheus metrics, through the official `prometheus-client` crate.
//!
//! Counters and histograms are per process (Prometheus sums them across replicas). Gauges about
//! shared state — pending questions, the store's shape — are read from the store at scrape time,
//! so every replica reports the same figure; lease gauges say which replica holds what.
//!
//! | series | type | labels |
//! |---|---|---|
//! | `askbridge_pending_questions` | gauge | |
//! | `askbridge_questions_asked_total` | counter | |
//! | `askbridge_questions_resolved_total` | counter | `outcome`, `via` |
//! | `askbridge_resolve_seconds` | histogram | |
//! | `askbridge_delivery_failures_total` | counter | `surface`, `action` (`show`, `withdraw`) |
//! | `askbridge_outbox_lag_seconds` | histogram | |
//! | `askbridge_lease_held` | gauge | `lease` |
//! | `askbridge_store_request_seconds` | histogram | `op` (Redis only) |
//! | `askbridge_store_nodes`, `askbridge_store_masters`, `askbridge_store_failing_nodes`, `askbridge_store_ok` | gauge | |

use crate::store::{RoundTrips, Topology};
use askbridge_core::Question;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::time::Duration;

/// Upper bounds of the resolve-latency histogram, in seconds (people answer in seconds to hours).
const RESOLVE_BOUNDS: [f64; 12] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0,
];
/// Upper bounds of the outbox-lag histogram, in seconds: the sweeper should be within a second.
const LAG_BOUNDS: [f64; 9] = [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Resolved {
    outcome: &'static str,
    via: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Delivery {
    surface: String,
    action: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Lease {
    lease: &'static str,
}

/// A delivery step that failed (see [`Metrics::delivery_failed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryAction {
    /// Showing a question.
    Show,
    /// Editing a shown question to its outcome.
    Withdraw,
}

/// The bridge's metrics and their registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pending: Gauge,
    asked: Counter,
    resolved: Family<Resolved, Counter>,
    resolve_seconds: Histogram,
    delivery_failures: Family<Delivery, Counter>,
    outbox_lag: Histogram,
    leases: Family<Lease, Gauge>,
    nodes: Gauge,
    masters: Gauge,
    failing: Gauge,
    store_ok: Gauge,
}

/// What a scrape reads from outside this process.
#[derive(Debug)]
pub struct Scrape<'a> {
    /// Questions pending in the store.
    pub pending: usize,
    /// The store's shape; `None` when it could not be read.
    pub topology: Option<&'a Topology>,
    /// The lease names this process could hold, and whether it holds each.
    pub leases: &'a [(&'static str, bool)],
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(None)
    }
}

impl Metrics {
    /// The metrics, with the store's round-trip histogram when it has one.
    pub fn new(round_trips: Option<RoundTrips>) -> Self {
        let mut metrics = Metrics {
            registry: Registry::default(),
            pending: Gauge::default(),
            asked: Counter::default(),
            resolved: Family::default(),
            resolve_seconds: Histogram::new(RESOLVE_BOUNDS.iter().copied()),
            delivery_failures: Family::default(),
            outbox_lag: Histogram::new(LAG_BOUNDS.iter().copied()),
            leases: Family::default(),
            nodes: Gauge::default(),
            masters: Gauge::default(),
            failing: Gauge::default(),
            store_ok: Gauge::default(),
        };
        let r = &mut metrics.registry;
        r.register(
            "askbridge_pending_questions",
            "Questions waiting for an answer (in the store)",
            metrics.pending.clone(),
        );
        r.register(
            "askbridge_questions_asked",
            "Questions asked through this process",
            metrics.asked.clone(),
        );
        r.register(
            "askbridge_questions_resolved",
            "Questions resolved by this process, by outcome and surface",
            metrics.resolved.clone(),
        );
        r.register(
            "askbridge_resolve_seconds",
            "Time from asking to resolution",
            metrics.resolve_seconds.clone(),
        );
        r.register(
            "askbridge_delivery_failures",
            "Failed attempts to show or withdraw a question, by surface",
            metrics.delivery_failures.clone(),
        );
        r.register(
            "askbridge_outbox_lag_seconds",
            "How late the sweeper took up due work: an expiry, or effects another process left (since first due)",
            metrics.outbox_lag.clone(),
        );
        r.register(
            "askbridge_lease_held",
            "Leader leases this process holds (1), by name",
            metrics.leases.clone(),
        );
        r.register(
            "askbridge_store_nodes",
            "Nodes the store is made of",
            metrics.nodes.clone(),
        );
        r.register(
            "askbridge_store_masters",
            "Store nodes serving data (a cluster's masters)",
            metrics.masters.clone(),
        );
        r.register(
            "askbridge_store_failing_nodes",
            "Store nodes the cluster flags as failing",
            metrics.failing.clone(),
        );
        r.register(
            "askbridge_store_ok",
            "1 when the store answers and (on a cluster) every slot is served",
            metrics.store_ok.clone(),
        );
        if let Some(round_trips) = round_trips {
            r.register(
                "askbridge_store_request_seconds",
                "Store round trips (with retries), by operation.",
                round_trips.family(),
            );
        }
        metrics
    }

    /// Counts a question asked.
    pub fn asked(&self) {
        self.asked.inc();
    }

    /// Counts a resolution, by outcome and surface, and its time from asking.
    pub fn resolved(&self, question: &Question) {
        let Some(resolution) = &question.resolution else {
            return;
        };
        let labels = Resolved {
            outcome: question.status.as_str(),
            via: resolution.via(),
        };
        self.resolved.get_or_create(&labels).inc();
        self.resolve_seconds
            .observe(resolution.at.since(question.created_at).as_secs_f64());
    }

    /// Counts a failed attempt to show or withdraw on `surface` (`telegram`, `discord`...).
    pub fn delivery_failed(&self, surface: &str, action: DeliveryAction) {
        let action = match action {
            DeliveryAction::Show => "show",
            DeliveryAction::Withdraw => "withdraw",
        };
        self.delivery_failures
            .get_or_create(&Delivery {
                surface: surface.to_owned(),
                action,
            })
            .inc();
    }

    /// Records that the sweeper took up work `late` after it was due.
    pub fn outbox_lag(&self, late: Duration) {
        self.outbox_lag.observe(late.as_secs_f64());
    }

    /// The text exposition, with the gauges read at scrape time.
    pub fn render(&self, scrape: &Scrape<'_>) -> String {
        self.pending
            .set(i64::try_from(scrape.pending).unwrap_or(i64::MAX));
        for (lease, held) in scrape.leases {
            self.leases
                .get_or_create(&Lease { lease })
                .set(i64::from(*held));
        }
        match scrape.topology {
            Some(topology) => {
                self.nodes.set(topology.nodes as i64);
                self.masters.set(topology.masters as i64);
                self.failing.set(topology.failing as i64);
                self.store_ok.set(i64::from(topology.ok));
            }
            None => {
                self.store_ok.set(0);
            }
        }
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String does not fail");
        out
    }
}

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
