//! Prometheus metrics, written by hand: three series do not justify a metrics crate.
//!
//! Counters are per process (Prometheus sums them across replicas); the pending gauge is read from
//! the store at scrape time, so every replica reports the same shared figure.

use askbridge_core::Question;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds of the resolve-latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0,
];

/// The bridge's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    asked: AtomicU64,
    resolved: Mutex<BTreeMap<(String, String), u64>>,
    latency: Mutex<Histogram>,
}

#[derive(Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Metrics {
    /// Counts a question asked.
    pub fn asked(&self) {
        self.asked.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a resolution, by outcome and surface, and its time from asking.
    pub fn resolved(&self, question: &Question) {
        let Some(resolution) = &question.resolution else {
            return;
        };
        let key = (question.status.as_str().to_owned(), resolution.via());
        *lock(&self.resolved).entry(key).or_default() += 1;
        let seconds = resolution.at.since(question.created_at).as_secs_f64();
        let mut histogram = lock(&self.latency);
        for (bound, count) in BUCKETS.iter().zip(histogram.counts.iter_mut()) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        histogram.count += 1;
        histogram.sum += seconds;
    }

    /// The Prometheus text exposition, with `pending` from the store.
    pub fn render(&self, pending: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP askbridge_pending_questions Questions waiting for an answer."
        );
        let _ = writeln!(out, "# TYPE askbridge_pending_questions gauge");
        let _ = writeln!(out, "askbridge_pending_questions {pending}");
        let _ = writeln!(
            out,
            "# HELP askbridge_questions_asked_total Questions asked through this process."
        );
        let _ = writeln!(out, "# TYPE askbridge_questions_asked_total counter");
        let _ = writeln!(
            out,
            "askbridge_questions_asked_total {}",
            self.asked.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP askbridge_questions_resolved_total Questions resolved, by outcome and surface."
        );
        let _ = writeln!(out, "# TYPE askbridge_questions_resolved_total counter");
        for ((outcome, via), count) in lock(&self.resolved).iter() {
            let _ = writeln!(
                out,
                "askbridge_questions_resolved_total{{outcome=\"{outcome}\",via=\"{}\"}} {count}",
                escape_label(via)
            );
        }
        let histogram = lock(&self.latency);
        let _ = writeln!(
            out,
            "# HELP askbridge_resolve_seconds Time from asking to resolution."
        );
        let _ = writeln!(out, "# TYPE askbridge_resolve_seconds histogram");
        for (bound, count) in BUCKETS.iter().zip(histogram.counts.iter()) {
            let _ = writeln!(
                out,
                "askbridge_resolve_seconds_bucket{{le=\"{bound}\"}} {count}"
            );
        }
        let _ = writeln!(
            out,
            "askbridge_resolve_seconds_bucket{{le=\"+Inf\"}} {}",
            histogram.count
        );
        let _ = writeln!(out, "askbridge_resolve_seconds_sum {}", histogram.sum);
        let _ = writeln!(out, "askbridge_resolve_seconds_count {}", histogram.count);
        out
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
