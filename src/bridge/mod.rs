//! The bridge: the question registry in front of a store, the channels that show questions, and
//! the in-process API functions call.
//!
//! A [`Bridge`] is a cheap handle (an `Arc` inside); clone it freely. It keeps no state another
//! process would need: questions, where they were shown, and what remains to do after a
//! resolution all live in the store, so any number of processes can share one Redis. What a
//! process does keep is only about itself: its channels, its waiters, its metrics.
//!
//! The bridge is a facade over parts that own their work. Each part is a struct holding only the
//! store roles it uses (see `roles.rs`), so its signature says what it may touch; what the parts
//! share is this process's own (channels, runner, waiters, recent news, metrics), on the handle.
//! A part's functions take the `&Bridge` they were called through, for what they ask of another
//! part: the graph of who calls whom goes through one place.
//!
//! - `mod.rs`: the handle, its settings, its channels and what the parts share;
//! - `facade.rs`: the public functions, each one line into a part;
//! - `builder.rs`: [`BridgeBuilder`], which wires store, channels, runner and options before
//!   anything runs;
//! - `registry.rs` (`Registry`): creating, reading, listing, waiting for and cancelling
//!   questions;
//! - `resolve/` (`Resolver`): the one path from "someone said this about a question" to
//!   "resolved" or "refused": read once, authorize once, fit once, claim once, audit refusals in
//!   one place; `votes.rs` for questions with a quorum;
//! - `effects/` (`Effects`): showing questions on channels, what follows a resolution
//!   (withdrawing buttons everywhere, callbacks, resuming runs); `sweeper.rs`: expiry, finishing
//!   work a crashed process left, recovery and the event pump; `nudges.rs`: reminders and
//!   escalation steps, due through the same open index as expiry;
//! - `approvals.rs` (`Approvals`): approvers, "always allow" rules and the audit trail;
//! - `inbox/` (`Messages`): what a chat message means (`/answer`, `/decline`, `/pending`, plain
//!   replies, `/run`): a `Turn` per message, the commands, and forms filled in one field at a
//!   time in chat, each person's draft in the store;
//! - `runs.rs` (`Runs`): runs as the HTTP API and chats read them;
//! - `leased.rs` (`ExecSessions`): sessions `askbridge exec` holds: their lease, closing them,
//!   and closing those whose lease lapsed; `idempotent.rs` (`Idempotent`): what creates sent
//!   with an `Idempotency-Key` made;
//! - `session.rs`: [`Session`] with `ask`, `confirm`, `approve` and `can_ask`;
//! - `roles.rs`: the store roles each part holds;
//! - `runner.rs`: the [`Runner`] a flow engine is wired in with, so the bridge can resume runs
//!   without knowing what a flow is;
//! - `waiters.rs`: this process's waiters, keyed by question id; `recent.rs`: questions and runs
//!   seen lately, which spare the hot path its reads; `refusals.rs`: how many refusals a caller
//!   gets recorded one by one.

mod approvals;
mod builder;
mod effects;
mod facade;
mod idempotent;
mod inbox;
mod leased;
mod recent;
mod refusals;
mod registry;
mod resolve;
mod roles;
mod runner;
mod runs;
mod session;
mod waiters;

pub use approvals::{Decided, approval_of, decide, outcomes_of};
pub use builder::BridgeBuilder;
pub use idempotent::{KEY_KEPT, Reserved};
pub use registry::CreateError;
pub use resolve::{Attempt, ProgramReply, Said};
pub use runner::{Ahead, Resume, Runner, Storing};
pub use session::{Session, outcome_from, outcome_of, typed};
pub use waiters::{RunNews, Waiters, Woken};

use crate::Error;
use crate::metrics::Metrics;
use crate::store::Store;
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::run::Run;
use askbridge_core::{Channel, Identity, Question, QuestionId, Secret, Target, identity};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long after a resolution its outbox entry waits for the winner's own settle before any
/// sweeper does it.
const SETTLE_GRACE: Duration = Duration::from_secs(10);
/// The outbox effect that records an "always" answer's rule was created.
const EFFECT_RULE: &str = "rule";

