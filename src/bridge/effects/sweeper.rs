//! The background tasks: the sweeper (expiry driven by the open index, and work a crashed
//! process left), recovery at start-up, and the pump that wakes this process's waiters from the
//! store's events.
//!
//! Recovery runs in the background before the sweeper, not before the process serves: it reads
//! every open question, and with 100,000 pending on the embedded store that kept a restarted
//! process from serving for 7.45 s.
//!
//! The sweeper does not poll the store four times a second. Every process sees every event, so it
//! knows each question's deadline as it is asked and each resolution as it happens; the
//! [`Schedule`] keeps the earliest time anything may be due, and the sweeper sleeps until then.
//! A slow poll of the store's own earliest due time is the safety net (entries rescheduled by
//! another process, events missed while the store was unreachable).

use super::Effects;
use crate::Error;
use crate::bridge::waiters::{Pumped, next_event};
use crate::bridge::{Bridge, SETTLE_GRACE};
use crate::store::{Event, EventKind};
use askbridge_core::error::Chain;
use askbridge_core::run::RunState;
use askbridge_core::tally;
use askbridge_core::{Claim, Millis, Question, QuestionId, RunId};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// The sweeper never runs more often than this (under load, due work is taken in batches).
const SWEEP_AT_MOST_EVERY: Duration = Duration::from_millis(250);
/// How often the store's earliest due time is read, and runs whose process died are looked for.
const POLL_EVERY: Duration = Duration::from_secs(5);
/// How long a leased entry is hidden from other sweepers while one works on it.
const LEASE: Duration = Duration::from_secs(30);
/// How many due entries one sweep takes.
const SWEEP_BATCH: usize = 256;
/// Purging old records runs this often.
const PURGE_EVERY: Duration = Duration::from_secs(300);
/// This process's waiters are re-read this often, in case an event was lost.
const RECHECK_WAITERS_EVERY: Duration = Duration::from_secs(60);

/// The earliest time something may be due in the open index, as far as this process knows.
#[derive(Debug, Default)]
pub(super) struct Schedule {
    next: Mutex<Option<Millis>>,
    wake: Notify,
}

impl Schedule {
    /// Something may be due at `at`: the sweeper wakes then (at the latest).
    pub(super) fn offer(&self, at: Millis) {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        if next.is_none_or(|current| at < current) {
            *next = Some(at);
            drop(next);
            self.wake.notify_one();
        }
    }

    /// True when something may be due at `now`; forgets that time (the sweep will take it).
    fn due(&self, now: Millis) -> bool {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        match *next {
            Some(at) if at <= now => {
                *next = None;
                true
            }
            _ => false,
        }
    }

    /// How long until the known next due time, if there is one.
    fn until_next(&self, now: Millis) -> Option<Duration> {
        let next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        next.map(|at| at.since(now))
    }
}

/// How long a take-up prompted by another process's event waits for this process's own news.
const TAKE_UP_DELAY: Duration = Duration::from_millis(100);

