//! Executing runs: starting them, resuming them when their question is resolved, taking over
//! runs whose process died, and reporting their results in their chat.

use super::{Flow, FlowContext};
use crate::Error;
use crate::bridge::Bridge;
use askbridge_core::run::{Acquire, Origin, Run, RunState};
use askbridge_core::{Millis, NewQuestion, Question, QuestionId, render};
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;

/// What a resolved question's resume effect found.
pub(crate) enum Resume {
    /// The run was taken and is executing here, or needed nothing (finished, or already past
    /// this question, or taken by another process).
    Done,
    /// The run has not parked on this question yet (its function is still executing towards
    /// it); try again shortly.
    NotYet,
}

impl Bridge {
    /// Starts flow `name` for `origin`: the run is stored, then executed in the background.
    pub async fn start_run(&self, name: &str, input: &str, origin: Origin) -> Result<Run, Error> {
        if self.find_flow(name).is_none() {
            return Err(Error::UnknownFlow(name.to_owned()));
        }
        if let Some(chat) = &origin.chat {
            if self.channel_for(chat).is_none() {
                return Err(Error::UnknownTarget {
                    target: chat.clone(),
                    hint: "a run reports in the chat it came from, which needs a channel".into(),
                });
            }
        }
        let now = Millis::now();
        let run = Run::new(
            name,
            input,
            origin,
            self.owner_id(),
            now,
            now.after(self.options().run_lease),
        );
        self.store().insert_run(&run).await?;
        tracing::info!(run_id = %run.id, flow = name, user = %run.origin.user, "run started");
        self.spawn_drive(run.clone());
        Ok(run)
    }

    /// The run with this id.
    pub async fn get_run(&self, id: &str) -> Result<Run, Error> {
        if !Run::is_id(id) {
            return Err(Error::UnknownRun(id.to_owned()));
        }
        self.store()
            .get_run(id)
            .await?
            .ok_or_else(|| Error::UnknownRun(id.to_owned()))
    }

    fn spawn_drive(&self, run: Run) {
        let bridge = self.clone();
        tokio::spawn(async move { bridge.drive(run).await });
    }

    /// Registers a run's question under its derived id; when a replay after a crash meets a
    /// question that already exists, it is reused (and not shown twice).
    pub(crate) async fn create_for_run(
        &self,
        request: NewQuestion,
        id: QuestionId,
    ) -> Result<Question, Error> {
        self.create_as(request, Some(id)).await
    }

    /// Writes a run this process holds; [`Error::LeaseLost`] when another process took it over.
    pub(crate) async fn persist_run(&self, run: &Run, owner: &str) -> Result<(), Error> {
        if self.store().save_run(run, owner).await? {
            Ok(())
        } else {
            tracing::warn!(run_id = %run.id, "run taken over by another process; stopping here");
            Err(Error::LeaseLost)
        }
    }

