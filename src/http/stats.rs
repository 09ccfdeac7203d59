//! `GET /api/stats`: the ops page's summary line.
//!
//! Computed from the store on each call, never from this process's metrics, so that every
//! process sharing one Redis gives the same numbers. The store counts resolutions by outcome in
//! the window from its indexes by resolution time, and keeps the times of the most recent answers
//! (about 2,000): the cost is the same with a hundred or a million questions stored.

use super::{ApiError, AppState};
use crate::store::Counts;
use askbridge_core::Millis;
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use std::time::Duration;

/// The window of `last_hour`.
pub const WINDOW: Duration = Duration::from_secs(3600);

/// The response of `GET /api/stats`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Questions pending now.
    pub pending: usize,
    /// Questions resolved within the last hour, by outcome.
    pub last_hour: LastHour,
    /// Time from asked to answered of the questions answered within the last hour, in seconds;
    /// `null` when none was.
    pub time_to_answer_s: Percentiles,
}

/// Resolutions within the window, by outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LastHour {
    /// Answered.
    pub answered: usize,
    /// Declined (or rejected approvals).
    pub declined: usize,
    /// Expired.
    pub expired: usize,
    /// Cancelled.
    pub cancelled: usize,
}

/// Nearest-rank percentiles, in seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// The median.
    pub p50: Option<f64>,
    /// The 99th percentile.
    pub p99: Option<f64>,
}

/// The nearest-rank `p`th percentile of sorted `values`, in seconds: the smallest value with at
/// least p% of the values at or below it. An observed value, never an interpolation.
fn percentile(sorted: &[Duration], p: usize) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    Some(sorted[rank - 1].as_millis() as f64 / 1000.0)
}

pub(super) async fn stats(State(state): State<AppState>) -> Result<Json<Stats>, ApiError> {
    let now = Millis::now();
    let since = Millis(now.0.saturating_sub(WINDOW.as_millis() as u64));
    let counts = state.bridge.store().counts(since).await?;
    Ok(Json(from_counts(&counts)))
}

/// The summary from the store's counts: resolutions in the window by outcome, and nearest-rank
/// percentiles of the recent answer times.
pub fn from_counts(counts: &Counts) -> Stats {
    let [answered, declined, expired, cancelled] = counts.resolved;
    let mut times: Vec<Duration> = counts
        .answer_ms
        .iter()
        .map(|ms| Duration::from_millis(*ms))
        .collect();
    times.sort_unstable();
    Stats {
        pending: counts.pending,
        last_hour: LastHour {
            answered,
            declined,
            expired,
            cancelled,
        },
        time_to_answer_s: Percentiles {
            p50: percentile(&times, 50),
            p99: percentile(&times, 99),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pending: usize, resolved: [usize; 4], answer_ms: &[u64]) -> Counts {
        Counts {
            pending,
            resolved,
            answer_ms: answer_ms.to_vec(),
        }
    }

    #[test]
    fn outcomes_come_from_the_store_counts() {
        let stats = from_counts(&counts(7, [1, 1, 1, 2], &[4_000]));
        assert_eq!(stats.pending, 7);
        assert_eq!(
            stats.last_hour,
            LastHour {
                answered: 1,
                declined: 1,
                expired: 1,
                cancelled: 2
            }
        );
        assert_eq!(stats.time_to_answer_s.p50, Some(4.0));
        assert_eq!(stats.time_to_answer_s.p99, Some(4.0));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        // Answered after 1 s, 2 s, ... 100 s, in any order.
        let times: Vec<u64> = (1..=100).rev().map(|s| s * 1000).collect();
        let stats = from_counts(&counts(0, [100, 0, 0, 0], &times));
        assert_eq!(stats.time_to_answer_s.p50, Some(50.0));
        assert_eq!(stats.time_to_answer_s.p99, Some(99.0));
        let stats = from_counts(&counts(0, [3, 0, 0, 0], &[30_000, 1_000, 2_000]));
        assert_eq!(stats.time_to_answer_s.p50, Some(2.0));
        assert_eq!(stats.time_to_answer_s.p99, Some(30.0));
    }

    #[test]
    fn no_answers_means_no_percentiles() {
        let stats = from_counts(&counts(0, [0, 1, 0, 0], &[]));
        assert_eq!(stats.time_to_answer_s, Percentiles::default());
        let json = serde_json::to_value(&stats).unwrap();
        assert_eq!(json["time_to_answer_s"]["p50"], serde_json::Value::Null);
    }
}
