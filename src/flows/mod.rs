//! Flows: functions people start from a chat (`/run deploy staging`, or `/deploy staging`) that ask
//! them things and never hold a thread (or a task) while they wait.
//!
//! ```no_run
//! # use askbridge::{Bridge, Error};
//! # use askbridge::core::{Answer, NewQuestion};
//! # use askbridge::flows::Flows;
//! # fn register() -> Result<Flows, Error> {
//! let flows = Flows::new().flow("deploy", "Deploys a version to an environment", |ctx| async move {
//!     let env = if ctx.input().is_empty() { "staging".to_owned() } else { ctx.input().to_owned() };
//!     let version = ctx.ask(NewQuestion::ask("Which version?").options(["1.4.2", "1.5.0-rc1"])).await?;
//!     if !ctx.confirm(NewQuestion::confirm(format!("Deploy {version} to {env}?"))).await? {
//!         return Ok("Not deployed.".into());
//!     }
//!     // Side effects go in steps: a step runs once; on replay its recorded result comes back.
//!     let url = ctx.step("deploy", async { format!("https://{env}.example/") }).await?;
//!     Ok(format!("Deployed {version} to {url}"))
//! })?;
//! // Then: Bridge::builder(store).runner(Arc::new(flows)).start().await?
//! # Ok(flows) }
//! ```
//!
//! # How a run waits
//!
//! A run is a record in the store ([`askbridge_core::run::Run`]). `ctx.ask` of a question not yet
//! answered registers it (shown in the run's chat; by default only the person who started the
//! run may answer), the run is saved as waiting, and `ask` returns [`Interrupt::Suspended`], which
//! the function passes on with `?`; the run's task ends. When the question is resolved — a tap, a
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
//! died runs again; a step whose result was written never does — it is written with the run's
//! next write, before the function waits on anything, see `gate.rs`).
//!
//! The same function also runs in *blocking* mode ([`Flows::run_blocking`]): asks wait for
//! their answers like [`crate::Session::ask`], for callers that are not chats.
//!
//! The flow engine sits above the bridge: [`Flows`] is the [`crate::bridge::Runner`] a bridge is
//! built with, and the bridge resumes runs through that trait without knowing what a flow is.
//!
//! - `mod.rs`: the [`Flow`] trait and [`Flows`], the flows a bridge runs;
//! - `context/`: [`FlowContext`], the journal replay behind `ask`, `confirm`, `approve` and
//!   `step`;
//! - `executor.rs`: starting, resuming, taking over and reporting runs;
//! - `gate.rs`: writing a step's result with the run's next write, before any wait;
//! - `ahead.rs`: carrying a run to its next question before its answer is claimed, so that the
//!   claim saves both in one store step;
//! - `interrupt.rs`: [`Interrupt`], why a function stopped (waiting is not a failure);
//! - `http.rs`: flows that are HTTP endpoints, in any language.

mod ahead;
mod context;
mod executor;
mod gate;
pub mod http;
mod interrupt;
mod unstored;

pub use context::FlowContext;
pub use interrupt::Interrupt;

use crate::bridge::{Ahead, Bridge, Resume, Runner, Storing};
use crate::{Error, Session};
use askbridge_core::Question;
use askbridge_core::run::{Origin, Run};
use async_trait::async_trait;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, as flows return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a flow's function returns: the text posted in its chat, or why it stopped.
pub type FlowResult = Result<String, Interrupt>;

/// A function people can start from a chat. Object-safe; see [`Flows::flow`] for closures.
pub trait Flow: Send + Sync {
    /// Runs (or re-runs, on resume) the function. Returns the result to post in the chat.
    fn run(&self, ctx: FlowContext) -> BoxFuture<FlowResult>;

    /// One line for `/help`.
    fn description(&self) -> String;

    /// May askbridge carry a run of this flow ahead: execute it with an answer before the answer
    /// is claimed, up to its next question (see `ahead.rs`)? Such an attempt runs the code
    /// between two questions once more, and is dropped at the first thing it would wait for
    /// (a step, I/O, a timer) — harmless for code that is replay-safe, as code outside steps
    /// must be. A flow whose every turn is a remote call says no.
    fn may_run_ahead(&self) -> bool {
        true
    }
}

struct FnFlow<F> {
    function: F,
    description: String,
}

