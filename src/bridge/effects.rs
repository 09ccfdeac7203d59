//! Showing questions, and everything that follows a resolution.
//!
//! After a question is resolved, three things must happen, in any process: the event goes out
//! (waking waiters and event streams everywhere), every message showing the question is edited to
//! its outcome (first answer wins; the other surfaces withdraw their buttons), and the question
//! leaves the open index. Each step is recorded in the store as it completes, so a retry (after
//! a channel outage, or in another process after a crash) does only what is left.

use super::Bridge;
use super::waiters::{Pumped, next_event};
use crate::Error;
use crate::flows::Resume;
use crate::signing;
use crate::store::{Event, Shown};
use askbridge_core::audit::AuditEntry;
use askbridge_core::{Actor, Millis, Question, QuestionId, Transition, identity};
use std::time::Duration;

/// How often the sweeper looks for due work. Expiry happens within this of a deadline.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// How long a leased entry is hidden from other sweepers while one works on it.
const LEASE: Duration = Duration::from_secs(30);
/// How many due entries one sweep takes.
const SWEEP_BATCH: usize = 256;
/// When a channel is down, withdrawing is retried this much later.
const WITHDRAW_RETRY: Duration = Duration::from_secs(15);
/// Longest wait between attempts to show a question on a channel that is down.
const MAX_SHOW_BACKOFF: Duration = Duration::from_secs(60);
/// Purging old records runs this often.
const PURGE_EVERY: Duration = Duration::from_secs(300);

/// How long after a resolution its outbox entry waits for the winner's own settle before any
/// sweeper does it.
const SETTLE_GRACE: Duration = Duration::from_secs(10);

const EFFECT_EVENT: &str = "event";

const EFFECT_RESUME: &str = "resume";
const EFFECT_AUDIT: &str = "audit";
const EFFECT_RULE: &str = "rule";
const EFFECT_CALLBACK: &str = "callback";
/// A run not yet parked on its resolved question is tried again this soon.
const RESUME_RETRY: Duration = Duration::from_millis(500);
/// A failed callback is tried again this much later.
const CALLBACK_RETRY: Duration = Duration::from_secs(30);
/// Effects still failing this long after the resolution are given up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(24 * 3600);

fn withdraw_effect(target: &str) -> String {
    format!("withdraw:{target}")
}

impl Bridge {
    /// Shows `question` in `target` in the background, retrying a channel that is down until the
    /// question is resolved.
    pub(super) fn spawn_delivery(&self, question: Question, target: String) {
        let bridge = self.clone();
        tokio::spawn(async move { bridge.deliver(question, target).await });
    }

