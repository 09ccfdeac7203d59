//! Who a question reaches and when: who may answer it, where it is shown as its escalation
//! steps fall due, and its reminder schedule. Kept apart from the state machine
//! (`claim.rs`): these are reads of a question at a time, never changes to it.

use super::{Kind, Question};
use crate::identity::{Identity, Target};
use crate::nudge::{self, Escalation, Nudge};
use crate::time::Millis;
use std::time::Duration;

impl Question {
    /// May `sender`, writing in `chat` (a target such as `telegram:-100`, or `api` for the HTTP
    /// API, which reaches every question), answer this question at `now`?
    ///
    /// Deny by default: a question with answerers accepts only them; one without accepts anyone
    /// who can see it, i.e. anyone writing in a chat it is shown in. Each escalation step reached
    /// by `now` admits its own answerers (or, naming none, anyone on its targets) as well.
    pub fn may_answer(&self, sender: &Identity, chat: &Target, now: Millis) -> bool {
        self.admits(&self.answerers, &self.targets, sender, chat)
            || self
                .escalations_reached(now)
                .any(|step| self.admits(&step.answerers, &step.targets, sender, chat))
    }

    fn admits(
        &self,
        answerers: &[Identity],
        targets: &[Target],
        sender: &Identity,
        chat: &Target,
    ) -> bool {
        if !answerers.is_empty() {
            return answerers.contains(sender);
        }
        // An approval without approvers is approvable by nobody: being able to see it (say,
        // in a group) never makes anyone an approver.
        if self.kind == Kind::Approval {
            return false;
        }
        *chat == Target::api() || targets.contains(chat)
    }

    /// The escalation steps reached by `now`.
    pub fn escalations_reached(&self, now: Millis) -> impl Iterator<Item = &Escalation> {
        let asked = self.created_at;
        self.escalate
            .iter()
            .filter(move |step| step.at(asked) <= now)
    }

    /// Where it is shown at `now`: its targets and those of the escalation steps reached.
    pub fn targets_at(&self, now: Millis) -> Vec<Target> {
        self.widened(&self.targets, now, |step| &step.targets)
    }

    /// Who is named as an answerer at `now`: its answerers and those of the escalation steps
    /// reached (empty lists admit anyone who sees it; see [`Question::may_answer`]).
    pub fn answerers_at(&self, now: Millis) -> Vec<Identity> {
        self.widened(&self.answerers, now, |step| &step.answerers)
    }

    /// `base` and what each escalation step reached by `now` adds to it (`part`), each once.
    fn widened<T: Clone + PartialEq>(
        &self,
        base: &[T],
        now: Millis,
        part: impl Fn(&Escalation) -> &[T],
    ) -> Vec<T> {
        let mut all = base.to_vec();
        for item in self.escalations_reached(now).flat_map(part) {
            if !all.contains(item) {
                all.push(item.clone());
            }
        }
        all
    }

    /// May it ever be shown in `target` (its own targets, or an escalation step's)? What
    /// [`Question::all_targets`] lists, asked of one target without building the list.
    pub fn may_show_in(&self, target: &Target) -> bool {
        self.targets.contains(target) || self.escalate.iter().any(|s| s.targets.contains(target))
    }

    /// Every place it may ever be shown (the stores index it under each, so that a plain reply
    /// in an escalation's chat finds it).
    pub fn all_targets(&self) -> Vec<Target> {
        self.targets_at(Millis(u64::MAX))
    }

    /// Its reminders and escalation steps that fall due before the deadline, soonest first.
    pub fn nudges(&self) -> Vec<(Millis, Nudge)> {
        nudge::schedule(
            self.created_at,
            self.expires_at,
            self.reminders.as_ref(),
            &self.escalate,
        )
    }

    /// When the sweeper next has something to do for it while it is pending: its first nudge
    /// not in `done` (outbox effects), or its deadline.
    pub fn next_due(&self, done: &[String]) -> Millis {
        self.nudges()
            .into_iter()
            .find(|(_, nudge)| !done.contains(&nudge.effect()))
            .map_or(self.expires_at, |(at, _)| at)
    }

    /// How long until the deadline, from `now`.
    pub fn remaining(&self, now: Millis) -> Duration {
        self.expires_at.since(now)
    }
}
