//! Flows: functions people start from a chat (`/run deploy staging`, or `/deploy staging`) that ask
//! them things and never hold a thread (or a task) while they wait.
//!
//! ```no_run
//! # use askbridge::{Bridge, Error};
//! # use askbridge::core::{Answer, NewQuestion};
//! # fn register(bridge: &Bridge) -> Result<(), Error> {
//! bridge.flow("deploy", "Deploys a version to an environment", |ctx| async move {
//!     let env = if ctx.input().is_empty() { "staging".to_owned() } else { ctx.input().to_owned() };
//!     let version = ctx.ask(NewQuestion::ask("Which version?").options(["1.4.2", "1.5.0-rc1"])).await?;
//!     if !ctx.confirm(NewQuestion::confirm(format!("Deploy {version} to {env}?"))).await? {
//!         return Ok("Not deployed.".into());
//!     }
//!     // Side effects go in steps: a step runs once; on replay its recorded result comes back.
//!     let url = ctx.step("deploy", async { format!("https://{env}.example/") }).await?;
//!     Ok(format!("Deployed {version} to {url}"))
//! })?;
//! # Ok(()) }
//! ```
//!
//! # How a run waits
//!
//! A run is a record in the store ([`askbridge_core::run::Run`]). `ctx.ask` of a question not yet
//! answered registers it (shown in the run's chat; by default only the person who started the
//! run may answer), the run is saved as waiting, and `ask` returns [`Error::Pending`], which the
//! function passes on with `?`; the run's task ends. When the question is resolved — a tap, a
//! typed `/answer`, a plain reply, the HTTP API — the answer joins the run's journal and the
//! function runs again **from the top**: asks already in the journal return their recorded
//! answers, steps their recorded results. So code outside steps re-runs on every resume; keep it
//! free of side effects, and put side effects in `ctx.step`.
//!
//! Exactly once: taking a run to execute it is atomic in the store (one of several processes
//! seeing the same answer gets it), and the resolved question stays in the store's outbox until
//! its run was taken, so a crash between the answer and the resume is picked up by the sweeper.
//! An executing run holds a lease it renews; if its process dies, another takes over when the
//! lease runs out and replays from the journal (a step that was in progress when the process
//! died runs again; a step that finished never does).
//!
//! The same function also runs in *blocking* mode ([`Bridge::run_blocking`]): asks wait for
//! their answers like [`crate::Session::ask`], for callers that are not chats.

mod executor;
pub mod http;

pub(crate) use executor::Resume;

