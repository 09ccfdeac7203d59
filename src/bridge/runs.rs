//! Runs as the HTTP API and chat see them: reading one, starting one, learning its next step
//! without polling, and which question an answer to a run answers.

use super::roles::RunRoles;
use super::runner::Storing;
use super::waiters::RunNews;
use super::{Attempt, Bridge, Said};
use crate::Error;
use askbridge_core::run::{Origin, Run, RunState};
use askbridge_core::{Actor, QuestionId, RunId, Target};
use std::sync::Arc;
use std::time::Duration;

/// How long a run's waiter trusts that news of a just-answered question is coming before it
/// reads the store.
const NEWS_PATIENCE: Duration = Duration::from_secs(2);

/// The runs' part of the bridge: see the module documentation.
pub(super) struct Runs {
    store: RunRoles,
}

impl Runs {
    pub(super) fn new(store: RunRoles) -> Self {
        Runs { store }
    }

    /// The run with this id.
    pub(super) async fn get_run(&self, id: &str) -> Result<Run, Error> {
        let unknown = || Error::UnknownRun(id.to_owned());
        let run_id = RunId::parse(id).ok_or_else(unknown)?;
        self.store.runs.get_run(&run_id).await?.ok_or_else(unknown)
    }

    /// Answers the question run `id` waits on, which must be `expected` when given, with
    /// `said` by `actor` in `chat`; returns that question. What this process last heard of the
    /// run spares a read. If that was stale (the question was resolved elsewhere, the run gone on
    /// or ended), the refusal is what the stored run says (it is done, or waits on another
    /// question), not only "already answered": a client asking right after another process
    /// finished the run hears that it is done, whichever process it asks.
    pub(super) async fn answer(
        &self,
        bridge: &Bridge,
        id: &str,
        expected: Option<&QuestionId>,
        said: Said,
        (actor, chat): (Actor, Target),
    ) -> Result<QuestionId, Error> {
        let run_id = RunId::parse(id).ok_or_else(|| Error::UnknownRun(id.to_owned()))?;
        let heard = bridge.recent().run(&run_id).map(|news| news.run);
        let (run, from_memory) = match heard {
            Some(run) if waits_on(&run, expected).is_some() => (run, true),
            _ => (Arc::new(self.get_run(id).await?), false),
        };
        let question = waits_on(&run, expected).ok_or_else(|| not_waiting(id, &run))?;
        let attempt = Attempt {
            id: question.clone(),
            said,
            actor,
            chat,
        };
        match Box::pin(bridge.attempt(attempt)).await {
            Ok(_) => Ok(question),
            Err(Error::AlreadyResolved(resolved)) if from_memory => {
                let stored = self.get_run(id).await?;
                match waits_on(&stored, Some(&question)) {
                    Some(_) => Err(Error::AlreadyResolved(resolved)),
                    None => Err(not_waiting(id, &stored)),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Waits until run `id` parks on a question other than `after` (or on any, without
    /// `after`) or ends, or until `timeout` passes; returns it as it is then. Woken by the run's
    /// own process at once, and by the store's events from any other.
    pub(super) async fn wait_run(
        &self,
        bridge: &Bridge,
        id: &str,
        after: Option<&QuestionId>,
        timeout: Duration,
    ) -> Result<RunNews, Error> {
        let settled = |run: &Run| {
            run.state.is_final()
                || (run.state == RunState::Waiting && run.waiting_on.as_ref() != after)
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let run_id = RunId::parse(id).ok_or_else(|| Error::UnknownRun(id.to_owned()))?;
        let mut trust_recent = true;
        loop {
            // Registered before reading, so news in between is not missed.
            let news = bridge.waiters().register_run(&run_id);
            let now = tokio::time::Instant::now();
            // What this process last heard of the run spares a read when it says enough: the
            // run parked or ended, or it is executing here and will send news when it parks.
            let recent = bridge.recent().run(&run_id).filter(|_| trust_recent);
            let mut patience = deadline - now;
            match recent {
                Some(known) if settled(&known.run) => return Ok(known),
                Some(known) if known.run.state == RunState::Running && now < deadline => {}
                // Still on the question the client knows: it was just answered (the client
                // answers, then asks what comes next), and the resume's news is on its way —
                // from this process, or from another through the store's events. Wait for it
                // without a read, but not long before reading after all.
                Some(known)
                    if known.run.state == RunState::Waiting
                        && after.is_some()
                        && known.run.waiting_on.as_ref() == after
                        && now < deadline =>
                {
                    patience = patience.min(NEWS_PATIENCE);
                }
                _ => {
                    let run = self.get_run(id).await?;
                    if settled(&run) || now >= deadline {
                        return Ok(RunNews {
                            run: Arc::new(run),
                            question: None,
                        });
                    }
                }
            }
            // After the first wait, read the store: the news may have been of another kind.
            trust_recent = false;
            match tokio::time::timeout(patience, news).await {
                Ok(Ok(news)) if settled(&news.run) => return Ok(news),
                // Other news (still on the same question), or out of time: read again.
                _ => {}
            }
        }
    }

    /// Starts flow `name` for `origin` with the bridge's [`super::Runner`], stored as `storing`
    /// says.
    pub(super) async fn start_run(
        &self,
        bridge: &Bridge,
        name: &str,
        input: &str,
        origin: Origin,
        storing: Storing,
    ) -> Result<Run, Error> {
        let runner = bridge
            .runner()
            .ok_or_else(|| Error::UnknownFlow(name.to_owned()))?;
        if let Some(chat) = &origin.chat
            && bridge.channel_for(chat).is_none()
        {
            return Err(Error::UnknownTarget {
                target: chat.to_string(),
                hint: "a run reports in the chat it came from, which needs a channel".into(),
            });
        }
        runner.start(bridge, name, input, origin, storing).await
    }
}

/// The question `run` waits on, if it waits on one (and on `expected`, when given).
fn waits_on(run: &Run, expected: Option<&QuestionId>) -> Option<QuestionId> {
    let question = run
        .waiting_on
        .as_ref()
        .filter(|_| run.state == RunState::Waiting)?;
    expected
        .is_none_or(|e| e == question)
        .then(|| question.clone())
}

/// Why `run` has no question to answer (or not the one expected): its state, and what it waits
/// on if it waits.
fn not_waiting(id: &str, run: &Run) -> Error {
    Error::RunNotWaiting {
        run: id.to_owned(),
        state: run.state.as_str(),
        waiting_on: waits_on(run, None),
    }
}
