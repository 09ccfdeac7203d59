//! How many refused attempts each caller gets recorded one by one.
//!
//! Every refusal is answered, but recording each in the audit trail (kept 90 days) let one client
//! write 22,912 records in ten seconds by replying to made-up ids. So each caller (identity and
//! surface) has a budget of [`PER_WINDOW`] records per [`WINDOW`]; past it, refusals are counted,
//! and the caller's next record says how many were not written one by one. The budget is this
//! process's: several processes each allow their own, which bounds the trail just as well.

use askbridge_core::Millis;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Refusals recorded one by one per caller and window.
pub(crate) const PER_WINDOW: u32 = 20;
/// The window.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// Callers tracked at once; past it the table starts over (a flood of identities is itself
/// bounded by who can reach askbridge).
const CALLERS: usize = 10_000;

#[derive(Debug, Default)]
struct Tally {
    window_start: Millis,
    recorded: u32,
    suppressed: u64,
}

/// What to do with one refusal.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Record it; `unrecorded` earlier refusals by the same caller were only counted.
    Record { unrecorded: u64 },
    /// Count it only (`first`: the first one of this window, worth a log line).
    Skip { first: bool },
}

/// Per-caller budgets.
#[derive(Debug, Default)]
pub(crate) struct RefusalBudget {
    tallies: Mutex<HashMap<String, Tally>>,
}

impl RefusalBudget {
    /// Whether `caller`'s refusal at `now` is recorded.
    pub(crate) fn judge(&self, caller: &str, now: Millis) -> Verdict {
        let mut tallies = self.tallies.lock().unwrap_or_else(|p| p.into_inner());
        if tallies.len() >= CALLERS && !tallies.contains_key(caller) {
            tallies.clear();
        }
        let tally = tallies.entry(caller.to_owned()).or_default();
        if now.since(tally.window_start) >= WINDOW {
            tally.window_start = now;
            tally.recorded = 0;
        }
        if tally.recorded < PER_WINDOW {
            tally.recorded += 1;
            return Verdict::Record {
                unrecorded: std::mem::take(&mut tally.suppressed),
            };
        }
        tally.suppressed += 1;
        Verdict::Skip {
            first: tally.suppressed == 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_counted_not_recorded() {
        let budget = RefusalBudget::default();
        let start = Millis(1_000_000);
        for _ in 0..PER_WINDOW {
            assert_eq!(
                budget.judge("api/http", start),
                Verdict::Record { unrecorded: 0 }
            );
        }
        assert_eq!(
            budget.judge("api/http", start),
            Verdict::Skip { first: true }
        );
        assert_eq!(
            budget.judge("api/http", start),
            Verdict::Skip { first: false }
        );
        // Others are not affected.
        assert_eq!(
            budget.judge("telegram:42/telegram", start),
            Verdict::Record { unrecorded: 0 }
        );
        // The next window's first record tells what was only counted.
        let later = Millis(start.0 + WINDOW.as_millis() as u64);
        assert_eq!(
            budget.judge("api/http", later),
            Verdict::Record { unrecorded: 2 }
        );
    }
}
