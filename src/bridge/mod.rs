//! The bridge: the question registry in front of a store, the channels that show questions, and
//! the in-process API functions call.
//!
//! A [`Bridge`] is a cheap handle (an `Arc` inside); clone it freely. It keeps no state another
//! process would need: questions, where they were shown, and what remains to do after a
//! resolution all live in the store, so any number of processes can share one Redis. What a
//! process does keep is only about itself: its channels, its waiters, its metrics.
//!
//! - `mod.rs`: creating, resolving, listing, waiting, cancelling; [`Session`] with `ask`,
//!   `confirm` and `can_ask`.
//! - `effects.rs`: showing questions on channels, and what follows a resolution (events,
//!   withdrawing buttons everywhere), plus the sweeper that expires questions and finishes
//!   interrupted work.
//! - `inbox.rs`: the command grammar's meaning: what `/answer`, `/decline`, `/pending` and plain
//!   replies do.

mod approvals;
mod effects;
mod inbox;
mod waiters;

pub use approvals::approval_of;
pub(crate) use approvals::decide;

pub use waiters::Waiters;

use crate::Error;
use crate::config::Secret;
use crate::flows::Flow;
use crate::metrics::Metrics;
use crate::store::{ListFilter, Store};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::run::fingerprint;
use askbridge_core::{
    Actor, Answer, Approval, Channel, Claim, ClaimOutcome, Kind, Millis, NewQuestion, Question,
    QuestionId, Status, Transition, identity,
};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often a waiter re-reads the store in case an event was lost.
const WAIT_RECHECK: Duration = Duration::from_secs(2);
/// How long after a deadline an in-process waiter gives the sweeper before expiring the
/// question itself (a bot never hangs because a background task died).
const EXPIRY_GRACE: Duration = Duration::from_secs(2);
/// How many times creation retries with a new id after a collision.
const ID_ATTEMPTS: usize = 3;

/// A reply given by a program (HTTP API, Rust API) rather than typed.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramReply {
    /// The answer: a label, labels, a boolean; for approvals `once`, `always`,
    /// `always everywhere` or `reject`.
    pub answer: Answer,
    /// An approval rejection's feedback.
    pub message: Option<String>,
    /// The action digest the replier saw; refused when it is not the question's.
    pub digest: Option<String>,
}

impl From<Answer> for ProgramReply {
    fn from(answer: Answer) -> Self {
        ProgramReply {
            answer,
            message: None,
            digest: None,
        }
    }
}

/// Settings of a bridge.
#[derive(Clone, Debug)]
pub struct BridgeOptions {
    /// Timeout of questions that name none.
    pub default_timeout: Duration,
    /// Where questions asked through the Rust API are shown when they name no target.
    pub default_targets: Vec<String>,
    /// How long a process holds a run it executes before another may take it over (renewed
    /// while the run executes).
    pub run_lease: Duration,
    /// Key signing what askbridge POSTs to flow endpoints and callback URLs.
    pub signing_secret: Option<Secret>,
    /// Who may approve approvals that name no answerers (`ASKBRIDGE_APPROVERS`), and manage
    /// rules from a chat. Empty: approvals must name their approvers.
    pub approvers: Vec<String>,
    /// Who may start flows from a chat (`ASKBRIDGE_FLOW_STARTERS`). Empty: anyone who can write
    /// to the bot.
    pub flow_starters: Vec<String>,
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
        }
    }
}

