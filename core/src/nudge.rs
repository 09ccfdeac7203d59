//! Reminders and escalation: what happens to a question nobody answers.
//!
//! Both are pure functions of the question and the clock, so that every process agrees on them
//! without writing anything when a step is reached: reminder `k` falls due `k × after_s` after the
//! question was asked, an escalation step `after_s` after it, and who may answer widens with each
//! step reached ([`crate::Question::may_answer`]). What the store does keep is which nudges were
//! carried out, one outbox effect each (`remind:2`, `escalate:0`), marked before the nudge is
//! sent: that is what makes each happen once, with several processes and across a restart.
//!
//! This module imports only identities and time, so the question can hold its types.

use crate::error::Error;
use crate::identity::{Identity, Target, is_well_formed};
use crate::time::Millis;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Most reminders one question may send (per target it is shown on).
pub const MAX_REMINDERS: u32 = 3;
/// Most escalation steps one question may have.
pub const MAX_ESCALATION_STEPS: usize = 5;
/// Most targets or answerers one escalation step may add.
pub const MAX_STEP_PEOPLE: usize = 20;

/// Re-announce a question while it is unanswered.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reminders {
    /// Seconds from the question (and then from one reminder) to the next reminder.
    pub after_s: f64,
    /// How many reminders at most.
    pub times: u32,
}

/// One escalation step: after `after_s` seconds unanswered, the question is also shown on
/// `targets`, and `answerers` may answer too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    /// Seconds after the question was asked.
    pub after_s: f64,
    /// Where it is also shown from then on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Target>,
    /// Who may also answer from then on (none: anyone who can see it on `targets`, as for a
    /// question without answerers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answerers: Vec<Identity>,
}

impl Escalation {
    /// When this step is reached, for a question asked at `asked`.
    pub fn at(&self, asked: Millis) -> Millis {
        asked.after(Duration::from_secs_f64(self.after_s))
    }
}

/// Something that falls due while a question is pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nudge {
    /// Reminder number `n` (1-based).
    Remind(u32),
    /// Escalation step `i` (0-based, as listed).
    Escalate(usize),
}

impl Nudge {
    /// The outbox effect that records it as carried out.
    pub fn effect(self) -> String {
        match self {
            Nudge::Remind(n) => format!("remind:{n}"),
            Nudge::Escalate(i) => format!("escalate:{i}"),
        }
    }
}

/// Every nudge of a question asked at `asked` that falls due before `deadline`, soonest first.
pub fn schedule(
    asked: Millis,
    deadline: Millis,
    reminders: Option<&Reminders>,
    escalate: &[Escalation],
) -> Vec<(Millis, Nudge)> {
    let mut due = Vec::new();
    if let Some(reminders) = reminders {
        for n in 1..=reminders.times {
            let at = asked.after(Duration::from_secs_f64(reminders.after_s * f64::from(n)));
            due.push((at, Nudge::Remind(n)));
        }
    }
    for (i, step) in escalate.iter().enumerate() {
        due.push((step.at(asked), Nudge::Escalate(i)));
    }
    due.retain(|(at, _)| *at < deadline);
    due.sort_by_key(|(at, _)| *at);
    due
}

/// Checks a request's reminders: `after_s` within the question's `timeout`, `times` (default 1)
/// between 1 and [`MAX_REMINDERS`]. `times` without `after_s` is refused, not ignored.
pub fn check_reminders(
    after_s: Option<f64>,
    times: Option<u32>,
    timeout: Duration,
) -> Result<Option<Reminders>, Error> {
    let Some(after_s) = after_s else {
        return match times {
            None => Ok(None),
            Some(_) => Err(invalid("reminders", "needs remind_after_s".into())),
        };
    };
    check_seconds("remind_after_s", after_s, timeout)?;
    let times = times.unwrap_or(1);
    if !(1..=MAX_REMINDERS).contains(&times) {
        let why = format!("must be between 1 and {MAX_REMINDERS}");
        return Err(invalid("reminders", why));
    }
    Ok(Some(Reminders { after_s, times }))
}

