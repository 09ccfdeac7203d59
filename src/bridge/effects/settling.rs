//! One settle per question at a time in this process, and no settle lost to that rule.
//!
//! A second settle of a question while one runs (a delivery that finished late, a sweep) would
//! do the same effects twice, so it does not run; but it may have work the running one missed:
//! a message recorded as shown after the running settle read where the question was shown. So
//! it asks the running one to go once more when it is done, which reads the work again. (It used
//! to put itself off in the store, due a second later; the running settle's end then took the
//! question out of the open index, that entry with it, and the late message kept its buttons.)

use crate::bridge::lock;
use askbridge_core::QuestionId;
use std::collections::HashMap;
use std::sync::Mutex;

/// The questions this process is settling, each with whether another settle was asked for
/// while it ran.
#[derive(Debug, Default)]
pub(super) struct Settlings(Mutex<HashMap<QuestionId, bool>>);

impl Settlings {
    /// Starts settling `id` here; `None` when a settle of it is running, which is then asked to
    /// go once more (see the module documentation).
    pub(super) fn start(&self, id: &QuestionId) -> Option<Settling<'_>> {
        let mut settling = lock(&self.0);
        if let Some(again) = settling.get_mut(id) {
            *again = true;
            return None;
        }
        settling.insert(id.clone(), false);
        Some(Settling {
            settlings: self,
            id: id.clone(),
            ended: false,
        })
    }
}

/// Marks a question as being settled by this process until [`Settling::again`] says it is done,
/// or until dropped (a settle that failed: the sweeper retries it).
#[derive(Debug)]
pub(super) struct Settling<'a> {
    settlings: &'a Settlings,
    id: QuestionId,
    ended: bool,
}

impl Settling<'_> {
    /// True when another settle was asked for meanwhile: the settle goes once more. False ends
    /// it, in the same step as the check, so that a settle asked for after it finds none running
    /// and runs itself.
    pub(super) fn again(&mut self) -> bool {
        let mut settling = lock(&self.settlings.0);
        if settling.get(&self.id) == Some(&true) {
            settling.insert(self.id.clone(), false);
            return true;
        }
        settling.remove(&self.id);
        self.ended = true;
        false
    }
}

impl Drop for Settling<'_> {
    fn drop(&mut self) {
        if !self.ended {
            lock(&self.settlings.0).remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settle_asked_for_while_one_runs_is_run_by_that_one_once_more() {
        let settlings = Settlings::default();
        let id = QuestionId::derived(b"q");
        let mut first = settlings.start(&id).expect("none running");
        assert!(settlings.start(&id).is_none(), "one at a time");
        assert!(
            settlings.start(&id).is_none(),
            "asked twice: still one more pass"
        );
        assert!(first.again(), "asked for meanwhile: once more");
        assert!(!first.again(), "nothing asked since: done");
        // Ended: the next one runs itself.
        let second = settlings.start(&id).expect("the first ended");
        drop(second);
        assert!(settlings.start(&id).is_some(), "a dropped settle ends too");
    }

    #[test]
    fn settles_of_different_questions_do_not_wait_for_each_other() {
        let settlings = Settlings::default();
        let (a, b) = (QuestionId::derived(b"a"), QuestionId::derived(b"b"));
        let mut first = settlings.start(&a).expect("none running");
        assert!(settlings.start(&b).is_some());
        assert!(!first.again());
    }
}