impl<F, Fut> Flow for FnFlow<F>
where
    F: Fn(FlowContext) -> Fut + Send + Sync,
    Fut: Future<Output = FlowResult> + Send + 'static,
{
    fn run(&self, ctx: FlowContext) -> BoxFuture<FlowResult> {
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
    let reason = if !well_formed {
        format!("`{name}` must be 1-32 characters of a-z, 0-9 and _, starting with a letter")
    } else if RESERVED.contains(&name) {
        format!("`{name}` is one of askbridge's own commands")
    } else {
        return Ok(());
    };
    Err(askbridge_core::Error::Invalid {
        field: "flow",
        reason,
    }
    .into())
}

/// The flows a bridge runs: its [`Runner`], given to [`crate::bridge::BridgeBuilder::runner`].
/// Flows are registered here before the bridge is built, so start-up recovery finds every flow
/// a waiting run may need. A cheap handle; clones share the flows and the runs in flight.
#[derive(Clone, Default)]
pub struct Flows {
    flows: Arc<HashMap<String, Arc<dyn Flow>>>,
    /// Runs started here that are stored with their first step.
    unstored: Arc<unstored::Unstored>,
}

impl std::fmt::Debug for Flows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flows")
            .field("flows", &self.names())
            .finish()
    }
}

impl Flows {
    /// No flows yet.
    pub fn new() -> Self {
        Flows::default()
    }

    /// Adds a flow, startable with `/run <name> [input]` and `/<name> [input]`.
    pub fn flow<F, Fut>(self, name: &str, description: &str, function: F) -> Result<Self, Error>
    where
        F: Fn(FlowContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = FlowResult> + Send + 'static,
    {
        let description = description.to_owned();
        self.register(
            name,
            Arc::new(FnFlow {
                function,
                description,
            }),
        )
    }

    /// Adds any [`Flow`] (an HTTP endpoint, say).
    pub fn register(mut self, name: &str, flow: Arc<dyn Flow>) -> Result<Self, Error> {
        check_flow_name(name)?;
        Arc::make_mut(&mut self.flows).insert(name.to_owned(), flow);
        tracing::info!(flow = name, "flow registered");
        Ok(self)
    }

    /// The flow called `name`.
    pub fn find(&self, name: &str) -> Option<Arc<dyn Flow>> {
        self.flows.get(name).cloned()
    }

    /// Runs flow `name` to its end in blocking mode: its asks wait in `session` (shown on the
    /// session's default targets) like [`Session::ask`].
    pub fn run_blocking(
        &self,
        bridge: &Bridge,
        name: &str,
        input: &str,
        session: Session,
    ) -> BoxFuture<FlowResult> {
        let flow = self.find(name);
        let ctx = FlowContext::blocking(bridge, input, session);
        let name = name.to_owned();
        Box::pin(async move {
            match flow {
                Some(flow) => flow.run(ctx).await,
                None => Err(Error::UnknownFlow(name).into()),
            }
        })
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.flows.keys().cloned().collect();
        names.sort();
        names
    }
}

#[async_trait]
impl Runner for Flows {
    fn flows(&self) -> Vec<(String, String)> {
        let mut list: Vec<(String, String)> = self
            .flows
            .iter()
            .map(|(name, flow)| (name.clone(), flow.description()))
            .collect();
        list.sort();
        list
    }

    async fn start(
        &self,
        bridge: &Bridge,
        name: &str,
        input: &str,
        origin: Origin,
        storing: Storing,
    ) -> Result<Run, Error> {
        let flow = self
            .find(name)
            .ok_or_else(|| Error::UnknownFlow(name.to_owned()))?;
        executor::start(self, bridge, flow, name, input, origin, storing).await
    }

    fn ahead(&self, bridge: &Bridge, run: Run, answered: &Question) -> Option<Ahead> {
        let flow = self.find(&run.flow)?;
        ahead::carry(bridge, flow, run, answered)
    }

    fn drive(&self, bridge: &Bridge, run: Run, answered: Question) {
        executor::spawn_drive(self, bridge, None, run, Some(answered));
    }

    async fn resume(&self, bridge: &Bridge, question: &Question) -> Result<Resume, Error> {
        executor::take_up(self, bridge, question).await
    }

    async fn recover(&self, bridge: &Bridge) -> Result<usize, Error> {
        executor::recover(self, bridge).await
    }
}