/// Checks a request's escalation steps: at most [`MAX_ESCALATION_STEPS`], each within the
/// question's `timeout` and later than the one before, each adding someone or somewhere.
pub fn check_escalation(steps: &[Escalation], timeout: Duration) -> Result<(), Error> {
    if steps.len() > MAX_ESCALATION_STEPS {
        let why = format!("{} steps; the limit is {MAX_ESCALATION_STEPS}", steps.len());
        return Err(invalid("escalate", why));
    }
    let mut previous = 0.0;
    for (i, step) in steps.iter().enumerate() {
        check_seconds("escalate", step.after_s, timeout).map_err(|_| {
            invalid(
                "escalate",
                format!("step {}: after_s {}", i + 1, within(timeout)),
            )
        })?;
        if step.after_s <= previous {
            let why = format!("step {}: after_s must be later than the step before", i + 1);
            return Err(invalid("escalate", why));
        }
        previous = step.after_s;
        if step.targets.is_empty() && step.answerers.is_empty() {
            let why = format!("step {}: names no targets and no answerers", i + 1);
            return Err(invalid("escalate", why));
        }
        let names = step.targets.iter().map(Target::as_str);
        let names = names.chain(step.answerers.iter().map(Identity::as_str));
        if step.targets.len().max(step.answerers.len()) > MAX_STEP_PEOPLE {
            let why = format!(
                "step {}: at most {MAX_STEP_PEOPLE} targets and {MAX_STEP_PEOPLE} answerers",
                i + 1
            );
            return Err(invalid("escalate", why));
        }
        for name in names {
            if !is_well_formed(name) {
                let why = format!("step {}: {}", i + 1, crate::identity::malformed(name));
                return Err(invalid("escalate", why));
            }
        }
    }
    Ok(())
}

fn check_seconds(field: &'static str, seconds: f64, timeout: Duration) -> Result<(), Error> {
    if seconds.is_finite() && seconds > 0.0 && seconds < timeout.as_secs_f64() {
        Ok(())
    } else {
        Err(invalid(field, within(timeout)))
    }
}

fn within(timeout: Duration) -> String {
    format!(
        "must be more than 0 and less than the question's timeout ({} s)",
        timeout.as_secs_f64()
    )
}

fn invalid(field: &'static str, reason: String) -> Error {
    Error::Invalid { field, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn step(after_s: f64, target: &str) -> Escalation {
        Escalation {
            after_s,
            targets: vec![target.into()],
            answerers: vec![],
        }
    }

    #[test]
    fn nudges_fall_due_in_order_and_never_after_the_deadline() {
        let reminders = Reminders {
            after_s: 600.0,
            times: 3,
        };
        let steps = [step(900.0, "discord:7"), step(3000.0, "telegram:9")];
        let asked = Millis(1_000_000);
        let due = schedule(
            asked,
            asked.after(Duration::from_secs(1700)),
            Some(&reminders),
            &steps,
        );
        let got: Vec<(u64, Nudge)> = due.iter().map(|(at, n)| (at.0 - asked.0, *n)).collect();
        assert_eq!(
            got,
            vec![
                (600_000, Nudge::Remind(1)),
                (900_000, Nudge::Escalate(0)),
                (1_200_000, Nudge::Remind(2)),
            ],
            "the third reminder and the second step come after the deadline"
        );
        assert_eq!(Nudge::Remind(2).effect(), "remind:2");
        assert_eq!(Nudge::Escalate(0).effect(), "escalate:0");
    }

    #[test]
    fn reminders_are_checked() {
        assert_eq!(check_reminders(None, None, HOUR).unwrap(), None);
        let one = check_reminders(Some(60.0), None, HOUR).unwrap().unwrap();
        assert_eq!(one.times, 1, "one reminder unless told");
        for (after, times) in [
            (Some(60.0), Some(4)),
            (Some(60.0), Some(0)),
            (None, Some(2)),
        ] {
            match check_reminders(after, times, HOUR) {
                Err(Error::Invalid { field, .. }) => assert_eq!(field, "reminders"),
                other => panic!("{after:?} {times:?}: {other:?}"),
            }
        }
        for after in [0.0, -1.0, f64::NAN, 3600.0] {
            match check_reminders(Some(after), None, HOUR) {
                Err(Error::Invalid { field, .. }) => assert_eq!(field, "remind_after_s"),
                other => panic!("{after}: {other:?}"),
            }
        }
    }

    #[test]
    fn escalation_steps_are_checked() {
        assert!(check_escalation(&[step(60.0, "discord:7"), step(120.0, "console")], HOUR).is_ok());
        let bad = [
            vec![step(120.0, "discord:7"), step(60.0, "console")],
            vec![step(4000.0, "discord:7")],
            vec![step(60.0, "nowhere")],
            vec![Escalation {
                after_s: 60.0,
                targets: vec![],
                answerers: vec![],
            }],
            (1..=6)
                .map(|n| step(f64::from(n) * 10.0, "console"))
                .collect(),
        ];
        for steps in bad {
            match check_escalation(&steps, HOUR) {
                Err(Error::Invalid { field, .. }) => assert_eq!(field, "escalate"),
                other => panic!("{steps:?}: {other:?}"),
            }
        }
    }
}
