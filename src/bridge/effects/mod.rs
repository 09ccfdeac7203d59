//! Showing questions, and everything that follows a resolution.
//!
//! The resolution's event and audit record are written by the store with the claim itself. What
//! remains, in any process: every message showing the question is edited to its outcome (first
//! answer wins; the other surfaces withdraw their buttons), an "always" answer's rule is created,
//! a waiting run is resumed, a callback is posted, and the question leaves the open index. Each
//! step is recorded in the store as it completes, so a retry (after a channel outage, or in another
//! process after a crash) does only what is left.

use crate::Error;
use crate::bridge::roles::EffectsRoles;
use crate::bridge::runner::{Ahead, Resume};
use crate::bridge::waiters::Woken;
use crate::bridge::{Bridge, Runner, SETTLE_GRACE};
use crate::metrics::DeliveryAction;
use crate::signing;
use crate::store::{Claimed, Shown, Work};
use askbridge_core::error::Chain;
use askbridge_core::{Millis, Question, QuestionId, Target};
use std::sync::Arc;
use std::time::Duration;
use sweeper::Schedule;

mod nudges;
mod settling;
mod sweeper;

/// When a channel is down, withdrawing is retried this much later.
const WITHDRAW_RETRY: Duration = Duration::from_secs(15);
/// Longest wait between attempts to show a question on a channel that is down.
const MAX_SHOW_BACKOFF: Duration = Duration::from_secs(60);
const EFFECT_RESUME: &str = "resume";
const EFFECT_CALLBACK: &str = "callback";
/// A run not yet parked on its resolved question is tried again this soon.
const RESUME_RETRY: Duration = Duration::from_millis(500);
/// A failed callback is tried again this much later.
const CALLBACK_RETRY: Duration = Duration::from_secs(30);
/// Effects still failing this long after the resolution are given up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(24 * 3600);

fn withdraw_effect(target: &Target) -> String {
    format!("withdraw:{target}")
}

/// The effects' part of the bridge (with `sweeper.rs` and `nudges.rs`): see the module
/// documentation.
pub(super) struct Effects {
    store: EffectsRoles,
    /// When the sweeper may next find something due.
    schedule: Schedule,
    /// Questions this process is settling right now.
    settlings: settling::Settlings,
    /// For callback URLs: connects only where `callback_egress` allows.
    callbacks: reqwest::Client,
}

impl Effects {
    pub(super) fn new(store: EffectsRoles, callbacks: reqwest::Client) -> Self {
        Effects {
            store,
            schedule: Schedule::default(),
            settlings: settling::Settlings::default(),
            callbacks,
        }
    }

    /// Shows `question` in `target` in the background, retrying a channel that is down until the
    /// question is resolved.
    pub(super) fn spawn_delivery(&self, bridge: &Bridge, question: Question, target: Target) {
        let bridge = bridge.clone();
        tokio::spawn(async move { bridge.effects().deliver(&bridge, question, target).await });
    }

