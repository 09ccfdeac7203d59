//! Executing runs: starting them, resuming them when their question is resolved, taking over
//! runs whose process died, and reporting their results in their chat.

use super::context::Suspension;
use super::gate::Gate;
use super::{Flow, FlowContext, FlowResult, Flows, Interrupt};
use crate::Error;
use crate::bridge::{Bridge, Resume, Storing};
use crate::store::{ErrorKind, Inserted, Parked, Saved};
use askbridge_core::error::Chain;
use askbridge_core::run::{Acquire, Origin, Run, RunState};
use askbridge_core::{Millis, Question, render};
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Starts `flow` for `origin`: the run is stored, then executed in the background.
pub(super) async fn start(
    flows: &Flows,
    bridge: &Bridge,
    flow: Arc<dyn Flow>,
    name: &str,
    input: &str,
    origin: Origin,
    storing: Storing,
) -> Result<Run, Error> {
    let now = Millis::now();
    let run = Run::new(
        name,
        input,
        origin,
        bridge.owner_id(),
        now,
        now.after(bridge.options().run_lease),
    );
    match storing {
        Storing::AtStart => {
            if bridge.store().insert_run(&run).await? == Inserted::Taken {
                return Err(askbridge_core::Error::Invalid {
                    field: "run",
                    reason: format!("a run {} exists already; try again", run.id),
                }
                .into());
            }
        }
        Storing::WithFirstStep => flows.unstored.hold(run.clone()),
    }
    tracing::info!(run_id = %run.id, flow = name, user = %run.origin.user, "run started");
    // Known here as executing: a client waiting for its first question waits for the park's
    // news instead of reading the run back.
    bridge.run_news(Arc::new(run.clone()), None);
    spawn_drive(flows, bridge, Some(flow), run.clone(), None);
    Ok(run)
}

/// Executes `run` in the background. `answered` is the question it waited on, when the caller
/// has it at hand (a claim that handed the run over): the run need not read it again.
pub(super) fn spawn_drive(
    flows: &Flows,
    bridge: &Bridge,
    flow: Option<Arc<dyn Flow>>,
    run: Run,
    answered: Option<Question>,
) {
    let (flows, bridge) = (flows.clone(), bridge.clone());
    // Boxed before it is spawned: the task's future is then a pointer, which tokio moves several
    // times on its way into the task (its cell, its stage); the state machine itself (7 KB) would
    // be copied each time, on every run's start and hand-over.
    tokio::spawn(Box::pin(async move {
        let flow = flow.or_else(|| flows.find(&run.flow));
        drive(&flows, &bridge, flow, run, answered).await
    }));
}

/// Writes a run this process holds; [`Interrupt::Superseded`] when another process took it over.
async fn persist(
    flows: &Flows,
    bridge: &Bridge,
    run: &Run,
    owner: &str,
) -> Result<Saved, Interrupt> {
    match flows.unstored.save(bridge, run, owner).await? {
        Saved::Lost => {
            tracing::warn!(run_id = %run.id, "run taken over by another process; stopping here");
            Err(Interrupt::Superseded)
        }
        saved => Ok(saved),
    }
}

/// True for an interruption after which the run is replayed later rather than ended: another
/// process has it, or the failure is retryable (the store did not answer).
fn replayed_later(interrupt: &Interrupt) -> bool {
    match interrupt {
        Interrupt::Superseded => true,
        Interrupt::Error(error) => error.is_retryable(),
        _ => false,
    }
}