/// See the module documentation.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    channels: RwLock<HashMap<String, Arc<dyn Channel>>>,
    flows: RwLock<HashMap<String, Arc<dyn Flow>>>,
    /// Questions this process is settling right now.
    settling: std::sync::Mutex<std::collections::HashSet<QuestionId>>,
    /// This process's name as a run's executor.
    owner_id: String,
    http: reqwest::Client,
    waiters: Waiters,
    options: BridgeOptions,
    metrics: Metrics,
    shutdown: watch::Sender<bool>,
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
    /// A bridge over `store`. Call [`Bridge::start`] to run its background tasks.
    pub fn new(store: Arc<dyn Store>, options: BridgeOptions) -> Self {
        Bridge {
            inner: Arc::new(Inner {
                store,
                channels: RwLock::new(HashMap::new()),
                flows: RwLock::new(HashMap::new()),
                settling: std::sync::Mutex::new(std::collections::HashSet::new()),
                owner_id: format!("p{}-{}", std::process::id(), QuestionId::random()),
                http: reqwest::Client::builder()
                    .timeout(Duration::from_secs(15))
                    .build()
                    .expect("the HTTP client builds"),
                waiters: Waiters::default(),
                options,
                metrics: Metrics::default(),
                shutdown: watch::channel(false).0,
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

    /// Adds a channel; questions targeted at its surface are shown through it.
    pub fn add_channel(&self, channel: Arc<dyn Channel>) {
        let surface = channel.surface().to_owned();
        tracing::info!(surface, "channel added");
        self.channels_mut().insert(surface, channel);
    }

    fn channels_mut(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<dyn Channel>>> {
        self.inner
            .channels
            .write()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn flows(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<dyn Flow>>> {
        self.inner.flows.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn flows_mut(
        &self,
    ) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<dyn Flow>>> {
        self.inner.flows.write().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn settling(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashSet<QuestionId>> {
        self.inner
            .settling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// This process's name as the executor of runs.
    pub fn owner_id(&self) -> &str {
        &self.inner.owner_id
    }

    /// The HTTP client for flow endpoints and callbacks.
    pub(crate) fn http_client(&self) -> &reqwest::Client {
        &self.inner.http
    }

    /// The channel serving `target`'s surface.
    pub fn channel_for(&self, target: &str) -> Option<Arc<dyn Channel>> {
        let channels = self
            .inner
            .channels
            .read()
            .unwrap_or_else(|p| p.into_inner());
        channels.get(identity::surface_of(target)).cloned()
    }

    /// The surfaces with a channel.
    pub fn surfaces(&self) -> Vec<String> {
        let channels = self
            .inner
            .channels
            .read()
            .unwrap_or_else(|p| p.into_inner());
        let mut surfaces: Vec<String> = channels.keys().cloned().collect();
        surfaces.sort();
        surfaces
    }

    /// A receiver that turns true when [`Bridge::shutdown`] is called.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.inner.shutdown.subscribe()
    }

    /// Stops the background tasks and ends event streams.
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// Recovers open questions left by an earlier run, then starts the sweeper (expiry and
    /// interrupted effects) and the waiter pump. The tasks end on [`Bridge::shutdown`].
    pub async fn start(&self) -> Result<Vec<JoinHandle<()>>, Error> {
        let pump = tokio::spawn(self.clone().pump_events());
        self.recover().await?;
        let sweeper = tokio::spawn(self.clone().sweep_forever());
        Ok(vec![pump, sweeper])
    }

    /// A handle for one session (a run, a conversation) of the in-process API.
    pub fn session(&self, session_id: impl Into<String>) -> Session {
        Session {
            bridge: self.clone(),
            id: session_id.into(),
        }
    }

    /// Checks targets against the channels: each must be served by one.
    fn check_targets(&self, targets: &[String]) -> Result<(), Error> {
        for target in targets {
            if self.channel_for(target).is_none() {
                let surface = identity::surface_of(target);
                let hint = match surface {
                    "telegram" => "set TELEGRAM_BOT_TOKEN to enable Telegram".to_owned(),
                    "discord" => "set DISCORD_BOT_TOKEN to enable Discord".to_owned(),
                    "console" => "the console is only attached in `askbridge demo`".to_owned(),
                    other => format!("no `{other}` channel exists"),
                };
                return Err(Error::UnknownTarget {
                    target: target.clone(),
                    hint,
                });
            }
        }
        Ok(())
    }

    /// Registers a question and shows it on its targets. Returns it as stored.
    pub async fn create(&self, request: NewQuestion) -> Result<Question, Error> {
        self.create_as(request, None).await
    }

    /// [`Bridge::create`] with a chosen id (a run's derived one): an existing question of the
    /// same run under that id is returned as it is, neither stored nor shown again.
    pub(crate) async fn create_as(
        &self,
        mut request: NewQuestion,
        id: Option<QuestionId>,
    ) -> Result<Question, Error> {
        self.check_targets(&request.targets)?;
        self.name_approvers(&mut request)?;
        if request.callback_url.is_some() && self.inner.options.signing_secret.is_none() {
            return Err(askbridge_core::Error::Invalid {
                field: "callback_url",
                reason: "needs ASKBRIDGE_FLOW_SECRET, so that callbacks are signed".into(),
            }
            .into());
        }
        let mut attempt = 0;
        let question = loop {
            attempt += 1;
            let chosen = id.clone().unwrap_or_else(QuestionId::random);
            let question = request.clone().into_question(
                chosen,
                Millis::now(),
                self.inner.options.default_timeout,
            )?;
            match self.inner.store.insert(&question).await {
                Ok(()) => break question,
                Err(Error::IdTaken) if id.is_some() => {
                    let existing = self.get(&question.id).await?;
                    if existing.run_id.is_none() || existing.run_id != question.run_id {
                        return Err(Error::IdTaken);
                    }
                    // A replay meeting its own question again; it must be the same question, or
                    // the flow changed (or an HTTP flow answered differently) since it was asked.
                    let (was, now) = (fingerprint(&existing), fingerprint(&question));
                    if was != now {
                        return Err(Error::Diverged {
                            expected: format!(
                                "the question \"{}\" as first asked",
                                existing.prompt
                            ),
                            found: format!("asks \"{}\" differently", question.prompt),
                        });
                    }
                    return Ok(existing);
                }
                Err(Error::IdTaken) if attempt < ID_ATTEMPTS => continue,
                Err(error) => return Err(error),
            }
        };
        tracing::info!(
            question_id = %question.id,
            session_id = %question.session_id,
            kind = ?question.kind,
            targets = ?question.targets,
            "question asked"
        );
        self.inner.metrics.asked();
        if let Err(error) = self
            .inner
            .store
            .publish(&crate::store::Event::of(&question))
            .await
        {
            tracing::warn!(question_id = %question.id, %error, "could not publish question.asked");
        }
        if let Some(allowed) = self.allow_by_rule(&question).await? {
            return Ok(allowed);
        }
        for target in &question.targets {
            self.spawn_delivery(question.clone(), target.clone());
        }
        Ok(question)
    }

    /// The question with this id.
    pub async fn get(&self, id: &QuestionId) -> Result<Question, Error> {
        self.inner
            .store
            .get(id)
            .await?
            .ok_or_else(|| Error::NotFound(id.to_string()))
    }

    /// Questions passing `filter`. Its session and target are checked first: they become parts
    /// of store keys.
    pub async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>, Error> {
        if let Some(session_id) = &filter.session_id {
            askbridge_core::question::check_session_id(session_id)?;
        }
        if let Some(target) = filter
            .target
            .as_ref()
            .filter(|t| !identity::is_well_formed(t))
        {
            return Err(askbridge_core::Error::Invalid {
                field: "target",
                reason: format!("`{target}` is not a target like telegram:-100 or console"),
            }
            .into());
        }
        self.inner.store.list(filter).await
    }

    /// Resolves question `id` with `transition`, on behalf of `actor` writing in `chat` (a target,
    /// or `api`). Checks who may answer; the caller has checked that the answer fits. Returns the
    /// resolved question, or why not ([`Error::AlreadyResolved`] carries the winner).
    pub async fn resolve(
        &self,
        id: &QuestionId,
        transition: Transition,
        actor: Actor,
        chat: &str,
    ) -> Result<Question, Error> {
        let question = self.open_to(id, &actor, chat).await?;
        self.claim(&question, transition, actor).await
    }

    /// The question `id`, if `actor` writing in `chat` may resolve it and it is still pending.
    async fn open_to(&self, id: &QuestionId, actor: &Actor, chat: &str) -> Result<Question, Error> {
        let question = self.get(id).await?;
        if !question.may_answer(&actor.by, chat) {
            tracing::info!(question_id = %id, by = %actor.by, chat, "refused: not an answerer");
            return Err(Error::Forbidden);
        }
        if !question.is_pending() {
            return Err(Error::AlreadyResolved(Box::new(question)));
        }
        Ok(question)
    }

    /// Applies a claim and starts the effects of a win. No authorisation check.
    async fn claim(
        &self,
        question: &Question,
        transition: Transition,
        actor: Actor,
    ) -> Result<Question, Error> {
        if !question.is_pending() {
            return Err(Error::AlreadyResolved(Box::new(question.clone())));
        }
        let mut claim = Claim::new(transition, actor, Millis::now());
        claim.rule_id = approvals::rule_created_by(question, &claim.transition);
        self.apply_claim(question, claim).await
    }

    /// Applies `claim` in the store and starts the effects of a win.
    async fn apply_claim(&self, question: &Question, claim: Claim) -> Result<Question, Error> {
        let Some((outcome, resolved)) = self.inner.store.claim(question, &claim).await? else {
            return Err(Error::NotFound(question.id.to_string()));
        };
        match outcome {
            ClaimOutcome::Won => {
                tracing::info!(
                    question_id = %resolved.id,
                    status = %resolved.status,
                    by = %claim.actor.by,
                    via = %claim.actor.via,
                    "question resolved"
                );
                if approvals::creates_rule(&claim) {
                    // "Always allow": the rule exists (and matching pending approvals are
                    // allowed) before the approver's reply returns; the rest follows as usual.
                    if let Err(error) = self.create_rule_now(&resolved).await {
                        tracing::warn!(question_id = %resolved.id, %error, "cannot create the rule yet; the sweeper will retry");
                    }
                }
                self.after_win(&resolved).await;
                Ok(resolved)
            }
            ClaimOutcome::Expired => {
                tracing::info!(question_id = %resolved.id, "question expired (claim arrived after the deadline)");
                self.after_win(&resolved).await;
                Err(Error::AlreadyResolved(Box::new(resolved)))
            }

            ClaimOutcome::AlreadyResolved => Err(Error::AlreadyResolved(Box::new(resolved))),
        }
    }

    /// Answers question `id` with a program-given value (HTTP API, Rust API), checking it fits;
    /// for approvals, `reject` with `message` as feedback, and `digest` binding the reply to the
    /// action (see [`Question::reply_transition`]).
    pub async fn answer(
        &self,
        id: &QuestionId,
        reply: ProgramReply,
        actor: Actor,
        chat: &str,
    ) -> Result<Question, Error> {
        let question = self.open_to(id, &actor, chat).await?;
        let transition =
            question.reply_transition(reply.answer, reply.message, reply.digest.as_deref())?;
        self.claim(&question, transition, actor).await
    }

    /// Waits until question `id` leaves `pending` or `timeout` passes; returns it as it is then.
    pub async fn wait(&self, id: &QuestionId, timeout: Duration) -> Result<Question, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before reading, so a resolution in between is not missed; dropped
            // (and so removed) on every way out of this loop.
            let mut registration = self.inner.waiters.register(id);
            let question = self.get(id).await?;
            if !question.is_pending() {
                return Ok(question);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(question);
            }
            if let Some(resolved) = registration
                .woken_within(WAIT_RECHECK.min(deadline - now))
                .await
            {
                return Ok(resolved);
            }
        }
    }

    /// Waits for question `id` until its deadline (and a short grace), expiring it here if the
    /// sweeper has not: a waiter never hangs past a deadline.
    pub async fn wait_for_outcome(&self, id: &QuestionId) -> Result<Question, Error> {
        let question = self.get(id).await?;
        let left = question.remaining(Millis::now()) + EXPIRY_GRACE;
        let question = self.wait(id, left).await?;
        if !question.is_pending() {
            return Ok(question);
        }
        match self
            .claim(&question, Transition::Expire, Actor::timeout())
            .await
        {
            Ok(resolved) => Ok(resolved),
            Err(Error::AlreadyResolved(resolved)) => Ok(*resolved),
            Err(error) => Err(error),
        }
    }

    /// Cancels every pending question of a session; their waiters are released at once.
    pub async fn cancel_session(&self, session_id: &str, actor: Actor) -> Result<usize, Error> {
        let filter = ListFilter {
            session_id: Some(session_id.to_owned()),
            limit: usize::MAX,
            ..ListFilter::pending()
        };
        let mut cancelled = 0;
        for question in self.list(&filter).await? {
            let transition = Transition::Cancel { reason: None };
            match self.claim(&question, transition, actor.clone()).await {
                Ok(_) => cancelled += 1,
                Err(Error::AlreadyResolved(_)) => {}
                Err(error) => return Err(error),
            }
        }
        tracing::info!(session_id, cancelled, "session cancelled");
        Ok(cancelled)
    }

    /// True when at least one of `targets` has a channel.
    pub fn can_reach(&self, targets: &[String]) -> bool {
        targets
            .iter()
            .any(|target| self.channel_for(target).is_some())
    }
}

/// One session of the in-process API: the seed's `runtime.ask` / `confirm` / `can_ask`.
#[derive(Clone, Debug)]
pub struct Session {
    bridge: Bridge,
    id: String,
}

impl Session {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// False when no surface can reach a person (headless): branch on it instead of asking.
    pub fn can_ask(&self) -> bool {
        self.bridge
            .can_reach(&self.bridge.options().default_targets)
    }

    fn prepare(&self, mut request: NewQuestion) -> Result<NewQuestion, Error> {
        request.session_id = self.id.clone();
        if request.targets.is_empty() {
            request.targets = self.bridge.options().default_targets.clone();
        }
        if !self.bridge.can_reach(&request.targets) {
            return Err(Error::NoSurface);
        }
        Ok(request)
    }

    /// Asks and waits. Returns the answer, or [`Error::Declined`], or [`Error::Timeout`] (the
    /// default is returned instead when the question has one), or [`Error::Cancelled`].
    pub async fn ask(&self, request: NewQuestion) -> Result<Answer, Error> {
        let question = self.bridge.create(self.prepare(request)?).await?;
        let done = self.bridge.wait_for_outcome(&question.id).await?;
        outcome_of(done)
    }

    /// Asks yes or no. Never fails: a decline, a timeout without default, a cancellation or an
    /// error all read as `false` (the safe answer), and are logged.
    pub async fn confirm(&self, request: NewQuestion) -> bool {
        match self.ask(request.kind(Kind::Confirm)).await {
            Ok(Answer::Bool(yes)) => yes,
            Ok(other) => {
                tracing::warn!(answer = %other, "confirm got a non-boolean answer; reading it as no");
                false
            }
            Err(error) => {
                tracing::info!(session_id = %self.id, %error, "confirm reads as no");
                false
            }
        }
    }

    /// Asks for approval of an action (`NewQuestion::ask(prompt).approve(action)`) and waits.
    /// Returns how it was allowed (once, always, or by an existing rule, without asking), or
    /// [`Error::Declined`] with the approver's feedback, or [`Error::Timeout`] (denied, unless
    /// the question's default allows), or [`Error::Cancelled`].
    pub async fn approve(&self, request: NewQuestion) -> Result<Approval, Error> {
        let question = self
            .bridge
            .create(self.prepare(request.kind(Kind::Approval))?)
            .await?;
        let done = if question.is_pending() {
            self.bridge.wait_for_outcome(&question.id).await?
        } else {
            question
        };
        approval_of(done)
    }

    /// Cancels this session's pending questions.
    pub async fn stop(&self) -> Result<usize, Error> {
        self.bridge
            .cancel_session(&self.id, Actor::new("askbridge", "stop"))
            .await
    }
}

/// What a waiter gets for a resolved question: never an empty answer.
pub fn outcome_of(question: Question) -> Result<Answer, Error> {
    let (value, message) = question
        .resolution
        .map(|r| (r.value, r.message))
        .unwrap_or_default();
    answer_or_reason(question.id.to_string(), question.status, value, message)
}

/// The answer a resolution gives a waiter, or the explicit reason there is none. Shared by
/// waiting callers and by flows replaying their journal.
pub(crate) fn answer_or_reason(
    id: String,
    status: Status,
    value: Option<Answer>,
    message: Option<String>,
) -> Result<Answer, Error> {
    match status {
        Status::Answered => value.ok_or(Error::Embedded(format!(
            "question {id} is answered without a value"
        ))),
        Status::Declined => Err(Error::Declined { message }),
        Status::Expired => value.ok_or(Error::Timeout { id }),
        Status::Cancelled => Err(Error::Cancelled { id }),
        Status::Pending => Err(Error::Timeout { id }),
    }
}
