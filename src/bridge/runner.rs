//! The seam between the bridge and a flow engine.
//!
//! The bridge resumes runs (a resolved question with a `run_id`), takes over runs whose process
//! died, and starts flows from chat commands — without knowing what a flow is. A flow engine
//! (`crate::flows`) implements [`Runner`] and is wired in with [`super::BridgeBuilder::runner`]; the
//! dependency points from flows to the bridge, never back.

use super::Bridge;
use crate::Error;
use askbridge_core::run::{Origin, Run};
use askbridge_core::{Millis, Question};
use async_trait::async_trait;

/// What a resolved question's resume effect found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// The run was taken and is executing, or needed nothing (finished, already past this
    /// question, or taken by another process).
    Done,
    /// The run has not parked on this question yet (its function is still executing towards
    /// it); try again shortly.
    NotYet,
}

/// When a started run is first written to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storing {
    /// At once: the run can be read, listed and recovered from its start.
    AtStart,
    /// With its first write: its first question (in the same store call), step or end. For a
    /// caller that waits for that first step anyway, and sees the start fail if the process
    /// dies before it.
    WithFirstStep,
}

/// A run carried ahead past the question it waits on, before the answer is claimed: see
/// [`Runner::ahead`].
#[derive(Clone, Debug)]
pub struct Ahead {
    /// The run's `updated_at` as it was read (the claim checks it has not changed).
    pub was: Millis,
    /// The run parked on `next`, the answer in its journal.
    pub run: Run,
    /// The question it asks next, not stored yet.
    pub next: Question,
}

/// A flow engine, as the bridge sees it.
#[async_trait]
pub trait Runner: Send + Sync {
    /// The flows people may start, by name, with a one-line description each, sorted by name.
    fn flows(&self) -> Vec<(String, String)>;

    /// Starts flow `name` with `input` for `origin`, stored as `storing` says; the run executes
    /// in the background.
    async fn start(
        &self,
        bridge: &Bridge,
        name: &str,
        input: &str,
        origin: Origin,
        storing: Storing,
    ) -> Result<Run, Error>;

    /// Executes, in the background, a run this process has just taken: a claim on `answered`,
    /// the question it waited on, handed it over.
    fn drive(&self, bridge: &Bridge, run: Run, answered: Question);

    /// Before a claim: executes `run` (parked on `answered`'s question, as this process last
    /// heard of it) with `answered` — the question as the claim would resolve it — up to its
    /// next question, without waiting on anything and without writing, so that the claim can
    /// save the run parked there in the same step. `None` when it cannot (the function reaches
    /// a step, an end or anything it must wait for): the claim then takes the run as usual.
    fn ahead(&self, _bridge: &Bridge, _run: Run, _answered: &Question) -> Option<Ahead> {
        None
    }

    /// A question of a run was resolved: take the run up again.
    async fn resume(&self, bridge: &Bridge, question: &Question) -> Result<Resume, Error>;

    /// Takes over runs whose executor's lease ran out (its process died or stalled). Returns
    /// how many were taken.
    async fn recover(&self, bridge: &Bridge) -> Result<usize, Error>;
}