/// Settings of a bridge.
#[derive(Clone, Debug)]
pub struct BridgeOptions {
    /// Timeout of questions that name none.
    pub default_timeout: Duration,
    /// Where questions asked through the Rust API are shown when they name no target.
    pub default_targets: Vec<Target>,
    /// How long a process holds a run it executes before another may take it over (renewed
    /// while the run executes).
    pub run_lease: Duration,
    /// Key signing what askbridge POSTs to flow endpoints and callback URLs.
    pub signing_secret: Option<Secret>,
    /// Who may approve approvals that name no answerers (`ASKBRIDGE_APPROVERS`), and manage
    /// rules from a chat. Empty: approvals must name their approvers.
    pub approvers: Vec<Identity>,
    /// Who may start flows from a chat (`ASKBRIDGE_FLOW_STARTERS`). Empty: anyone who can write
    /// to the bot.
    pub flow_starters: Vec<Identity>,
    /// Where callback URLs may point (`ASKBRIDGE_CALLBACK_ALLOW`): public addresses only by
    /// default.
    pub callback_egress: crate::egress::Egress,
    /// Least time between two reminders in one chat, and the shortest `remind_after_s`
    /// (`ASKBRIDGE_REMINDER_GAP_S`).
    pub reminder_gap: Duration,
    /// How long a session `askbridge exec` holds stays open without a renewal
    /// (`ASKBRIDGE_SESSION_LEASE_S`): once it lapses, the sweeper cancels its pending questions and
    /// closes it.
    pub session_lease: Duration,
}

impl Default for BridgeOptions {
    fn default() -> Self {
        BridgeOptions {
            default_timeout: DEFAULT_TIMEOUT,
            default_targets: Vec::new(),
            run_lease: Duration::from_secs(30),
            signing_secret: None,
            approvers: Vec::new(),
            flow_starters: Vec::new(),
            callback_egress: crate::egress::Egress::public_only(),
            reminder_gap: Duration::from_secs(60),
            session_lease: Duration::from_secs(30),
        }
    }
}

/// See the module documentation.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

/// What a bridge is made of. Everything here is fixed when [`BridgeBuilder::start`] makes it:
/// channels and the runner are wired before anything runs, so no part ever meets a bridge that is
/// half set up.
///
/// The parts own their work and hold only the store roles they use (see `roles.rs`); what they
/// share is this process's own: its channels, runner, waiters, recent questions and metrics. A
/// part reaches another part, or what the process shares, through the `&Bridge` its functions
/// take, so the graph of who calls whom stays in one place: the facade.
struct Inner {
    /// The whole store, for the facade's [`Bridge::store`]; the parts hold their roles.
    store: Arc<dyn Store>,
    registry: registry::Registry,
    resolver: resolve::Resolver,
    effects: effects::Effects,
    approvals: approvals::Approvals,
    inbox: inbox::Messages,
    runs: runs::Runs,
    exec_sessions: leased::ExecSessions,
    idempotent: idempotent::Idempotent,
    /// By surface (`telegram`, `discord`, `console`, ...).
    channels: HashMap<String, Arc<dyn Channel>>,
    runner: Option<Arc<dyn Runner>>,
    /// Questions and runs this process saw lately (see `recent.rs`).
    recent: recent::Recent,
    /// This process's name as a run's executor.
    owner_id: String,
    waiters: Waiters,
    options: BridgeOptions,
    metrics: Metrics,
    shutdown: watch::Sender<bool>,
    /// The background tasks (event pump, sweeper), awaited by [`Bridge::stopped`].
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("store", &self.inner.store.describe())
            .field("channels", &self.surfaces())
            .finish()
    }
}

impl Bridge {
    /// A builder of a bridge over `store`: channels, the runner and options go in, then
    /// [`BridgeBuilder::start`] gives a running bridge.
    pub fn builder(store: Arc<dyn Store>) -> BridgeBuilder {
        BridgeBuilder::new(store)
    }