impl Effects {
    /// Expires a pending question whose deadline passed, and settles it.
    async fn expire(&self, bridge: &Bridge, question: &Question) -> Result<(), Error> {
        match bridge
            .resolver()
            .claim(bridge, question, Claim::expire(Millis::now()))
            .await
        {
            Ok(_) | Err(Error::AlreadyResolved(_)) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// One pass of the sweeper: expire what is overdue and finish interrupted effects.
    pub(in crate::bridge) async fn sweep_once(&self, bridge: &Bridge) -> Result<usize, Error> {
        let store = &self.store;
        let now = Millis::now();
        let due = store.outbox.lease_due(now, LEASE, SWEEP_BATCH).await?;
        for id in &due {
            match store.questions.get(id).await? {
                None => store.outbox.finish(id, None, &[], None, None).await?,
                Some(question) if question.is_pending() && now >= question.expires_at => {
                    bridge.metrics().outbox_lag(now.since(question.expires_at));
                    self.expire(bridge, &question).await?;
                }
                // A quorum met by a vote whose process died before its claim.
                Some(question) if question.is_pending() && tally::is_met(&question) => {
                    match bridge.resolver().complete_quorum(bridge, &question).await {
                        Ok(_) | Err(Error::AlreadyResolved(_)) => {}
                        Err(error) => return Err(error),
                    }
                }
                // Due before its deadline: a reminder or an escalation step (or nothing, when
                // another process did them; the entry then moves to what is next).
                Some(question) if question.is_pending() => {
                    self.nudge(bridge, &question, now).await?
                }
                Some(question) => {
                    // Effects left undone: due a grace after the resolution (see `SETTLE_GRACE`).
                    if let Some(resolution) = &question.resolution {
                        let due = resolution.at.after(SETTLE_GRACE);
                        bridge.metrics().outbox_lag(now.since(due));
                    }
                    self.spawn_settle(bridge, question)
                }
            }
        }
        if due.len() == SWEEP_BATCH {
            // More may be waiting: come back at once.
            self.schedule.offer(now);
        }
        Ok(due.len())
    }

    /// Reads the store's earliest due time into the schedule.
    async fn offer_next_due(&self) {
        match self.store.outbox.next_due().await {
            Ok(Some(at)) => self.schedule.offer(at),
            Ok(None) => {}
            Err(error) => tracing::warn!(error = %Chain(&error), "cannot read the open index"),
        }
    }

    /// Reads the store's earliest due time, takes over runs whose process died, and closes
    /// sessions whose `askbridge exec` died.
    async fn poll(&self, bridge: &Bridge) {
        bridge.exec_sessions().close_lapsed(bridge).await;
        self.offer_next_due().await;
        if let Some(runner) = bridge.runner()
            && let Err(error) = runner.recover(bridge).await
        {
            tracing::warn!(error = %Chain(&error), "cannot recover runs");
        }
    }

    async fn sweep_forever(bridge: Bridge) {
        let effects = bridge.effects();
        let mut shutdown = bridge.shutdown_signal();
        let (mut last_poll, mut last_purge) = (None::<Millis>, Millis::now());
        loop {
            let now = Millis::now();
            if last_poll.is_none_or(|at| now.since(at) >= POLL_EVERY) {
                last_poll = Some(now);
                effects.poll(&bridge).await;
            }
            if effects.schedule.due(Millis::now()) {
                match effects.sweep_once(&bridge).await {
                    // The schedule keeps only the earliest time it was offered: a later one,
                    // offered before this sweep and not due at it, is in the store's open index
                    // (without this read it waited for the next poll, up to 5 s late).
                    Ok(_) => effects.offer_next_due().await,
                    Err(error) => {
                        tracing::warn!(error = %Chain(&error), "sweep failed; retrying");
                        effects
                            .schedule
                            .offer(Millis::now().after(Duration::from_secs(1)));
                    }
                }
            }
            if now.since(last_purge) >= PURGE_EVERY {
                last_purge = now;
                match effects.store.admin.purge(now).await {
                    Ok(0) => {}
                    Ok(purged) => tracing::info!(purged, "old records purged"),
                    Err(error) => tracing::warn!(error = %Chain(&error), "purge failed"),
                }
            }
            let sleep = effects
                .schedule
                .until_next(Millis::now())
                .unwrap_or(POLL_EVERY)
                .clamp(SWEEP_AT_MOST_EVERY, POLL_EVERY);
            tokio::select! {
                _ = tokio::time::sleep(sleep) => {}
                // Something sooner was offered; still no more often than the floor.
                _ = effects.schedule.wake.notified() => {
                    tokio::time::sleep(SWEEP_AT_MOST_EVERY).await;
                }
                _ = shutdown.changed() => return,
            }
        }
    }

    /// At start-up: finishes effects a previous process left undone, shows pending questions
    /// where no delivery was recorded, and leaves overdue ones to the first sweep.
    /// Recovery, then the sweeper, as one background task. Recovery that fails (the store
    /// unreachable) is tried again every second, skipping the questions it already handled.
    /// It leaves alone the questions asked since `started` (when this process's bridge started):
    /// this process shows those itself, and recovery, running beside it, would show them twice.
    pub(in crate::bridge) async fn recover_then_sweep(bridge: Bridge, started: Millis) {
        let effects = bridge.effects();
        let mut shutdown = bridge.shutdown_signal();
        let mut handled = HashSet::new();
        loop {
            let recovered = tokio::select! {
                recovered = effects.recover(&bridge, started, &mut handled) => recovered,
                _ = shutdown.changed() => return,
            };
            let Err(error) = recovered else { break };
            tracing::warn!(error = %Chain(&error), "recovery failed; retrying in 1 s");
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = shutdown.changed() => return,
            }
        }
        Self::sweep_forever(bridge).await;
    }

    async fn recover(
        &self,
        bridge: &Bridge,
        started: Millis,
        handled: &mut HashSet<QuestionId>,
    ) -> Result<(), Error> {
        let store = &self.store;
        let (mut resolved, mut reshown) = (0usize, 0usize);
        for id in store.outbox.open_ids().await? {
            if !handled.insert(id.clone()) {
                continue;
            }
            let Some(question) = store.questions.get(&id).await? else {
                store.outbox.finish(&id, None, &[], None, None).await?;
                continue;
            };
            if !question.is_pending() {
                resolved += 1;
                store.outbox.reschedule(&id, Millis::now()).await?;
                continue;
            }
            if question.created_at >= started {
                continue;
            }
            self.schedule.offer(question.next_due(&[]));
            let shown = store.deliveries.shown(&id).await?;
            for target in &question.targets {
                if !shown.iter().any(|s| &s.target == target)
                    && bridge.channel_for(target).is_some()
                {
                    reshown += 1;
                    self.spawn_delivery(bridge, question.clone(), target.clone());
                }
            }
        }
        if resolved > 0 {
            self.schedule.offer(Millis::now());
        }
        if resolved + reshown > 0 {
            tracing::info!(resolved, reshown, "recovered work left by an earlier run");
        }
        Ok(())
    }

    /// Wakes this process's waiters from the store's events (which come from every process), and
    /// tells the sweeper when something will be due.
    pub(in crate::bridge) async fn pump_events(bridge: Bridge) {
        let effects = bridge.effects();
        let mut events = effects.store.events.subscribe();
        let mut missed = effects.store.events.missed();
        let mut shutdown = bridge.shutdown_signal();
        let mut recheck = tokio::time::interval(RECHECK_WAITERS_EVERY);
        recheck.tick().await;
        loop {
            let pumped = tokio::select! {
                pumped = next_event(&mut events) => pumped,
                _ = recheck.tick() => Pumped::Lagged,
                _ = changed(&mut missed) => Pumped::Lagged,
                _ = shutdown.changed() => return,
            };
            match pumped {
                Pumped::Event(event) => effects.note(&bridge, &event),
                Pumped::Lagged => effects.recheck_waiters(&bridge).await,
                Pumped::Closed => return,
            }
        }
    }

    /// What an event means here: waiters to wake, and when the sweeper may have work.
    fn note(&self, bridge: &Bridge, event: &Event) {
        match event {
            Event::Question { kind, question } => {
                if *kind == EventKind::Asked {
                    bridge.recent().asked(question);
                    self.schedule.offer(question.next_due(&[]));
                } else if let Some(resolution) = &question.resolution {
                    // The winner finishes the effects at once; if it died, this is when any
                    // sweeper takes over.
                    self.schedule.offer(resolution.at.after(SETTLE_GRACE));
                    self.take_up_run(bridge, question);
                    bridge.recent().resolved(question);
                }
                // The pump awaits its next event next, which lets the woken run.
                let _ = bridge.waiters().wake(question);
            }
            // This process's own news coming back: nothing new to remember or to wake with.
            Event::Run { run, .. } if bridge.recent().knows_run(run) => {}
            Event::Run { run, .. } => {
                // Our own park's news came with its question; the event does not carry it. Keep
                // it rather than make the next waiter read it back.
                let question = bridge
                    .recent()
                    .run_with(&run.id, |known| {
                        known
                            .question
                            .as_ref()
                            .filter(|q| run.waiting_on.as_ref() == Some(&q.id))
                            .cloned()
                    })
                    .flatten();
                bridge.run_news(run.clone(), question)
            }
            // Rules are read from the store when an approval needs them; nothing to do here.
            Event::Rule { .. } => {}
        }
    }

    /// A question of a run was resolved, maybe by a process that runs no flows: a process that
    /// does tries to take the run up at once (one of them gets it; for the rest it is a no-op).
    fn take_up_run(&self, bridge: &Bridge, question: &Question) {
        let Some(runner) = bridge.runner() else {
            return;
        };
        let Some(run_id) = question.run_id.clone() else {
            return;
        };
        // Usually this process's own answer, whose news is already here: nothing to take up.
        if Self::run_moved_on(bridge, &run_id, question) {
            return;
        }
        let (bridge, question) = (bridge.clone(), question.clone());
        tokio::spawn(async move {
            // The event can overtake the claim's own reply: if this process won the claim, it
            // has the run already. A moment's wait lets its news land, and spares the store a
            // take-up that can only fail.
            tokio::time::sleep(TAKE_UP_DELAY).await;
            if Self::run_moved_on(&bridge, &run_id, &question) {
                return;
            }
            if let Err(error) = runner.resume(&bridge, &question).await {
                tracing::warn!(question_id = %question.id, error = %Chain(&error), "cannot take up the run yet");
            }
        });
    }

    /// What this process heard says the run is past `question`: executing here, ended, or with
    /// the answer in its journal.
    fn run_moved_on(bridge: &Bridge, run_id: &RunId, question: &Question) -> bool {
        bridge
            .recent()
            .run_with(run_id, |known| {
                let ours = known.run.state == RunState::Running
                    && known.run.owner.as_deref() == Some(bridge.owner_id());
                ours || known.run.state.is_final() || known.run.knows(&question.id)
            })
            .unwrap_or(false)
    }

    async fn recheck_waiters(&self, bridge: &Bridge) {
        for id in bridge.waiters().ids() {
            if let Ok(Some(question)) = self.store.questions.get(&id).await {
                bridge.waiters().wake(&question).let_run().await;
            }
        }
        for id in bridge.waiters().run_ids() {
            if let Ok(Some(run)) = self.store.runs.get_run(&id).await {
                bridge.run_news(Arc::new(run), None);
            }
        }
    }
}

/// Resolves when the store says events may have been missed; never for a store that cannot
/// miss any (or once it is gone).
async fn changed(missed: &mut Option<watch::Receiver<u64>>) {
    if let Some(receiver) = missed
        && receiver.changed().await.is_ok()
    {
        return;
    }
    *missed = None;
    std::future::pending::<()>().await
}
