//! Reminders and escalation steps of unanswered questions, carried out by the sweeper.
//!
//! When they fall due is decided by the question alone ([`Question::nudges`]), and the store's
//! open index holds each pending question under its next due time, so the sweeper that leases
//! the entry (one process, see `Outbox::lease_due`) is the one that nudges. Each nudge is marked
//! as an outbox effect *before* it is sent: with several processes, or a lease that ran out
//! while a slow channel answered, only the process whose mark was new goes on. A crash between
//! the mark and the message loses that one reminder rather than sending it twice; people forgive
//! a missing reminder more easily than a duplicated one.
//!
//! Who may answer after an escalation step is not written anywhere: every process works it out
//! from the clock ([`Question::may_answer`]), so none can disagree with another.

use super::Effects;
use crate::Error;
use crate::bridge::Bridge;
use crate::metrics::DeliveryAction;
use crate::store::Shown;
use askbridge_core::audit::{AuditEntry, AuditEvent};
use askbridge_core::error::Chain;
use askbridge_core::nudge::Nudge;
use askbridge_core::{Kind, Millis, NewQuestion, Question, render};

impl Effects {
    /// Refuses reminders closer together than one chat may get them, and, for approvals,
    /// escalation answerers who are not approvers.
    pub(in crate::bridge) fn check_nudges(
        &self,
        bridge: &Bridge,
        request: &NewQuestion,
    ) -> Result<(), Error> {
        let gap = bridge.options().reminder_gap;
        if request
            .remind_after_s
            .is_some_and(|s| s < gap.as_secs_f64())
        {
            return Err(invalid(
                "remind_after_s",
                format!(
                    "must be at least {} s: one chat gets at most one reminder that often (ASKBRIDGE_REMINDER_GAP_S)",
                    gap.as_secs_f64()
                ),
            ));
        }
        for step in &request.escalate {
            bridge.check_targets(&step.targets)?;
        }
        if request.kind == Kind::Approval {
            let answerers = request.escalate.iter().flat_map(|step| &step.answerers);
            bridge
                .approvals()
                .all_approvers(bridge, "escalate", answerers)?;
        }
        Ok(())
    }

    /// The sweeper's work for a pending question whose entry came due before its deadline: the
    /// nudges due by `now` that are not done yet, then the entry moved to the next one.
    pub(super) async fn nudge(
        &self,
        bridge: &Bridge,
        question: &Question,
        now: Millis,
    ) -> Result<(), Error> {
        let reached: Vec<Nudge> = question
            .nudges()
            .into_iter()
            .filter(|(at, _)| *at <= now)
            .map(|(_, nudge)| nudge)
            .collect();
        // Leased before anything was due (its schedule moved): nothing to read, only put back.
        let done = match reached.is_empty() {
            true => Vec::new(),
            false => self.carry_out(bridge, question, reached, now).await?,
        };
        let next = question.next_due(&done);
        self.store.outbox.reschedule(&question.id, next).await?;
        self.schedule.offer(next);
        Ok(())
    }

    /// Does the `reached` nudges another process has not done, and returns every nudge done.
    async fn carry_out(
        &self,
        bridge: &Bridge,
        question: &Question,
        reached: Vec<Nudge>,
        now: Millis,
    ) -> Result<Vec<String>, Error> {
        let store = &self.store;
        let work = store.outbox.work(&question.id).await?;
        let mut done = work.done;
        let due: Vec<Nudge> = reached
            .into_iter()
            .filter(|nudge| !done.contains(&nudge.effect()))
            .collect();
        // After an outage several reminders may be overdue: only the latest is worth sending.
        let latest_reminder = due
            .iter()
            .rev()
            .find(|n| matches!(n, Nudge::Remind(_)))
            .copied();
        for nudge in due {
            let effect = nudge.effect();
            if store.outbox.mark_effect(&question.id, &effect).await? {
                match nudge {
                    Nudge::Remind(n) if Some(nudge) == latest_reminder => {
                        self.remind(bridge, question, n, &work.shown, now).await?
                    }
                    Nudge::Remind(n) => {
                        tracing::info!(question_id = %question.id, reminder = n, "reminder skipped: a later one is due too");
                    }
                    Nudge::Escalate(step) => {
                        self.escalate(bridge, question, step, &work.shown).await?
                    }
                }
            }
            done.push(effect);
        }
        Ok(done)
    }

    /// Reminder `number`: a reply to each message showing the question, naming who may answer.
    async fn remind(
        &self,
        bridge: &Bridge,
        question: &Question,
        number: u32,
        shown: &[Shown],
        now: Millis,
    ) -> Result<(), Error> {
        let of = question.reminders.map_or(number, |r| r.times);
        let text = render::reminder(question, number, of, now);
        let mention = question.answerers_at(now);
        let mut reached = Vec::new();
        for shown in shown {
            let target = &shown.target;
            let Some(channel) = bridge.channel_for(target) else {
                continue;
            };
            // One reminder a minute per chat, whichever question: a busy group is not flooded.
            let key = format!("remind-chat:{target}");
            if !self
                .store
                .dedupe
                .first_sighting(&key, bridge.options().reminder_gap)
                .await?
            {
                tracing::info!(question_id = %question.id, %target, "reminder skipped: this chat had one less than a minute ago");
                continue;
            }
            match channel
                .remind(question, target, &shown.reference, &text, &mention)
                .await
            {
                Ok(()) => reached.push(target.to_string()),
                Err(error) => {
                    bridge
                        .metrics()
                        .delivery_failed(target.surface(), DeliveryAction::Show);
                    tracing::warn!(question_id = %question.id, %target, error = %Chain(&error), "cannot send a reminder");
                }
            }
        }
        tracing::info!(question_id = %question.id, reminder = number, of, reached = ?reached, "reminded");
        let message = match reached.is_empty() {
            true => format!("reminder {number} of {of}: no chat reached"),
            false => format!("reminder {number} of {of} on {}", reached.join(", ")),
        };
        self.record(AuditEntry::nudged(question, AuditEvent::Reminded, message))
            .await
    }

    /// Escalation step `index`: the question is shown on the step's targets (its answerers may
    /// answer from now on without anything being written).
    async fn escalate(
        &self,
        bridge: &Bridge,
        question: &Question,
        index: usize,
        shown: &[Shown],
    ) -> Result<(), Error> {
        let step = &question.escalate[index];
        for target in &step.targets {
            if shown.iter().any(|s| &s.target == target) {
                continue;
            }
            self.spawn_delivery(bridge, question.clone(), target.clone());
        }
        let mut message = format!("step {} after {} s", index + 1, step.after_s);
        if !step.targets.is_empty() {
            message.push_str(&format!("; shown on {}", step.targets.join(", ")));
        }
        if !step.answerers.is_empty() {
            message.push_str(&format!("; {} may answer", step.answerers.join(", ")));
        }
        tracing::info!(question_id = %question.id, step = index + 1, targets = ?step.targets, answerers = ?step.answerers, "escalated");
        self.record(AuditEntry::nudged(question, AuditEvent::Escalated, message))
            .await
    }

    /// Appends `entry` to the audit trail.
    pub(in crate::bridge) async fn record(&self, entry: AuditEntry) -> Result<(), Error> {
        Ok(self.store.audit.append_audit(&entry).await?)
    }
}

fn invalid(field: &'static str, reason: String) -> Error {
    askbridge_core::Error::Invalid { field, reason }.into()
}