    async fn deliver(&self, question: Question, target: String) {
        let Some(channel) = self.channel_for(&target) else {
            tracing::warn!(question_id = %question.id, target, "no channel for target; not shown");
            return;
        };
        let mut backoff = Duration::from_secs(1);
        loop {
            match channel.show(&question, &target).await {
                Ok(reference) => {
                    self.after_shown(&question.id, Shown { target, reference })
                        .await;
                    return;
                }
                Err(error) if error.is_retryable() => {
                    tracing::warn!(question_id = %question.id, target, %error, retry_in = ?backoff, "cannot show question; will retry");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_SHOW_BACKOFF);
                    match self.inner.store.get(&question.id).await {
                        Ok(Some(current)) if current.is_pending() => {}
                        Ok(_) => return,
                        Err(error) => {
                            tracing::warn!(question_id = %question.id, %error, "store unavailable")
                        }
                    }
                }
                Err(error) => {
                    tracing::error!(question_id = %question.id, target, %error, "cannot show question; giving up on this target");
                    return;
                }
            }
        }
    }

    /// Records a delivery. If the question was resolved meanwhile, the settle that ran may have
    /// missed this message: settle again, which withdraws what is left.
    async fn after_shown(&self, id: &QuestionId, shown: Shown) {
        if let Err(error) = self.inner.store.record_shown(id, &shown).await {
            tracing::error!(question_id = %id, %error, "could not record where the question was shown");
        }
        match self.inner.store.get(id).await {
            Ok(Some(current)) if !current.is_pending() => self.spawn_settle(current),
            Ok(_) => {}
            Err(error) => tracing::warn!(question_id = %id, %error, "store unavailable"),
        }
    }

    /// Runs the effects of a resolution in the background.
    /// What follows a won claim: the question's outbox entry becomes due soon — so that if this
    /// process dies before its effects are done, any process's sweeper does them within seconds,
    /// not at the question's deadline — and the effects start here at once.
    pub(super) async fn after_win(&self, resolved: &Question) {
        let soon = Millis::now().after(SETTLE_GRACE);
        if let Err(error) = self.inner.store.reschedule(&resolved.id, soon).await {
            tracing::warn!(question_id = %resolved.id, %error, "cannot mark the resolution's effects as due");
        }
        self.spawn_settle(resolved.clone());
    }

    /// An approval's "always": creates its rule (and allows what it matches), once.
    pub(super) async fn create_rule_now(&self, question: &Question) -> Result<(), Error> {
        self.create_rule(question).await?;
        self.inner
            .store
            .mark_effect(&question.id, EFFECT_RULE)
            .await
            .map(drop)
    }

    pub(super) fn spawn_settle(&self, question: Question) {
        let bridge = self.clone();
        tokio::spawn(async move {
            if let Err(error) = bridge.settle(&question).await {
                tracing::warn!(question_id = %question.id, %error, "effects interrupted; the sweeper will retry");
            }
        });
    }

    /// Does what a resolution requires and is not done yet; leaves the open index when all is.
    /// One settle per question at a time in this process: a second one (a late delivery, a
    /// sweep) is put off a moment instead of doing the same effects twice.
    pub(super) async fn settle(&self, question: &Question) -> Result<(), Error> {
        let Some(_settling) = Settling::start(self, &question.id) else {
            let later = Millis::now().after(Duration::from_secs(1));
            return self.inner.store.reschedule(&question.id, later).await;
        };
        self.settle_effects(question).await
    }

    async fn settle_effects(&self, question: &Question) -> Result<(), Error> {
        let store = &self.inner.store;

        let id = &question.id;
        let done = store.effects_done(id).await?;
        if !done.iter().any(|e| e == EFFECT_EVENT) {
            store.publish(&Event::of(question)).await?;
            if store.mark_effect(id, EFFECT_EVENT).await? {
                self.inner.metrics.resolved(question);
            }
        }
        if !done.iter().any(|e| e == EFFECT_AUDIT) {
            store.append_audit(&AuditEntry::resolved(question)).await?;
            store.mark_effect(id, EFFECT_AUDIT).await?;
        }
        let creates_rule = question
            .resolution
            .as_ref()
            .is_some_and(|r| r.rule_id.is_some() && r.via != super::approvals::RULE_VIA);
        if creates_rule && !done.iter().any(|e| e == EFFECT_RULE) {
            self.create_rule_now(question).await?;
        }
        // The soonest time something left undone should be tried again, if anything is.
        let mut retry: Option<Duration> = None;
        let mut retry_in = |after: Duration| retry = Some(retry.map_or(after, |r| r.min(after)));
        for shown in store.shown(id).await? {
            let effect = withdraw_effect(&shown.target);
            if done.contains(&effect) {
                continue;
            }
            if self.withdraw(question, &shown).await {
                store.mark_effect(id, &effect).await?;
            } else if self.given_up(question) {
                tracing::error!(question_id = %id, target = %shown.target, "giving up withdrawing after a day of failures");
                store.mark_effect(id, &effect).await?;
            } else {
                retry_in(WITHDRAW_RETRY);
            }
        }
        if question.run_id.is_some() && !done.iter().any(|e| e == EFFECT_RESUME) {
            match self.resume(question).await {
                Ok(Resume::Done) => {
                    store.mark_effect(id, EFFECT_RESUME).await?;
                }
                Ok(Resume::NotYet) => retry_in(RESUME_RETRY),
                Err(error) => {
                    tracing::warn!(question_id = %id, %error, "cannot resume the run yet");
                    retry_in(RESUME_RETRY * 5);
                }
            }
        }
        if question.callback_url.is_some() && !done.iter().any(|e| e == EFFECT_CALLBACK) {
            match self.post_callback(question).await {
                Ok(()) => {
                    store.mark_effect(id, EFFECT_CALLBACK).await?;
                }
                Err(error) if self.given_up(question) => {
                    tracing::error!(question_id = %id, %error, "giving up on the callback after a day of failures");
                    store.mark_effect(id, EFFECT_CALLBACK).await?;
                }
                Err(error) => {
                    tracing::warn!(question_id = %id, %error, "callback failed; will retry");
                    retry_in(CALLBACK_RETRY);
                }
            }
        }
        match retry {
            Some(after) => store.reschedule(id, Millis::now().after(after)).await,
            None => store.settle(id, Some(question)).await,
        }
    }

    /// POSTs the resolved question, signed, to its callback URL.
    async fn post_callback(&self, question: &Question) -> Result<(), String> {
        let (Some(url), Some(secret)) = (&question.callback_url, &self.options().signing_secret)
        else {
            return Ok(());
        };
        let body = serde_json::to_vec(question).expect("a question always serialises");
        let signature = signing::sign(secret.expose().as_bytes(), Millis::now(), &body);
        let response = self
            .http_client()
            .post(url)
            .header("content-type", "application/json")
            .header(signing::SIGNATURE_HEADER, signature)
            .body(body)
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        if response.status().is_success() {
            tracing::info!(question_id = %question.id, "callback delivered");
            Ok(())
        } else {
            Err(format!("the callback URL answered {}", response.status()))
        }
    }

    /// True a day after the resolution: effects still failing then are given up, loudly, rather
    /// than retried forever.
    fn given_up(&self, question: &Question) -> bool {
        question
            .resolution
            .as_ref()
            .is_some_and(|r| Millis::now().since(r.at) > GIVE_UP_AFTER)
    }

    /// Edits one delivery to the outcome. False when it should be retried later.
    async fn withdraw(&self, question: &Question, shown: &Shown) -> bool {
        let Some(channel) = self.channel_for(&shown.target) else {
            tracing::warn!(question_id = %question.id, target = %shown.target, "no channel to withdraw from here; skipping");
            return true;
        };
        match channel
            .withdraw(question, &shown.target, &shown.reference)
            .await
        {
            Ok(()) => true,
            Err(error) if error.is_retryable() => {
                tracing::warn!(question_id = %question.id, target = %shown.target, %error, "cannot withdraw yet; will retry");
                false
            }
            Err(error) => {
                tracing::warn!(question_id = %question.id, target = %shown.target, %error, "cannot withdraw; giving up");
                true
            }
        }
    }

    /// Expires a pending question whose deadline passed, and settles it.
    async fn expire(&self, question: &Question) -> Result<(), Error> {
        match self
            .claim(question, Transition::Expire, Actor::timeout())
            .await
        {
            Ok(_) | Err(Error::AlreadyResolved(_)) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// One pass of the sweeper: expire what is overdue, finish interrupted effects, take over
    /// runs whose executor died.
    pub async fn sweep_once(&self) -> Result<usize, Error> {
        if let Err(error) = self.recover_runs().await {
            tracing::warn!(%error, "cannot recover runs");
        }
        let store = &self.inner.store;
        let now = Millis::now();
        let due = store.lease_due(now, LEASE, SWEEP_BATCH).await?;
        for id in &due {
            match store.get(id).await? {
                None => store.settle(id, None).await?,
                Some(question) if question.is_pending() && now >= question.expires_at => {
                    self.expire(&question).await?;
                }
                // Leased while not yet due (its deadline moved); put it back.
                Some(question) if question.is_pending() => {
                    store.reschedule(id, question.expires_at).await?;
                }
                Some(question) => self.spawn_settle(question),
            }
        }
        Ok(due.len())
    }

    pub(super) async fn sweep_forever(self) {
        let mut shutdown = self.shutdown_signal();
        let mut last_purge = Millis::now();
        loop {
            if let Err(error) = self.sweep_once().await {
                tracing::warn!(%error, "sweep failed; retrying");
            }
            let now = Millis::now();
            if now.since(last_purge) >= PURGE_EVERY {
                last_purge = now;
                match self.inner.store.purge(now).await {
                    Ok(0) => {}
                    Ok(purged) => tracing::info!(purged, "old records purged"),
                    Err(error) => tracing::warn!(%error, "purge failed"),
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(SWEEP_EVERY) => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    /// At start-up: finishes effects a previous process left undone, shows pending questions
    /// where no delivery was recorded, and leaves overdue ones to the first sweep.
    pub(super) async fn recover(&self) -> Result<(), Error> {
        let store = &self.inner.store;
        let (mut resolved, mut reshown) = (0usize, 0usize);
        for id in store.open_ids().await? {
            let Some(question) = store.get(&id).await? else {
                store.settle(&id, None).await?;
                continue;
            };
            if !question.is_pending() {
                resolved += 1;
                store.reschedule(&id, Millis::now()).await?;
                continue;
            }
            let shown = store.shown(&id).await?;
            for target in &question.targets {
                if !shown.iter().any(|s| &s.target == target) && self.channel_for(target).is_some()
                {
                    reshown += 1;
                    self.spawn_delivery(question.clone(), target.clone());
                }
            }
        }
        if resolved + reshown > 0 {
            tracing::info!(resolved, reshown, "recovered work left by an earlier run");
        }
        Ok(())
    }

    /// Wakes this process's waiters from the store's events (which come from every process).
    pub(super) async fn pump_events(self) {
        let mut events = self.inner.store.subscribe();
        let mut shutdown = self.shutdown_signal();
        loop {
            let pumped = tokio::select! {
                pumped = next_event(&mut events) => pumped,
                _ = shutdown.changed() => return,
            };
            match pumped {
                Pumped::Event(event) => self.inner.waiters.wake(&event.question),
                Pumped::Lagged => self.recheck_waiters().await,
                Pumped::Closed => return,
            }
        }
    }

    async fn recheck_waiters(&self) {
        for id in self.inner.waiters.ids() {
            if let Ok(Some(question)) = self.inner.store.get(&id).await {
                self.inner.waiters.wake(&question);
            }
        }
    }

    /// Says `text` in `target` (a reply that is not an edit of a question).
    pub async fn say(&self, target: &str, text: &str) -> Result<(), Error> {
        let channel = self
            .channel_for(target)
            .ok_or_else(|| Error::UnknownTarget {
                target: target.to_owned(),
                hint: format!("no `{}` channel exists", identity::surface_of(target)),
            })?;
        channel.say(target, text).await.map_err(Error::from)
    }
}

/// Marks a question as being settled by this process until dropped.
struct Settling<'a> {
    bridge: &'a Bridge,
    id: QuestionId,
}

impl<'a> Settling<'a> {
    fn start(bridge: &'a Bridge, id: &QuestionId) -> Option<Self> {
        let first = bridge.settling().insert(id.clone());
        first.then(|| Settling {
            bridge,
            id: id.clone(),
        })
    }
}

impl Drop for Settling<'_> {
    fn drop(&mut self) {
        self.bridge.settling().remove(&self.id);
    }
}