/// Executes a run this process has just taken: absorbs the answer it waited for, runs the
/// function from the top, and parks the run on its next question or finishes it.
async fn drive(
    flows: &Flows,
    bridge: &Bridge,
    flow: Option<Arc<dyn Flow>>,
    mut run: Run,
    answered: Option<Question>,
) {
    let owner = bridge.owner_id().to_owned();
    // The report, the park and the end are boxed: each is awaited at most once per drive, and
    // inline they made drive's future as large as the largest (25 KB with them, 7 KB without).
    if run.state.is_final() {
        Box::pin(report(flows, bridge, run, &owner)).await;
        return;
    }
    if let Err(interrupt) = absorb_answer(bridge, &mut run, answered).await {
        if replayed_later(&interrupt) {
            tracing::warn!(run_id = %run.id, error = %Chain(&interrupt), "cannot load the answer the run waited for; recovery will retry");
        } else {
            finish(flows, bridge, run, &owner, Err(interrupt)).await;
        }
        return;
    }
    let Some(flow) = flow else {
        let message = format!("this askbridge has no flow `{}`", run.flow);
        finish(flows, bridge, run, &owner, Err(Interrupt::Failed(message))).await;
        return;
    };
    let ctx = FlowContext::for_run(flows, bridge, run.clone(), &owner);
    let _heartbeat = AbortOnDrop(spawn_heartbeat(bridge, ctx.clone()));
    // A panicking flow ends its run as failed, instead of leaving it running forever.
    let result = AssertUnwindSafe(Gate::new(flow.run(ctx.clone()), ctx.clone()))
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            Err(Interrupt::fail(format!(
                "the flow panicked: {}",
                panic_text(&*panic)
            )))
        });
    let (run, suspended) = ctx.finish();
    match (suspended, result) {
        (_, Err(interrupt)) if replayed_later(&interrupt) => {
            tracing::warn!(run_id = %run.id, error = %Chain(&interrupt), "run stopped; it will be replayed from its journal");
        }
        (Some(suspension), _) => Box::pin(park(flows, bridge, run, &owner, suspension)).await,
        (None, result) => Box::pin(finish(flows, bridge, run, &owner, result)).await,
    }
}

/// On taking a run that waited, moves the answer into its journal. It is written with the run's
/// next save (the park on its next question, or its end): a crash before that leaves the run
/// waiting on the same resolved question, and the next executor absorbs it again.
async fn absorb_answer(
    bridge: &Bridge,
    run: &mut Run,
    answered: Option<Question>,
) -> Result<(), Interrupt> {
    let Some(question_id) = run.waiting_on.clone() else {
        return Ok(());
    };
    if run.knows(&question_id) {
        run.waiting_on = None;
        return Ok(());
    }
    let question = match answered.filter(|q| q.id == question_id) {
        Some(question) => Some(question),
        None => bridge.store().get(&question_id).await?,
    };
    match question {
        Some(question) if !question.is_pending() => {
            run.absorb(&question);
            Ok(())
        }
        // Taken over while its question is still open (a crash between creating the question
        // and parking): the replay below reaches the same question and parks again.
        Some(_) => {
            run.waiting_on = None;
            Ok(())
        }
        None => Err(Error::NotFound(question_id).into()),
    }
}

/// Renews the lease while the function executes, so that a long step is not taken over.
fn spawn_heartbeat(bridge: &Bridge, ctx: FlowContext) -> tokio::task::JoinHandle<()> {
    let every = bridge.options().run_lease / 3;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            match ctx.save(true).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(error) => {
                    tracing::warn!(run_id = ?ctx.run_id(), error = %Chain(&error), "cannot renew the run's lease")
                }
            }
        }
    })
}

/// Saves the run as waiting on its question — storing the question with it, in one step, when
/// it is new. If the question was resolved while the function still ran (so its resume found the
/// run busy), the save says so and the run is taken again at once.
async fn park(flows: &Flows, bridge: &Bridge, mut run: Run, owner: &str, suspension: Suspension) {
    let Suspension { question, stored } = suspension;
    run.park_on(question.id.clone(), Millis::now());
    let saved = if stored {
        persist(flows, bridge, &run, owner).await
    } else {
        park_with_question(flows, bridge, &run, owner, &question).await
    };
    let Ok(saved) = saved else {
        return;
    };
    // Waiters here hear of it at once; other processes through the store's event.
    bridge.run_news(Arc::new(run.clone()), Some(Arc::new(question.clone())));
    tracing::info!(run_id = %run.id, question_id = %question.id, "run waits for an answer");
    if saved == Saved::WaitsOnResolved {
        let resolved = match bridge.store().get(&question.id).await {
            Ok(Some(resolved)) => resolved,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(run_id = %run.id, error = %Chain(&error), "cannot read the run's question");
                return;
            }
        };
        if let Err(error) = take_up(flows, bridge, &resolved).await {
            tracing::warn!(run_id = %run.id, error = %Chain(&error), "cannot resume at once; the question's resume will");
        }
    }
}

