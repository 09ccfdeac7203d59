//! What a flow's function gets: its input, and `ask`, `confirm`, `approve` and `step`, which
//! replay the run's journal before they ask anything new.

use super::Interrupt;
use super::unstored::Unstored;
use crate::Session;
use crate::bridge::{Bridge, Decided, decide, outcome_from};
use crate::store::Saved;
use askbridge_core::run::{AskRecord, JournalEntry, Origin, Run, fingerprint_of};
use askbridge_core::{Answer, Approval, Identity, Kind, Millis, NewQuestion, Question, RunId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

mod batch;
mod journal;
use journal::AskAt;

enum Mode {
    Blocking(Session),
    Run(Box<Mutex<Replay>>),
}

/// A run being replayed: its journal, how far the function has got in it, and whether it has
/// reached a question nobody has answered.
pub(super) struct Replay {
    run: Run,
    owner: String,
    cursor: usize,
    suspended: Option<Suspension>,
    /// Carried ahead before its answer is claimed (see `ahead.rs`): nothing may be written or
    /// run for real; `broken` once the function tried.
    ahead: bool,
    broken: bool,
    /// A step's result is in the journal but not yet written (see `gate.rs`).
    unsaved: bool,
}

/// The question a run stopped at.
#[derive(Clone, Debug)]
pub(super) struct Suspension {
    /// The question.
    pub(super) question: Question,
    /// Stored already; otherwise the park stores it with the run, in one step.
    pub(super) stored: bool,
}

struct ContextInner {
    bridge: Bridge,
    /// Where a run started here waits to be stored with its first step; `None` for contexts
    /// that never write (blocking mode, carrying a run ahead).
    unstored: Option<Arc<Unstored>>,
    /// Serialises writes of the run (a step's journal entry, the heartbeat's lease renewal): each
    /// takes its snapshot under this lock, so the last write has the latest journal.
    saving: tokio::sync::Mutex<()>,
    input: String,
    run_id: Option<RunId>,
    origin: Origin,
    mode: Mode,
}

/// See the module documentation.
#[derive(Clone)]
pub struct FlowContext {
    inner: Arc<ContextInner>,
}

impl std::fmt::Debug for FlowContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowContext")
            .field("run_id", &self.inner.run_id)
            .finish()
    }
}

impl FlowContext {
    pub(super) fn for_run(flows: &super::Flows, bridge: &Bridge, run: Run, owner: &str) -> Self {
        Self::replaying(bridge, Some(flows.unstored.clone()), run, owner, false)
    }

    /// A context that carries `run` ahead (see `ahead.rs`).
    pub(super) fn ahead(bridge: &Bridge, run: Run) -> Self {
        Self::replaying(bridge, None, run, "", true)
    }

    fn replaying(
        bridge: &Bridge,
        unstored: Option<Arc<Unstored>>,
        run: Run,
        owner: &str,
        ahead: bool,
    ) -> Self {
        FlowContext {
            inner: Arc::new(ContextInner {
                bridge: bridge.clone(),
                unstored,
                saving: tokio::sync::Mutex::new(()),
                input: run.input.clone(),
                run_id: Some(run.id.clone()),
                origin: run.origin.clone(),
                mode: Mode::Run(Box::new(Mutex::new(Replay {
                    run,
                    owner: owner.to_owned(),
                    cursor: 0,
                    suspended: None,
                    ahead,
                    broken: false,
                    unsaved: false,
                }))),
            }),
        }
    }

    pub(super) fn blocking(bridge: &Bridge, input: &str, session: Session) -> Self {
        FlowContext {
            inner: Arc::new(ContextInner {
                bridge: bridge.clone(),
                unstored: None,
                saving: tokio::sync::Mutex::new(()),
                input: input.to_owned(),
                run_id: None,
                origin: Origin {
                    chat: None,
                    user: Identity::new(session.id()),
                    user_name: None,
                },
                mode: Mode::Blocking(session),
            }),
        }
    }

    /// What the run was started with (`/deploy staging` gives `staging`).
    pub fn input(&self) -> &str {
        &self.inner.input
    }

    /// The run's id (`None` in blocking mode).
    pub fn run_id(&self) -> Option<&RunId> {
        self.inner.run_id.as_ref()
    }

    /// Where the run came from.
    pub fn origin(&self) -> &Origin {
        &self.inner.origin
    }

