//! `GET /api/stats`: the ops page's summary line.
//!
//! Computed from the store on each call, never from this process's metrics, so that every
//! process sharing one Redis gives the same numbers. The store has no index by resolution time,
//! so each outcome is read as a list of its most recently *asked* questions ([`SCAN`] of them)
//! and filtered to those resolved within the last hour: a question asked earlier than that many
//! newer ones of the same outcome is not counted. The page asks at most every few seconds.

use super::{ApiError, AppState};
use crate::store::ListFilter;
use askbridge_core::{Millis, Question, Status};
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use std::time::Duration;

/// How many questions of each outcome are read per call.
pub const SCAN: usize = 2000;
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

/// The summary of `resolved` (questions of any final status) at `now`, with `pending` pending.
pub fn summarize(pending: usize, resolved: &[Question], now: Millis) -> Stats {
    let since = Millis(now.0.saturating_sub(WINDOW.as_millis() as u64));
    let mut last_hour = LastHour::default();
    let mut answer_times = Vec::new();
    for question in resolved {
        let Some(resolution) = &question.resolution else {
            continue;
        };
        if resolution.at < since || resolution.at > now {
            continue;
        }
        match question.status {
            Status::Answered => {
                last_hour.answered += 1;
                answer_times.push(resolution.at.since(question.created_at));
            }
            Status::Declined => last_hour.declined += 1,
            Status::Expired => last_hour.expired += 1,
            Status::Cancelled => last_hour.cancelled += 1,
            Status::Pending => {}
        }
    }
    answer_times.sort_unstable();
    Stats {
        pending,
        last_hour,
        time_to_answer_s: Percentiles {
            p50: percentile(&answer_times, 50),
            p99: percentile(&answer_times, 99),
        },
    }
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
    let pending = state.bridge.store().count_pending().await?;
    let mut resolved = Vec::new();
    for status in [
        Status::Answered,
        Status::Declined,
        Status::Expired,
        Status::Cancelled,
    ] {
        let filter = ListFilter {
            status: Some(status),
            limit: SCAN,
            ..ListFilter::default()
        };
        resolved.extend(state.bridge.list(&filter).await?);
    }
    Ok(Json(summarize(pending, &resolved, Millis::now())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::question::DEFAULT_TIMEOUT;
    use askbridge_core::{NewQuestion, QuestionId, Resolution};

    const NOW: Millis = Millis(10_000_000_000);

    fn resolved(status: Status, asked_ms_ago: u64, resolved_ms_ago: u64) -> Question {
        let mut question = NewQuestion::new("s", "q")
            .into_question(
                QuestionId::random(),
                Millis(NOW.0 - asked_ms_ago),
                DEFAULT_TIMEOUT,
            )
            .unwrap();
        question.status = status;
        question.resolution = Some(Resolution {
            value: None,
            decider: askbridge_core::Actor::api().into(),
            at: Millis(NOW.0 - resolved_ms_ago),
            message: None,
            rule_id: None,
        });
        question
    }

    #[test]
    fn counts_only_the_last_hour_by_outcome() {
        let questions = [
            resolved(Status::Answered, 5_000, 1_000),
            resolved(Status::Answered, 4_000_000, 3_601_000), // resolved 1 h 1 s ago
            resolved(Status::Declined, 10_000, 0),
            resolved(Status::Expired, 1_800_000, 60_000),
            resolved(Status::Cancelled, 70_000, 50_000),
            resolved(Status::Cancelled, 70_000, 3_599_000),
        ];
        let stats = summarize(7, &questions, NOW);
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
        // Answered after 1 s, 2 s, ... 100 s.
        let questions: Vec<Question> = (1..=100)
            .map(|s| resolved(Status::Answered, s * 1000 + 500, 500))
            .collect();
        let stats = summarize(0, &questions, NOW);
        assert_eq!(stats.time_to_answer_s.p50, Some(50.0));
        assert_eq!(stats.time_to_answer_s.p99, Some(99.0));
        let three: Vec<Question> = [1_000, 2_000, 30_000]
            .iter()
            .map(|ms| resolved(Status::Answered, ms + 10, 10))
            .collect();
        let stats = summarize(0, &three, NOW);
        assert_eq!(stats.time_to_answer_s.p50, Some(2.0));
        assert_eq!(stats.time_to_answer_s.p99, Some(30.0));
    }

    #[test]
    fn no_answers_means_no_percentiles() {
        let stats = summarize(0, &[resolved(Status::Declined, 10, 5)], NOW);
        assert_eq!(stats.time_to_answer_s, Percentiles::default());
        let json = serde_json::to_value(&stats).unwrap();
        assert_eq!(json["time_to_answer_s"]["p50"], serde_json::Value::Null);
    }
}