use crate::bridge::Bridge;
use crate::{Error, Session};
use askbridge_core::run::{AskRecord, JournalEntry, Origin, Run, fingerprint_of};
use askbridge_core::{Answer, Approval, Kind, Millis, NewQuestion, QuestionId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// A boxed future, as flows return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A function people can start from a chat. Object-safe; see [`Bridge::flow`] for closures.
pub trait Flow: Send + Sync {
    /// Runs (or re-runs, on resume) the function. Returns the result to post in the chat.
    fn run(&self, ctx: FlowContext) -> BoxFuture<Result<String, Error>>;

    /// One line for `/help`.
    fn description(&self) -> String;
}

struct FnFlow<F> {
    function: F,
    description: String,
}

impl<F, Fut> Flow for FnFlow<F>
where
    F: Fn(FlowContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<String, Error>> + Send + 'static,
{
    fn run(&self, ctx: FlowContext) -> BoxFuture<Result<String, Error>> {
        Box::pin((self.function)(ctx))
    }

    fn description(&self) -> String {
        self.description.clone()
    }
}

/// Commands a flow may not take: the grammar's own.
const RESERVED: [&str; 10] = [
    "answer", "decline", "pick", "show", "pending", "help", "start", "whoami", "run", "rules",
];

fn check_flow_name(name: &str) -> Result<(), Error> {
    let well_formed = !name.is_empty()
        && name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !well_formed {
        return Err(askbridge_core::Error::Invalid {
            field: "flow",
            reason: format!(
                "`{name}` must be 1-32 characters of a-z, 0-9 and _, starting with a letter"
            ),
        }
        .into());
    }
    if RESERVED.contains(&name) {
        return Err(askbridge_core::Error::Invalid {
            field: "flow",
            reason: format!("`{name}` is one of askbridge's own commands"),
        }
        .into());
    }
    Ok(())
}

impl Bridge {
    /// Registers a flow, startable with `/run <name> [input]` and `/<name> [input]`.
    pub fn flow<F, Fut>(&self, name: &str, description: &str, function: F) -> Result<(), Error>
    where
        F: Fn(FlowContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, Error>> + Send + 'static,
    {
        self.register_flow(
            name,
            Arc::new(FnFlow {
                function,
                description: description.to_owned(),
            }),
        )
    }

    /// Registers any [`Flow`] (an HTTP endpoint, say).
    pub fn register_flow(&self, name: &str, flow: Arc<dyn Flow>) -> Result<(), Error> {
        check_flow_name(name)?;
        self.flows_mut().insert(name.to_owned(), flow);
        tracing::info!(flow = name, "flow registered");
        Ok(())
    }

    /// The flow called `name`.
    pub fn find_flow(&self, name: &str) -> Option<Arc<dyn Flow>> {
        self.flows().get(name).cloned()
    }

    /// The flows, by name, with their descriptions.
    pub fn flow_list(&self) -> Vec<(String, String)> {
        let mut list: Vec<(String, String)> = self
            .flows()
            .iter()
            .map(|(name, flow)| (name.clone(), flow.description()))
            .collect();
        list.sort();
        list
    }

    /// Runs flow `name` to its end in blocking mode: its asks wait in `session` (shown on the
    /// session's default targets) like [`Session::ask`].
    pub async fn run_blocking(
        &self,
        name: &str,
        input: &str,
        session: Session,
    ) -> Result<String, Error> {
        let flow = self
            .find_flow(name)
            .ok_or_else(|| Error::UnknownFlow(name.to_owned()))?;
        let ctx = FlowContext {
            inner: Arc::new(ContextInner {
                bridge: self.clone(),
                saving: tokio::sync::Mutex::new(()),
                input: input.to_owned(),
                run_id: None,
                origin: Origin {
                    chat: None,
                    user: session.id().to_owned(),
                    user_name: None,
                },
                mode: Mode::Blocking(session),
            }),
        };
        flow.run(ctx).await
    }
}

enum Mode {
    Blocking(Session),
    Run(Box<Mutex<Replay>>),
}

/// A run being replayed: its journal, how far the function has got in it, and whether it has
/// reached a question nobody has answered.
pub(crate) struct Replay {
    run: Run,
    owner: String,
    cursor: usize,
    suspended: Option<QuestionId>,
}

struct ContextInner {
    bridge: Bridge,
    /// Serialises writes of the run (a step's journal entry, the heartbeat's lease renewal): each
    /// takes its snapshot under this lock, so the last write has the latest journal.
    saving: tokio::sync::Mutex<()>,
    input: String,
    run_id: Option<String>,
    origin: Origin,
    mode: Mode,
}

/// What a flow's function gets: its input, and `ask`, `confirm` and `step`.
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

/// What the journal says at the cursor, for an ask.
enum AskAt {
    Recorded(AskRecord),
    New(QuestionId),
}

impl FlowContext {
    fn for_run(bridge: &Bridge, run: Run, owner: &str) -> Self {
        FlowContext {
            inner: Arc::new(ContextInner {
                bridge: bridge.clone(),
                saving: tokio::sync::Mutex::new(()),
                input: run.input.clone(),
                run_id: Some(run.id.clone()),
                origin: run.origin.clone(),
                mode: Mode::Run(Box::new(Mutex::new(Replay {
                    run,
                    owner: owner.to_owned(),
                    cursor: 0,
                    suspended: None,
                }))),
            }),
        }
    }

    /// What the run was started with (`/deploy staging` gives `staging`).
    pub fn input(&self) -> &str {
        &self.inner.input
    }

    /// The run's id (`None` in blocking mode).
    pub fn run_id(&self) -> Option<&str> {
        self.inner.run_id.as_deref()
    }

    /// Where the run came from.
    pub fn origin(&self) -> &Origin {
        &self.inner.origin
    }

    pub(crate) fn replay(&self) -> Option<std::sync::MutexGuard<'_, Replay>> {
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

    /// Asks; the answer, or why there is none: [`Error::Declined`], [`Error::Timeout`] (the
    /// default is returned instead when the question has one), [`Error::Cancelled`], and in a
    /// run, [`Error::Pending`] when nobody has answered yet (pass it on with `?`).
    pub async fn ask(&self, request: NewQuestion) -> Result<Answer, Error> {
        if let Mode::Blocking(session) = &self.inner.mode {
            return session.ask(request).await;
        }
        outcome_of(self.recorded(request).await?)
    }

    /// Asks for approval of an action (`NewQuestion::ask(prompt).approve(action)`): how it was
    /// allowed, or `Declined` with the approver's feedback, `Timeout`, `Cancelled`; `Pending`
    /// while nobody has decided. Approvers are the request's `answerers`, else
    /// `ASKBRIDGE_APPROVERS` — never the person who started the run by default.
    pub async fn approve(&self, request: NewQuestion) -> Result<Approval, Error> {
        let request = request.kind(Kind::Approval);
        if let Mode::Blocking(session) = &self.inner.mode {
            return session.approve(request).await;
        }
        let digest = request
            .action
            .as_ref()
            .map(|a| a.digest())
            .unwrap_or_default();
        let record = self.recorded(request).await?;
        let id = record.question_id.to_string();
        crate::bridge::decide(
            &id,
            record.status,
            record.value.as_ref(),
            record.message,
            &record.by,
            None,
            digest,
        )
    }

    /// The journal's record of this ask: replayed, or — for a question the run meets for the
    /// first time — registered (and `Pending` returned), unless a rule decided it at once.
    async fn recorded(&self, request: NewQuestion) -> Result<AskRecord, Error> {
        let request = self.complete(request);
        let fingerprint = fingerprint_of(&request)?;
        match self.next_ask(&request, &fingerprint)? {
            AskAt::Recorded(record) => Ok(record),
            AskAt::New(question_id) => {
                let question = self
                    .inner
                    .bridge
                    .create_for_run(request, question_id.clone())
                    .await?;
                let mut replay = self.replay().expect("run mode");
                if !question.is_pending() {
                    // Decided at once (an "always allow" rule): no need to wait.
                    replay.run.absorb(&question);
                    replay.cursor += 1;
                    return match replay.run.journal.last() {
                        Some(JournalEntry::Ask(record)) => Ok(record.clone()),
                        _ => unreachable!("absorb appends an ask"),
                    };
                }
                replay.suspended = Some(question_id.clone());
                Err(Error::Pending {
                    question_id: question_id.to_string(),
                })
            }
        }
    }

    /// Asks yes or no: `Ok(false)` for no, a decline, or a timeout without default (as
    /// [`crate::Session::confirm`]); `Err(Pending)` while nobody has answered.
    pub async fn confirm(&self, request: NewQuestion) -> Result<bool, Error> {
        match self.ask(request.kind(Kind::Confirm)).await {
            Ok(Answer::Bool(yes)) => Ok(yes),
            Ok(_) => Ok(false),
            Err(pending @ (Error::Pending { .. } | Error::Diverged { .. } | Error::LeaseLost)) => {
                Err(pending)
            }
            Err(Error::Declined { .. } | Error::Timeout { .. } | Error::Cancelled { .. }) => {
                Ok(false)
            }
            Err(other) => Err(other),
        }
    }

    /// Runs `work` once: on replay, returns its recorded result instead of running it again.
    /// The result is written to the store before `step` returns.
    pub async fn step<T, F>(&self, name: &str, work: F) -> Result<T, Error>
    where
        T: Serialize + DeserializeOwned,
        F: Future<Output = T>,
    {
        if matches!(self.inner.mode, Mode::Blocking(_)) {
            return Ok(work.await);
        }
        if let Some(recorded) = self.next_step(name)? {
            return serde_json::from_value(recorded).map_err(|e| {
                Error::Flow(format!(
                    "step `{name}`'s recorded result no longer reads: {e}"
                ))
            });
        }
        let value = work.await;
        let json = serde_json::to_value(&value)
            .map_err(|e| Error::Flow(format!("step `{name}`'s result cannot be recorded: {e}")))?;
        if let Some(mut replay) = self.replay() {
            replay.run.journal.push(JournalEntry::Step {
                name: name.to_owned(),
                value: json,
            });
            replay.cursor += 1;
        }
        if !self.save(false).await? {
            return Err(Error::LeaseLost);
        }
        Ok(value)
    }

    /// Writes the run as it stands (renewing the lease when `renew`). False when another process
    /// has taken the run over.
    pub(crate) async fn save(&self, renew: bool) -> Result<bool, Error> {
        let _writing = self.inner.saving.lock().await;
        let (run, owner) = {
            let Some(mut replay) = self.replay() else {
                return Ok(true);
            };
            if renew {
                replay.run.lease_until =
                    Some(Millis::now().after(self.inner.bridge.options().run_lease));
            }
            (replay.run.clone(), replay.owner.clone())
        };
        self.inner.bridge.store().save_run(&run, &owner).await
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
    /// nothing after it may run (not even a step), so everything returns `Pending`.
    fn unsuspended(&self) -> Result<std::sync::MutexGuard<'_, Replay>, Error> {
        let replay = self.replay().expect("run mode");
        match &replay.suspended {
            Some(question) => Err(Error::Pending {
                question_id: question.to_string(),
            }),
            None => Ok(replay),
        }
    }

    fn next_ask(&self, request: &NewQuestion, fingerprint: &str) -> Result<AskAt, Error> {
        let mut replay = self.unsuspended()?;
        let cursor = replay.cursor;
        match replay.run.journal.get(cursor) {
            Some(JournalEntry::Ask(record)) if record.fingerprint == fingerprint => {
                let record = record.clone();
                replay.cursor += 1;
                Ok(AskAt::Recorded(record))
            }
            Some(JournalEntry::Ask(record)) if record.prompt == request.prompt.trim() => {
                Err(Error::Diverged {
                    // Same words, different question: other options, or another action to approve.
                    expected: format!("\"{}\" with other options or another action", record.prompt),
                    found: format!("asks \"{}\" differently", request.prompt),
                })
            }
            Some(JournalEntry::Ask(record)) => Err(Error::Diverged {
                expected: format!("the question \"{}\"", record.prompt),
                found: format!("asks \"{}\"", request.prompt),
            }),
            Some(JournalEntry::Step { name, .. }) => Err(Error::Diverged {
                expected: format!("step `{name}`"),
                found: format!("asks \"{}\"", request.prompt),
            }),
            None => Ok(AskAt::New(replay.run.question_id(replay.run.asks()))),
        }
    }

    fn next_step(&self, name: &str) -> Result<Option<serde_json::Value>, Error> {
        let mut replay = self.unsuspended()?;
        let cursor = replay.cursor;
        match replay.run.journal.get(cursor) {
            Some(JournalEntry::Step {
                name: recorded,
                value,
            }) if recorded == name => {
                let value = value.clone();
                replay.cursor += 1;
                Ok(Some(value))
            }
            Some(JournalEntry::Step { name: recorded, .. }) => Err(Error::Diverged {
                expected: format!("step `{recorded}`"),
                found: format!("runs step `{name}`"),
            }),
            Some(JournalEntry::Ask(record)) => Err(Error::Diverged {
                expected: format!("the question \"{}\"", record.prompt),
                found: format!("runs step `{name}`"),
            }),
            None => Ok(None),
        }
    }

    /// The run as the function left it, and the question it stopped at, if any.
    fn finish(&self) -> (Run, Option<QuestionId>) {
        let replay = self.replay().expect("run mode");
        (replay.run.clone(), replay.suspended.clone())
    }
}

/// What a recorded ask returns on replay: the same as it returned live.
fn outcome_of(record: AskRecord) -> Result<Answer, Error> {
    crate::bridge::answer_or_reason(
        record.question_id.to_string(),
        record.status,
        record.value,
        record.message,
    )
}