    fn replay(&self) -> Option<MutexGuard<'_, Replay>> {
        match &self.inner.mode {
            Mode::Run(replay) => Some(replay.lock().unwrap_or_else(|p| p.into_inner())),
            Mode::Blocking(_) => None,
        }
    }

    /// The journal so far (empty in blocking mode).
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.replay()
            .map(|r| r.run.journal.clone())
            .unwrap_or_default()
    }

    /// Asks; the answer, or why there is none: [`Interrupt::NoAnswer`] (declined, timed out —
    /// the default is returned instead when the question has one —, cancelled), and in a run,
    /// [`Interrupt::Suspended`] when nobody has answered yet (pass it on with `?`).
    pub async fn ask(&self, request: NewQuestion) -> Result<Answer, Interrupt> {
        if let Mode::Blocking(session) = &self.inner.mode {
            return Ok(Box::pin(session.ask(request)).await?);
        }
        let record = self.recorded(request).await?;
        Ok(outcome_from(
            record.question_id,
            record.status,
            record.value,
            record.message,
        )?)
    }

    /// Asks for approval of an action (`NewQuestion::ask(prompt).approve(action)`): how it was
    /// allowed, or `NoAnswer` (declined with the approver's feedback, timed out, cancelled);
    /// `Suspended` while nobody has decided. Approvers are the request's `answerers`, else
    /// `ASKBRIDGE_APPROVERS` — never the person who started the run by default.
    pub async fn approve(&self, request: NewQuestion) -> Result<Approval, Interrupt> {
        let request = request.kind(Kind::Approval);
        if let Mode::Blocking(session) = &self.inner.mode {
            return Ok(Box::pin(session.approve(request)).await?);
        }
        let digest = request
            .action
            .as_ref()
            .map(|a| a.digest())
            .unwrap_or_default();
        let record = self.recorded(request).await?;
        Ok(decide(
            &record.question_id,
            Decided {
                status: record.status,
                value: record.value.as_ref(),
                message: record.message,
                by: &record.by,
                rule_id: None,
                digest,
                edited: record.edited.map(|action| *action),
            },
        )?)
    }

    /// Asks for a form and reads its answer into `T` (see [`crate::Session::form`]); a type
    /// that does not match the form fails the run, naming the mismatch.
    pub async fn form<T: serde::de::DeserializeOwned>(
        &self,
        request: NewQuestion,
    ) -> Result<T, Interrupt> {
        let answer = self.ask(request).await?;
        crate::bridge::typed(answer).map_err(|error| Interrupt::fail(error.to_string()))
    }

    /// Asks yes or no: `Ok(false)` for no, a decline, or a timeout without default (as
    /// [`crate::Session::confirm`]); `Err(Suspended)` while nobody has answered.
    pub async fn confirm(&self, request: NewQuestion) -> Result<bool, Interrupt> {
        match self.ask(request.kind(Kind::Confirm)).await {
            Ok(Answer::Bool(yes)) => Ok(yes),
            Ok(_) | Err(Interrupt::NoAnswer(_)) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// The journal's record of this ask: replayed, or — for a question the run meets for the
    /// first time — registered (and `Suspended` returned), unless a rule decided it at once.
    async fn recorded(&self, request: NewQuestion) -> Result<AskRecord, Interrupt> {
        let request = self.complete(request);
        let fingerprint = fingerprint_of(&request).map_err(crate::Error::from)?;
        let question_id = match self.next_ask(&request, &fingerprint)? {
            AskAt::Recorded(record) => return Ok(*record),
            AskAt::New(question_id) => question_id,
        };
        if request.kind != Kind::Approval {
            // Stored with the run when it parks (one step); only approvals are stored now, since
            // a rule may decide one at once and the run then goes on.
            // Boxed, as the approval's registration below and the blocking session's asks: a
            // flow's future is as large as the largest future it awaits, and most asks are
            // replayed from the journal, awaiting none of these. Inline they made the example
            // flow's future 16.6 KB (2.9 KB boxed), allocated and moved on every resume.
            let question =
                Box::pin(self.inner.bridge.prepare_for_run(request, question_id)).await?;
            return Err(self.suspend(question, false));
        }
        // Stored at once (a rule may decide it): not while carried ahead.
        self.unless_ahead()?;
        let question = Box::pin(self.inner.bridge.create_for_run(request, question_id)).await?;
        if question.is_pending() {
            return Err(self.suspend(question, true));
        }
        let mut replay = self.replay().expect("run mode");
        // Decided at once (an "always allow" rule): no need to wait.
        replay.run.absorb(&question);
        replay.cursor += 1;
        match replay.run.journal.last() {
            Some(JournalEntry::Ask(record)) => Ok(record.clone()),
            _ => unreachable!("absorb appends an ask"),
        }
    }

    /// Runs `work` once: on replay, returns its recorded result instead of running it again.
    /// The result is written to the store with the run's next write, which comes before the
    /// function waits on anything or runs another step (see `gate.rs`): when a step is the last
    /// thing before the run's end or its next question, it costs no write of its own.
    pub async fn step<T, F>(&self, name: &str, work: F) -> Result<T, Interrupt>
    where
        T: Serialize + DeserializeOwned,
        F: Future<Output = T>,
    {
        if matches!(self.inner.mode, Mode::Blocking(_)) {
            return Ok(work.await);
        }
        if let Some(recorded) = self.next_step(name)? {
            return serde_json::from_value(recorded).map_err(|e| {
                Interrupt::fail(format!(
                    "step `{name}`'s recorded result no longer reads: {e}"
                ))
            });
        }
        // Its work must not run before the answer is claimed, nor before an earlier step's
        // result is written.
        self.unless_ahead()?;
        self.write_unsaved().await?;
        let value = work.await;
        let json = serde_json::to_value(&value).map_err(|e| {
            Interrupt::fail(format!("step `{name}`'s result cannot be recorded: {e}"))
        })?;
        if let Some(mut replay) = self.replay() {
            replay.run.journal.push(JournalEntry::Step {
                name: name.to_owned(),
                value: json,
            });
            replay.cursor += 1;
            replay.unsaved = true;
        }
        Ok(value)
    }

    /// Is a step's result waiting for the run's next write?
    pub(super) fn unsaved(&self) -> bool {
        self.replay().is_some_and(|r| r.unsaved)
    }

    /// Writes the run if a step's result waits for it (see `gate.rs`); `Superseded` when
    /// another process has taken the run over.
    pub(super) async fn write_unsaved(&self) -> Result<(), Interrupt> {
        if self.unsaved() && !self.save(false).await? {
            return Err(Interrupt::Superseded);
        }
        Ok(())
    }

    /// Writes the run as it stands (renewing the lease when `renew`). False when another process
    /// has taken the run over.
    pub(super) async fn save(&self, renew: bool) -> Result<bool, crate::store::Error> {
        let _writing = self.inner.saving.lock().await;
        let (run, owner, was_unsaved) = {
            let Some(mut replay) = self.replay() else {
                return Ok(true);
            };
            if replay.ahead {
                replay.broken = true;
                return Ok(false);
            }
            if renew {
                replay.run.lease_until =
                    Some(Millis::now().after(self.inner.bridge.options().run_lease));
            }
            let was_unsaved = std::mem::take(&mut replay.unsaved);
            (replay.run.clone(), replay.owner.clone(), was_unsaved)
        };
        let Some(unstored) = &self.inner.unstored else {
            return Ok(true);
        };
        let saved = unstored.save(&self.inner.bridge, &run, &owner).await;
        if saved.is_err() {
            // Not written after all: the next write (or the gate) tries again.
            if let Some(mut replay) = self.replay() {
                replay.unsaved |= was_unsaved;
            }
        }
        Ok(saved? != Saved::Lost)
    }

    /// Skips the rest of the journal: the next ask is a new question. For flows that read the
    /// journal themselves (HTTP flows get it whole and answer with the next question).
    pub fn fast_forward(&self) {
        if let Some(mut replay) = self.replay() {
            replay.cursor = replay.run.journal.len();
        }
    }

    /// Fills in what a run's question needs: its session, its run, and by default the run's chat
    /// as target and the person who started it as the only answerer.
    fn complete(&self, mut request: NewQuestion) -> NewQuestion {
        let replay = self.replay().expect("run mode");
        request.session_id = replay.run.session_id();
        request.run_id = Some(replay.run.id.clone());
        if request.targets.is_empty() {
            request.targets = replay.run.origin.chat.iter().cloned().collect();
        }
        // Approvals are the exception: their approvers come from the question or from
        // ASKBRIDGE_APPROVERS, never from who happened to start the run.
        if request.answerers.is_empty() && request.kind != Kind::Approval {
            request.answerers = vec![replay.run.origin.user.clone()];
        }
        request
    }

    /// The replay state, unless the function already reached an unanswered question: then
    /// nothing after it may run (not even a step), so everything returns `Suspended`.
    fn unsuspended(&self) -> Result<MutexGuard<'_, Replay>, Interrupt> {
        let replay = self.replay().expect("run mode");
        match &replay.suspended {
            Some(suspension) => Err(Interrupt::Suspended {
                question_id: suspension.question.id.clone(),
            }),
            None => Ok(replay),
        }
    }

    /// Stops the function at `question`, nobody having answered it (`stored` already, or to be
    /// stored with the run when it parks): what the run parks on, and the `Suspended` to return.
    fn suspend(&self, question: Question, stored: bool) -> Interrupt {
        let question_id = question.id.clone();
        self.replay().expect("run mode").suspended = Some(Suspension { question, stored });
        Interrupt::Suspended { question_id }
    }

    /// While carried ahead: marks the attempt broken and stops the function (with `Suspended`,
    /// which flows pass on; the result is discarded anyway).
    fn unless_ahead(&self) -> Result<(), Interrupt> {
        let mut replay = self.replay().expect("run mode");
        if !replay.ahead {
            return Ok(());
        }
        replay.broken = true;
        Err(Interrupt::Suspended {
            question_id: replay.run.question_id(replay.run.asks()),
        })
    }

    /// Did a function carried ahead reach something it may not do before the claim?
    pub(super) fn broken(&self) -> bool {
        self.replay().is_some_and(|r| r.broken)
    }

    /// The run as the function left it, and the question it stopped at, if any.
    pub(super) fn finish(&self) -> (Run, Option<Suspension>) {
        let replay = self.replay().expect("run mode");
        (replay.run.clone(), replay.suspended.clone())
    }
}
