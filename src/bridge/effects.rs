//! Showing questions, and everything that follows a resolution.
//!
//! The resolution's event and audit record are written by the store with the claim itself. What
//! remains, in any process: every message showing the question is edited to its outcome (first
//! answer wins; the other surfaces withdraw their buttons), an "always" answer's rule is created,
//! a waiting run is resumed, a callback is posted, and the question leaves the open index. Each
//! step is recorded in the store as it completes, so a retry (after a channel outage, or in another
//! process after a crash) does only what is left.

use super::runner::{Ahead, Resume};
use super::{Bridge, Runner, SETTLE_GRACE};
use crate::Error;
use crate::metrics::DeliveryAction;
use crate::signing;
use crate::store::{Claimed, Shown, Work};
use askbridge_core::error::Chain;
use askbridge_core::{Millis, Question, QuestionId, Target};
use std::time::Duration;

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

impl Bridge {
    /// Shows `question` in `target` in the background, retrying a channel that is down until the
    /// question is resolved.
    pub(super) fn spawn_delivery(&self, question: Question, target: Target) {
        let bridge = self.clone();
        tokio::spawn(async move { bridge.deliver(question, target).await });
    }

    async fn deliver(&self, question: Question, target: Target) {
        let Some(channel) = self.channel_for(&target) else {
            tracing::warn!(question_id = %question.id, %target, "no channel for target; not shown");
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
                    self.metrics()
                        .delivery_failed(target.surface(), DeliveryAction::Show);
                    tracing::warn!(question_id = %question.id, %target, error = %Chain(&error), retry_in = ?backoff, "cannot show question; will retry");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_SHOW_BACKOFF);
                    match self.roles().effects.questions.get(&question.id).await {
                        Ok(Some(current)) if current.is_pending() => {}
                        Ok(_) => return,
                        Err(error) => {
                            tracing::warn!(question_id = %question.id, error = %Chain(&error), "store unavailable")
                        }
                    }
                }
                Err(error) => {
                    self.metrics()
                        .delivery_failed(target.surface(), DeliveryAction::Show);
                    tracing::error!(question_id = %question.id, %target, error = %Chain(&error), "cannot show question; giving up on this target");
                    return;
                }
            }
        }
    }

    /// Records a delivery. If the question was resolved meanwhile, the settle that ran may have
    /// missed this message: settle again, which withdraws what is left.
    async fn after_shown(&self, id: &QuestionId, shown: Shown) {
        if let Err(error) = self
            .roles()
            .effects
            .deliveries
            .record_shown(id, &shown)
            .await
        {
            tracing::error!(question_id = %id, error = %Chain(&error), "could not record where the question was shown");
        }
        match self.roles().effects.questions.get(id).await {
            Ok(Some(current)) if !current.is_pending() => self.spawn_settle(current),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(question_id = %id, error = %Chain(&error), "store unavailable")
            }
        }
    }

    /// What follows a claim this process won: its waiters here are woken at once (other
    /// processes hear of it from the store's events), a run handed over with the claim starts
    /// executing here, and the effects start (the store has made the outbox entry due soon, so
    /// that if this process dies first, any process's sweeper does them within seconds).
    /// `ahead` is the run the claim saved parked on its next question, which it stored.
    pub(super) fn after_win(&self, claimed: Claimed, ahead: Option<Ahead>) {
        let Claimed {
            question,
            work,
            run,
            finished,
            ..
        } = claimed;
        self.metrics().resolved(&question);
        self.waiters().wake(&question);
        let handed_over = match (run, self.runner(), ahead) {
            (_, _, Some(Ahead { run, next, .. })) => {
                tracing::info!(run_id = %run.id, question_id = %question.id, next_question_id = %next.id, "run resumed and waits for an answer (carried ahead with the claim)");
                self.run_news(&run, Some(&next));
                let bridge = self.clone();
                tokio::spawn(async move {
                    if let Err(error) = bridge.introduce(next).await {
                        tracing::warn!(run_id = %run.id, error = %Chain(&error), "cannot show the run's next question yet");
                    }
                });
                true
            }
            (Some(run), Some(runner), None) => {
                tracing::info!(run_id = %run.id, question_id = %question.id, "run resumed");
                self.run_news(&run, None);
                runner.drive(self, run, question.clone());
                true
            }
            _ => false,
        };
        if finished {
            // The claim did all there was to do.
            return;
        }
        let bridge = self.clone();
        tokio::spawn(async move {
            if let Err(error) = bridge.settle(&question, Some(work), handed_over).await {
                tracing::warn!(question_id = %question.id, error = %Chain(&error), "effects interrupted; the sweeper will retry");
            }
        });
    }

    pub(super) fn spawn_settle(&self, question: Question) {
        let bridge = self.clone();
        tokio::spawn(async move {
            if let Err(error) = bridge.settle(&question, None, false).await {
                tracing::warn!(question_id = %question.id, error = %Chain(&error), "effects interrupted; the sweeper will retry");
            }
        });
    }

    /// Does what a resolution requires and is not done yet (`work` says what is done, when the
    /// caller knows; `resumed` when the claim handed its run over), then records it all and
    /// leaves the open index, or schedules a retry, in one store call. One settle per question at
    /// a time in this process: a second one (a late delivery, a sweep) is put off a moment
    /// instead of doing the same effects twice.
    pub(super) async fn settle(
        &self,
        question: &Question,
        work: Option<Work>,
        resumed: bool,
    ) -> Result<(), Error> {
        let Some(_settling) = Settling::start(self, &question.id) else {
            let later = Millis::now().after(Duration::from_secs(1));
            self.schedule().offer(later);
            return Ok(self
                .roles()
                .effects
                .outbox
                .reschedule(&question.id, later)
                .await?);
        };
        let work = match work {
            Some(work) => work,
            None => self.roles().effects.outbox.work(&question.id).await?,
        };
        self.settle_effects(question, work, resumed).await
    }

    async fn settle_effects(
        &self,
        question: &Question,
        work: Work,
        resumed: bool,
    ) -> Result<(), Error> {
        let id = &question.id;
        let Work { shown, done } = work;
        let creates_rule = question
            .resolution
            .as_ref()
            .is_some_and(|r| r.rule_to_create().is_some());
        if creates_rule && !Self::rule_done(&done) {
            self.create_rule_now(question).await?;
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
            if self.withdraw(question, shown).await {
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
        } else if question.run_id.is_some() && !resume_done && self.runner().is_none() {
            // No flows here: a process that runs them takes the run up from the event; this one
            // only comes back to see it done.
            retry_in(SETTLE_GRACE);
        } else if question.run_id.is_some() && !resume_done {
            match self.resume(question).await {
                Ok(Resume::Done) => finished.push(EFFECT_RESUME.to_owned()),
                Ok(Resume::NotYet) => retry_in(RESUME_RETRY),
                Err(error) => {
                    tracing::warn!(question_id = %id, error = %Chain(&error), "cannot resume the run yet");
                    retry_in(RESUME_RETRY * 5);
                }
            }
        }
        if question.callback_url.is_some() && !done.iter().any(|e| e == EFFECT_CALLBACK) {
            match self.post_callback(question).await {
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
            self.schedule().offer(at);
        }
        Ok(self
            .roles()
            .effects
            .outbox
            .finish(id, Some(question), &finished, retry_at)
            .await?)
    }

    /// A resolved question of a run: hands it to the run engine.
    async fn resume(&self, question: &Question) -> Result<Resume, Error> {
        match self.runner() {
            Some(runner) => Runner::resume(runner.as_ref(), self, question).await,
            None => Ok(Resume::NotYet),
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
        // Checked again at send time: the allow-list may have changed since it was asked.
        if let Some(why) = self.options().callback_egress.refusal(url).await {
            return Err(format!("callback URL refused: {why}"));
        }
        let response = self
            .callback_client()
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
            Err(error) => {
                self.metrics()
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