    fn from_parts(parts: builder::Parts) -> Self {
        let builder::Parts {
            store,
            options,
            channels,
            runner,
            questions,
        } = parts;
        let questions = questions.unwrap_or_else(|| store.clone());
        let metrics = Metrics::new(store.round_trips());
        let roles = roles::Roles::of(&store, &questions);
        let callbacks = options.callback_egress.client(Duration::from_secs(15));
        Bridge {
            inner: Arc::new(Inner {
                registry: registry::Registry::new(roles.registry),
                resolver: resolve::Resolver::new(roles.resolver),
                effects: effects::Effects::new(roles.effects, callbacks),
                approvals: approvals::Approvals::new(roles.approvals),
                inbox: inbox::Messages::new(roles.inbox),
                runs: runs::Runs::new(roles.runs),
                exec_sessions: leased::ExecSessions::new(roles.leased),
                idempotent: idempotent::Idempotent::new(roles.idempotent),
                store,
                channels,
                runner,
                recent: recent::Recent::default(),
                owner_id: format!("p{}-{}", std::process::id(), QuestionId::random()),
                waiters: Waiters::default(),
                options,
                metrics,
                shutdown: watch::channel(false).0,
                tasks: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// This process's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// This process's waiters.
    pub fn waiters(&self) -> &Waiters {
        &self.inner.waiters
    }

    /// The settings.
    pub fn options(&self) -> &BridgeOptions {
        &self.inner.options
    }

    /// This process's name as the executor of runs.
    pub(crate) fn owner_id(&self) -> &str {
        &self.inner.owner_id
    }

    /// The channel serving `target`'s surface.
    pub fn channel_for(&self, target: &Target) -> Option<Arc<dyn Channel>> {
        self.inner.channels.get(target.surface()).cloned()
    }

    /// The surfaces with a channel.
    pub fn surfaces(&self) -> Vec<String> {
        let mut surfaces: Vec<String> = self.inner.channels.keys().cloned().collect();
        surfaces.sort();
        surfaces
    }

    /// True when at least one of `targets` has a channel.
    fn can_reach(&self, targets: &[Target]) -> bool {
        targets
            .iter()
            .any(|target| self.channel_for(target).is_some())
    }

    /// The run engine, if one was wired.
    fn runner(&self) -> Option<Arc<dyn Runner>> {
        self.inner.runner.clone()
    }

    fn recent(&self) -> &recent::Recent {
        &self.inner.recent
    }

    /// A receiver that turns true when [`Bridge::shutdown`] is called.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.inner.shutdown.subscribe()
    }

    /// Stops the background tasks and ends event streams.
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// Waits until the background tasks have ended (after [`Bridge::shutdown`]).
    pub async fn stopped(&self) {
        let tasks = std::mem::take(&mut *lock(&self.inner.tasks));
        for task in tasks {
            let _ = task.await;
        }
    }

    /// Starts the waiter pump, and in the background the recovery of open questions left by an
    /// earlier run followed by the sweeper (expiry and interrupted effects): the process serves
    /// meanwhile. Called once, by [`BridgeBuilder::start`], when everything is wired.
    async fn run_background(&self) -> Result<(), Error> {
        let pump = tokio::spawn(effects::Effects::pump_events(self.clone()));
        lock(&self.inner.tasks).push(pump);
        let started = askbridge_core::Millis::now();
        let sweeper = tokio::spawn(effects::Effects::recover_then_sweep(self.clone(), started));
        lock(&self.inner.tasks).push(sweeper);
        Ok(())
    }

    /// A handle for one session (a run, a conversation) of the in-process API.
    pub fn session(&self, session_id: impl Into<String>) -> Session {
        Session::new(self.clone(), session_id.into())
    }
}

/// What the parts share: this process's channels, runner, waiters and recent news, and each
/// part's handle.
impl Bridge {
    /// Checks targets against the channels: each must be served by one.
    pub(super) fn check_targets(&self, targets: &[Target]) -> Result<(), Error> {
        match targets.iter().find(|t| self.channel_for(t).is_none()) {
            None => Ok(()),
            Some(target) => {
                let hint = match target.surface() {
                    "telegram" => "set TELEGRAM_BOT_TOKEN to enable Telegram".to_owned(),
                    "discord" => "set DISCORD_BOT_TOKEN to enable Discord".to_owned(),
                    "console" => "the console is only attached in `askbridge demo`".to_owned(),
                    other => format!("no `{other}` channel exists"),
                };
                Err(Error::UnknownTarget {
                    target: target.to_string(),
                    hint,
                })
            }
        }
    }

    /// Says `text` in `target` (a reply that is not an edit of a question).
    pub async fn say(&self, target: &Target, text: &str) -> Result<(), Error> {
        let channel = self
            .channel_for(target)
            .ok_or_else(|| Error::UnknownTarget {
                target: target.to_string(),
                hint: format!(
                    "no `{}` channel exists",
                    identity::surface_of(target.as_str())
                ),
            })?;
        channel.say(target, text).await.map_err(Error::from)
    }
    /// News of a run, for this process: remembered (see `recent.rs`) and handed to its waiters.
    /// `question` is the question it now waits on, when the caller has it. Shared as they are:
    /// a caller done with the run, or holding an event's, passes it on without a copy.
    pub(crate) fn run_news(&self, run: Arc<Run>, question: Option<Arc<Question>>) {
        let news = RunNews { run, question };
        if self.recent().run_news(&news) {
            self.waiters().wake_run(news);
        }
    }

    fn registry(&self) -> &registry::Registry {
        &self.inner.registry
    }

    fn resolver(&self) -> &resolve::Resolver {
        &self.inner.resolver
    }

    fn effects(&self) -> &effects::Effects {
        &self.inner.effects
    }

    fn approvals(&self) -> &approvals::Approvals {
        &self.inner.approvals
    }

    fn inbox(&self) -> &inbox::Messages {
        &self.inner.inbox
    }

    fn runs(&self) -> &runs::Runs {
        &self.inner.runs
    }

    fn exec_sessions(&self) -> &leased::ExecSessions {
        &self.inner.exec_sessions
    }

    fn idempotent(&self) -> &idempotent::Idempotent {
        &self.inner.idempotent
    }
}

/// A mutex that a panic elsewhere does not poison for good: the data it guards stays usable.
fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