/// Stores a run's new question and parks the run on it, in one step. A question already stored
/// under its id (a replay after a crash in an older version) is checked — it must be this run's,
/// asked the same way, and readable — and the run parks on it; if the check fails, so does the run.
async fn park_with_question(
    flows: &Flows,
    bridge: &Bridge,
    run: &Run,
    owner: &str,
    question: &Question,
) -> Result<Saved, Interrupt> {
    let parked = flows.unstored.park(bridge, run, owner, question).await?;
    let saved = match parked {
        Parked::Saved(saved) => saved,
        Parked::QuestionTaken => {
            if let Err(error) = bridge.existing_for_run(question).await {
                let interrupt = Interrupt::from(error);
                if !replayed_later(&interrupt) {
                    finish(flows, bridge, run.clone(), owner, Err(interrupt)).await;
                    return Err(Interrupt::Superseded);
                }
                return Err(interrupt);
            }
            return persist(flows, bridge, run, owner).await;
        }
    };
    if saved == Saved::Lost {
        tracing::warn!(run_id = %run.id, "run taken over by another process; stopping here");
        return Err(Interrupt::Superseded);
    }
    bridge.introduce(question.clone()).await?;
    Ok(saved)
}

/// Records the run's end, then reports it.
async fn finish(flows: &Flows, bridge: &Bridge, mut run: Run, owner: &str, result: FlowResult) {
    let (state, text) = match result {
        Ok(text) => (RunState::Done, text),
        Err(interrupt) => (RunState::Failed, Chain(&interrupt).to_string()),
    };
    if state == RunState::Failed {
        tracing::warn!(run_id = %run.id, error = %text, "run failed");
    } else {
        tracing::info!(run_id = %run.id, "run done");
    }
    run.state = state;
    run.result = Some(text);
    run.waiting_on = None;
    run.updated_at = Millis::now();
    if run.origin.chat.is_none() {
        // Nowhere to post it: recording the result is reporting it, in one write.
        run.reported = true;
        run.owner = None;
        run.lease_until = None;
    }
    if persist(flows, bridge, &run, owner).await.is_err() {
        return;
    }
    if run.reported {
        bridge.run_news(Arc::new(run), None);
    } else {
        bridge.run_news(Arc::new(run.clone()), None);
        report(flows, bridge, run, owner).await;
    }
}

/// Posts a finished run's result in its chat, then marks it reported. A failure leaves it
/// unreported under its lease, for recovery to post later: a result is never lost (at worst,
/// after a crash at the wrong instant, posted twice).
async fn report(flows: &Flows, bridge: &Bridge, mut run: Run, owner: &str) {
    if let Some(chat) = run.origin.chat.clone() {
        let line = report_line(&run);
        if let Err(error) = bridge.say(&chat, &line).await {
            tracing::warn!(run_id = %run.id, error = %Chain(&error), "cannot post the run's result yet; will retry");
            return;
        }
    }
    run.reported = true;
    run.owner = None;
    run.lease_until = None;
    let _ = persist(flows, bridge, &run, owner).await;
}

/// The resume effect of a resolved question that belongs to a run.
pub(super) async fn take_up(
    flows: &Flows,
    bridge: &Bridge,
    question: &Question,
) -> Result<Resume, Error> {
    let Some(run_id) = &question.run_id else {
        return Ok(Resume::Done);
    };
    let now = Millis::now();
    let lease_until = now.after(bridge.options().run_lease);
    let why = Acquire::Answer(&question.id);
    if let Some(run) = bridge
        .store()
        .acquire_run(run_id, why, bridge.owner_id(), now, lease_until)
        .await?
    {
        tracing::info!(run_id = %run.id, question_id = %question.id, "run resumed");
        spawn_drive(flows, bridge, None, run, Some(question.clone()));
        return Ok(Resume::Done);
    }
    let Some(run) = bridge.store().get_run(run_id).await? else {
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

/// Takes over runs whose executor's lease ran out (its process died or stalled). A run whose
/// record no longer reads is abandoned, loudly, instead of being retried for ever.
pub(super) async fn recover(flows: &Flows, bridge: &Bridge) -> Result<usize, Error> {
    let now = Millis::now();
    let lease_until = now.after(bridge.options().run_lease);
    let mut taken = 0;
    for id in bridge.store().expired_runs(now, 64).await? {
        let acquired = bridge
            .store()
            .acquire_run(&id, Acquire::Recovery, bridge.owner_id(), now, lease_until)
            .await;
        match acquired {
            Ok(Some(run)) => {
                tracing::info!(run_id = %run.id, state = run.state.as_str(), "run taken over after its executor's lease ran out");
                taken += 1;
                spawn_drive(flows, bridge, None, run, None);
            }
            Ok(None) => {}
            Err(error) if error.kind() == ErrorKind::Corrupt => {
                tracing::error!(run_id = %id, error = %Chain(&error), "run record does not read; it is abandoned");
                bridge
                    .store()
                    .abandon_run(&id, &format!("abandoned: {}", Chain(&error)))
                    .await?;
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(taken)
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