    async fn deliver(&self, bridge: &Bridge, question: Question, target: Target) {
        let Some(channel) = bridge.channel_for(&target) else {
            tracing::warn!(question_id = %question.id, %target, "no channel for target; not shown");
            return;
        };
        let mut backoff = Duration::from_secs(1);
        loop {
            match channel.show(&question, &target).await {
                Ok(reference) => {
                    self.after_shown(bridge, &question.id, Shown { target, reference })
                        .await;
                    return;
                }
                Err(error) if error.is_retryable() => {
                    bridge
                        .metrics()
                        .delivery_failed(target.surface(), DeliveryAction::Show);
                    tracing::warn!(question_id = %question.id, %target, error = %Chain(&error), retry_in = ?backoff, "cannot show question; will retry");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_SHOW_BACKOFF);
                    match self.store.questions.get(&question.id).await {
                        Ok(Some(current)) if current.is_pending() => {}
                        Ok(_) => return,
                        Err(error) => {
                            tracing::warn!(question_id = %question.id, error = %Chain(&error), "store unavailable")
                        }
                    }
                }
                Err(error) => {
                    bridge
                        .metrics()
                        .delivery_failed(target.surface(), DeliveryAction::Show);
                    tracing::error!(question_id = %question.id, %target, error = %Chain(&error), "cannot show question; giving up on this target");
                    return;
                }
            }
        }
    }

    /// Records a delivery. If the question was resolved meanwhile, the settle that ran may have
    /// missed this message: settle again, which withdraws what is left. The store has made such
    /// a question due in the same step as the record, so that if this settle cannot (the store
    /// failing, this process dying), a sweeper does it after the grace. The record says whether
    /// the question is resolved; only if so, or if the record failed, is the question read.
    async fn after_shown(&self, bridge: &Bridge, id: &QuestionId, shown: Shown) {
        let settle_at = Millis::now().after(SETTLE_GRACE);
        let recorded = self.store.deliveries.record_shown(id, &shown, settle_at);
        match recorded.await {
            Ok(false) => return,
            Ok(true) => {}
            Err(error) => {
                tracing::error!(question_id = %id, error = %Chain(&error), "could not record where the question was shown");
            }
        }
        match self.store.questions.get(id).await {
            Ok(Some(current)) if !current.is_pending() => self.spawn_settle(bridge, current),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(question_id = %id, error = %Chain(&error), "store unavailable")
            }
        }
    }

    /// What follows a claim this process won: a run handed over with the claim starts executing
    /// here, the effects start (the store has made the outbox entry due soon, so that if this
    /// process dies first, any process's sweeper does them within seconds), and its waiters
    /// here are woken (other processes hear of it from the store's events). `ahead` is the run
    /// the claim saved parked on its next question, which it stored. Returns what the claimer
    /// awaits before it goes on: see [`Woken`].
    pub(super) fn after_win(
        &self,
        bridge: &Bridge,
        claimed: Claimed,
        ahead: Option<Ahead>,
    ) -> Woken {
        let Claimed {
            question,
            work,
            run,
            finished,
            ..
        } = claimed;
        bridge.metrics().resolved(&question);
        bridge.recent().resolved(&question);
        let handed_over = match (run, bridge.runner(), ahead) {
            (_, _, Some(Ahead { run, next, .. })) => {
                tracing::info!(run_id = %run.id, question_id = %question.id, next_question_id = %next.id, "run resumed and waits for an answer (carried ahead with the claim)");
                let run = Arc::new(run);
                bridge.run_news(run.clone(), Some(Arc::new(next.clone())));
                let bridge = bridge.clone();
                tokio::spawn(async move {
                    if let Err(error) = bridge.introduce(next).await {
                        tracing::warn!(run_id = %run.id, error = %Chain(&error), "cannot show the run's next question yet");
                    }
                });
                true
            }
            (Some(run), Some(runner), None) => {
                tracing::info!(run_id = %run.id, question_id = %question.id, "run resumed");
                bridge.run_news(Arc::new(run.clone()), None);
                runner.drive(bridge, run, question.clone());
                true
            }
            _ => false,
        };
        // Unless the claim did all there was to do.
        if !finished {
            let (bridge, question) = (bridge.clone(), question.clone());
            tokio::spawn(async move {
                let settled = bridge
                    .effects()
                    .settle(&bridge, &question, Some(work), handed_over);
                if let Err(error) = settled.await {
                    tracing::warn!(question_id = %question.id, error = %Chain(&error), "effects interrupted; the sweeper will retry");
                }
            });
        }
        bridge.waiters().wake(&question)
    }

    pub(super) fn spawn_settle(&self, bridge: &Bridge, question: Question) {
        let bridge = bridge.clone();
        tokio::spawn(async move {
            if let Err(error) = bridge
                .effects()
                .settle(&bridge, &question, None, false)
                .await
            {
                tracing::warn!(question_id = %question.id, error = %Chain(&error), "effects interrupted; the sweeper will retry");
            }
        });
    }

    /// Does what a resolution requires and is not done yet (`work` says what is done, when the
    /// caller knows; `resumed` when the claim handed its run over), then records it all and
    /// leaves the open index, or schedules a retry, in one store call. One settle per question at
    /// a time in this process: a second one (a late delivery, a sweep) makes the running one go
    /// once more instead of doing the same effects twice (`settling.rs`).
    pub(super) async fn settle(
        &self,
        bridge: &Bridge,
        question: &Question,
        work: Option<Work>,
        resumed: bool,
    ) -> Result<(), Error> {
        let Some(mut settling) = self.settlings.start(&question.id) else {
            return Ok(());
        };
        let mut work = match work {
            Some(work) => work,
            None => self.store.outbox.work(&question.id).await?,
        };
        loop {
            self.settle_effects(bridge, question, work, resumed).await?;
            if !settling.again() {
                return Ok(());
            }
            work = self.store.outbox.work(&question.id).await?;
        }
    }

    async fn settle_effects(
        &self,
        bridge: &Bridge,
        question: &Question,
        work: Work,
        resumed: bool,
    ) -> Result<(), Error> {
        let id = &question.id;
        let Work { shown, done } = work;
        let shown_seen = shown.len();
        let creates_rule = question
            .resolution
            .as_ref()
            .is_some_and(|r| r.creates_rules());
        if creates_rule && !crate::bridge::approvals::rule_done(&done) {
            bridge.approvals().create_rule_now(bridge, question).await?;
        }
        let mut finished: Vec<String> = Vec::new();
        // The soonest time something left undone should be tried again, if anything is.
        let mut retry: Option<Duration> = None;
        let mut retry_in = |after: Duration| retry = Some(retry.map_or(after, |r| r.min(after)));
        for shown in &shown {
            let effect = withdraw_effect(&shown.target);
            if done.contains(&effect) {
                continue;
            }
            if self.withdraw(bridge, question, shown).await {
                finished.push(effect);
            } else if self.given_up(question) {
                tracing::error!(question_id = %id, target = %shown.target, "giving up withdrawing after a day of failures");
                finished.push(effect);
            } else {
                retry_in(WITHDRAW_RETRY);
            }
        }
        let resume_done = done.iter().any(|e| e == EFFECT_RESUME);
        if resumed && !resume_done {
            finished.push(EFFECT_RESUME.to_owned());
        } else if question.run_id.is_some() && !resume_done && bridge.runner().is_none() {
            // No flows here: a process that runs them takes the run up from the event; this one
            // only comes back to see it done.
            retry_in(SETTLE_GRACE);
        } else if question.run_id.is_some() && !resume_done {
            match self.resume(bridge, question).await {
                Ok(Resume::Done) => finished.push(EFFECT_RESUME.to_owned()),
                Ok(Resume::NotYet) => retry_in(RESUME_RETRY),
                Err(error) => {
                    tracing::warn!(question_id = %id, error = %Chain(&error), "cannot resume the run yet");
                    retry_in(RESUME_RETRY * 5);
                }
            }
        }
        if question.callback_url.is_some() && !done.iter().any(|e| e == EFFECT_CALLBACK) {
            match self.post_callback(bridge, question).await {
                Ok(()) => finished.push(EFFECT_CALLBACK.to_owned()),
                Err(error) if self.given_up(question) => {
                    tracing::error!(question_id = %id, %error, "giving up on the callback after a day of failures");
                    finished.push(EFFECT_CALLBACK.to_owned());
                }
                Err(error) => {
                    tracing::warn!(question_id = %id, %error, "callback failed; will retry");
                    retry_in(CALLBACK_RETRY);
                }
            }
        }
        let retry_at = retry.map(|after| Millis::now().after(after));
        if let Some(at) = retry_at {
            self.schedule.offer(at);
        }
        Ok(self
            .store
            .outbox
            .finish(id, Some(question), &finished, retry_at, Some(shown_seen))
            .await?)
    }

    /// A resolved question of a run: hands it to the run engine.
    async fn resume(&self, bridge: &Bridge, question: &Question) -> Result<Resume, Error> {
        match bridge.runner() {
            Some(runner) => Runner::resume(runner.as_ref(), bridge, question).await,
            None => Ok(Resume::NotYet),
        }
    }

    /// POSTs the resolved question, signed, to its callback URL.
    async fn post_callback(&self, bridge: &Bridge, question: &Question) -> Result<(), String> {
        let (Some(url), Some(secret)) = (&question.callback_url, &bridge.options().signing_secret)
        else {
            return Ok(());
        };
        let body = serde_json::to_vec(question).expect("a question always serialises");
        let signature = signing::sign(secret.expose().as_bytes(), Millis::now(), &body);
        // Checked again at send time: the allow-list may have changed since it was asked.
        if let Some(why) = bridge.options().callback_egress.refusal(url).await {
            return Err(format!("callback URL refused: {why}"));
        }
        let response = self
            .callbacks
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
    pub(in crate::bridge) async fn withdraw(
        &self,
        bridge: &Bridge,
        question: &Question,
        shown: &Shown,
    ) -> bool {
        let Some(channel) = bridge.channel_for(&shown.target) else {
            tracing::warn!(question_id = %question.id, target = %shown.target, "no channel to withdraw from here; skipping");
            return true;
        };
        match channel
            .withdraw(question, &shown.target, &shown.reference)
            .await
        {
            Ok(()) => true,
            Err(error) => {
                bridge
                    .metrics()
                    .delivery_failed(shown.target.surface(), DeliveryAction::Withdraw);
                if error.is_retryable() {
                    tracing::warn!(question_id = %question.id, target = %shown.target, error = %Chain(&error), "cannot withdraw yet; will retry");
                    false
                } else {
                    tracing::warn!(question_id = %question.id, target = %shown.target, error = %Chain(&error), "cannot withdraw; giving up");
                    true
                }
            }
        }
    }
}
