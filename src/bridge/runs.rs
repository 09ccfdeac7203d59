//! Runs as the HTTP API and chat see them: reading one, starting one, learning its next step
//! without polling, and which question an answer to a run answers.

use super::Bridge;
use super::roles::RunRoles;
use super::runner::Storing;
use super::waiters::RunNews;
use crate::Error;
use askbridge_core::run::{Origin, Run, RunState};
use askbridge_core::{QuestionId, RunId};
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

    /// The question run `id` waits on, which must be `expected` when given: what an answer to
    /// the run (not to a question id) answers. What this process last heard of the run spares a
    /// read; if that is stale, the claim that follows finds the question resolved and says so.
    pub(super) async fn run_question(
        &self,
        bridge: &Bridge,
        id: &str,
        expected: Option<&QuestionId>,
    ) -> Result<QuestionId, Error> {
        let run_id = RunId::parse(id).ok_or_else(|| Error::UnknownRun(id.to_owned()))?;
        let fits = |run: &Run| {
            run.state == RunState::Waiting
                && run.waiting_on.is_some()
                && expected.is_none_or(|e| run.waiting_on.as_ref() == Some(e))
        };
        let run = match bridge.recent().run(&run_id).map(|news| news.run) {
            Some(run) if fits(&run) => run,
            _ => Arc::new(self.get_run(id).await?),
        };
        match run.waiting_on.clone() {
            Some(question) if fits(&run) => Ok(question),
            waiting_on => Err(Error::RunNotWaiting {
                run: id.to_owned(),
                state: run.state.as_str(),
                waiting_on: waiting_on.filter(|_| run.state == RunState::Waiting),
            }),
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