    /// Executes a run this process has just taken: absorbs the answer it waited for, runs the
    /// function from the top, and parks the run on its next question or finishes it.
    async fn drive(&self, mut run: Run) {
        let owner = self.owner_id().to_owned();
        if run.state.is_final() {
            self.report(run, &owner).await;
            return;
        }
        if let Err(error) = self.absorb_answer(&mut run, &owner).await {
            tracing::warn!(run_id = %run.id, %error, "cannot load the answer the run waited for; recovery will retry");
            return;
        }
        let Some(flow) = self.find_flow(&run.flow) else {
            let message = format!("this askbridge has no flow `{}`", run.flow);
            self.finish(run, &owner, Err(Error::Flow(message))).await;
            return;
        };
        let ctx = FlowContext::for_run(self, run.clone(), &owner);
        let _heartbeat = AbortOnDrop(self.spawn_heartbeat(ctx.clone()));
        // A panicking flow ends its run as failed, instead of leaving it running forever.
        let result = AssertUnwindSafe(Flow::run(flow.as_ref(), ctx.clone()))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| {
                Err(Error::Flow(format!(
                    "the flow panicked: {}",
                    panic_text(&*panic)
                )))
            });
        let (run, suspended) = ctx.finish();
        match (suspended, result) {
            (_, Err(Error::LeaseLost)) => {}
            // The store failed under the flow (a Redis restart, say): stop without a verdict; when
            // the lease runs out, recovery replays the run from its journal.
            (_, Err(error @ (Error::Redis(_) | Error::Embedded(_)))) => {
                tracing::warn!(run_id = %run.id, %error, "store unavailable during the run; it will be replayed");
            }
            (Some(question), _) => self.park(run, &owner, question).await,
            (None, result) => self.finish(run, &owner, result).await,
        }
    }

    /// On taking a run that waited, moves the answer into its journal (once).
    async fn absorb_answer(&self, run: &mut Run, owner: &str) -> Result<(), Error> {
        let Some(question_id) = run.waiting_on.clone() else {
            return Ok(());
        };
        if run.knows(&question_id) {
            run.waiting_on = None;
            return Ok(());
        }
        match self.store().get(&question_id).await? {
            Some(question) if !question.is_pending() => {
                run.absorb(&question);
                self.persist_run(run, owner).await
            }
            // Taken over while its question is still open (a crash between creating the question
            // and parking): the replay below reaches the same question and parks again.
            Some(_) => {
                run.waiting_on = None;
                Ok(())
            }
            None => Err(Error::NotFound(question_id.to_string())),
        }
    }

    /// Renews the lease while the function executes, so that a long step is not taken over.
    fn spawn_heartbeat(&self, ctx: FlowContext) -> tokio::task::JoinHandle<()> {
        let every = self.options().run_lease / 3;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match ctx.save(true).await {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(error) => {
                        tracing::warn!(run_id = ?ctx.run_id(), %error, "cannot renew the run's lease")
                    }
                }
            }
        })
    }

    /// Saves the run as waiting on `question`. If the question was resolved while the function
    /// still ran (so its resume found the run busy), takes the run again at once.
    async fn park(&self, mut run: Run, owner: &str, question: QuestionId) {
        run.state = RunState::Waiting;
        run.waiting_on = Some(question.clone());
        run.owner = None;
        run.lease_until = None;
        run.updated_at = Millis::now();
        if self.persist_run(&run, owner).await.is_err() {
            return;
        }
        tracing::info!(run_id = %run.id, question_id = %question, "run waits for an answer");
        match self.store().get(&question).await {
            Ok(Some(resolved)) if !resolved.is_pending() => {
                if let Err(error) = self.resume(&resolved).await {
                    tracing::warn!(run_id = %run.id, %error, "cannot resume at once; the question's resume will");
                }
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(run_id = %run.id, %error, "cannot check the run's question")
            }
        }
    }

    /// Records the run's end, then reports it.
    async fn finish(&self, mut run: Run, owner: &str, result: Result<String, Error>) {
        let (state, text) = match result {
            Ok(text) => (RunState::Done, text),
            Err(error) => (RunState::Failed, error.to_string()),
        };
        tracing::info!(run_id = %run.id, state = state.as_str(), "run ended");
        run.state = state;
        run.result = Some(text);
        run.waiting_on = None;
        run.updated_at = Millis::now();
        if self.persist_run(&run, owner).await.is_ok() {
            self.report(run, owner).await;
        }
    }

    /// Posts a finished run's result in its chat, then marks it reported. A failure leaves it
    /// unreported under its lease, for recovery to post later: a result is never lost (at
    /// worst, after a crash at the wrong instant, posted twice).
    async fn report(&self, mut run: Run, owner: &str) {
        if let Some(chat) = run.origin.chat.clone() {
            let line = report_line(&run);
            if let Err(error) = self.say(&chat, &line).await {
                tracing::warn!(run_id = %run.id, %error, "cannot post the run's result yet; will retry");
                return;
            }
        }
        run.reported = true;
        run.owner = None;
        run.lease_until = None;
        let _ = self.persist_run(&run, owner).await;
    }

    /// The resume effect of a resolved question that belongs to a run.
    pub(crate) async fn resume(&self, question: &Question) -> Result<Resume, Error> {
        let Some(run_id) = &question.run_id else {
            return Ok(Resume::Done);
        };
        let now = Millis::now();
        let lease_until = now.after(self.options().run_lease);
        let why = Acquire::Answer(&question.id);
        if let Some(run) = self
            .store()
            .acquire_run(run_id, why, self.owner_id(), now, lease_until)
            .await?
        {
            tracing::info!(run_id = %run.id, question_id = %question.id, "run resumed");
            self.spawn_drive(run);
            return Ok(Resume::Done);
        }
        let Some(run) = self.store().get_run(run_id).await? else {
            return Ok(Resume::Done);
        };
        let busy_towards_it = run.state == RunState::Running
            && run.waiting_on.as_ref() != Some(&question.id)
            && !run.knows(&question.id);
        Ok(if busy_towards_it {
            Resume::NotYet
        } else {
            Resume::Done
        })
    }

    /// Takes over runs whose executor's lease ran out (its process died or stalled).
    pub(crate) async fn recover_runs(&self) -> Result<usize, Error> {
        let now = Millis::now();
        let lease_until = now.after(self.options().run_lease);
        let mut taken = 0;
        for id in self.store().expired_runs(now, 64).await? {
            if let Some(run) = self
                .store()
                .acquire_run(&id, Acquire::Recovery, self.owner_id(), now, lease_until)
                .await?
            {
                tracing::info!(run_id = %run.id, state = run.state.as_str(), "run taken over after its executor's lease ran out");
                taken += 1;
                self.spawn_drive(run);
            }
        }
        Ok(taken)
    }
}

fn report_line(run: &Run) -> String {
    let result = run.result.as_deref().unwrap_or_default();
    match run.state {
        RunState::Failed => format!(
            "✗ {} failed: {}",
            run.flow,
            render::shorten(result.lines().next().unwrap_or(result), 400)
        ),
        _ => format!("✓ {}: {result}", run.flow),
    }
}

/// Aborts a background task when dropped (the heartbeat must stop whatever way the run ends).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}
