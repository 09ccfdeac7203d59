//! The registry: creating, reading, listing, waiting for and cancelling questions (runs are in
//! `runs.rs`).

use super::Bridge;
use super::roles::RegistryRoles;
use crate::Error;
use crate::store::{Inserted, ListFilter};
use askbridge_core::run::fingerprint;
use askbridge_core::{Actor, Claim, Millis, NewQuestion, Question, QuestionId, Transition};
use std::time::Duration;

/// How long after a deadline an in-process waiter gives the sweeper before expiring the
/// question itself (a bot never hangs because a background task died).
const EXPIRY_GRACE: Duration = Duration::from_secs(2);
/// How many times creation retries with a new id after a collision.
const ID_ATTEMPTS: usize = 3;

/// The registry's part of the bridge: see the module documentation.
pub(super) struct Registry {
    store: RegistryRoles,
}

impl Registry {
    pub(super) fn new(store: RegistryRoles) -> Self {
        Registry { store }
    }

    /// Registers a question and shows it on its targets. Returns it as stored.
    pub(super) async fn create(
        &self,
        bridge: &Bridge,
        request: NewQuestion,
    ) -> Result<Question, Error> {
        let request = self.vet(bridge, request).await?;
        for _ in 0..ID_ATTEMPTS {
            let question = request.clone().into_question(
                QuestionId::random(),
                Millis::now(),
                bridge.options().default_timeout,
            )?;
            // A closed session (its `askbridge exec` ended) is refused by the insert itself, in
            // the same store call: an ask costs no read more.
            match self.store.questions.insert(&question).await? {
                Inserted::Created => return self.introduce(bridge, question).await,
                Inserted::Closed => return Err(super::leased::closed(&question.session_id).into()),
                Inserted::Taken => {}
            }
        }
        Err(askbridge_core::Error::Invalid {
            field: "id",
            reason: "no free question id after several tries".into(),
        }
        .into())
    }

    /// [`Registry::create`] under a run's derived id: a replay after a crash that meets the same
    /// question again gets it back as it is, neither stored nor shown twice; one that meets it
    /// changed gets [`CreateError::Diverged`].
    pub(super) async fn create_for_run(
        &self,
        bridge: &Bridge,
        request: NewQuestion,
        id: QuestionId,
    ) -> Result<Question, CreateError> {
        let request = self.vet(bridge, request).await?;
        let question =
            request.into_question(id, Millis::now(), bridge.options().default_timeout)?;
        match self.store.questions.insert(&question).await? {
            Inserted::Created => Ok(self.introduce(bridge, question).await?),
            Inserted::Taken => self.existing_for_run(&question).await,
            Inserted::Closed => {
                Err(Error::from(super::leased::closed(&question.session_id)).into())
            }
        }
    }

    /// The question a run's request becomes under its derived id, checked but not stored: the
    /// run's park stores it (see `Runs::park_run`), then [`Registry::introduce`] shows it.
    pub(super) async fn prepare_for_run(
        &self,
        bridge: &Bridge,
        request: NewQuestion,
        id: QuestionId,
    ) -> Result<Question, Error> {
        let request = self.vet(bridge, request).await?;
        Ok(request.into_question(id, Millis::now(), bridge.options().default_timeout)?)
    }

    /// What every request goes through before it becomes a question: its targets must have a
    /// channel, approvals get their approvers, callbacks need a signing key and a host that
    /// [`crate::egress`] allows.
    async fn vet(&self, bridge: &Bridge, mut request: NewQuestion) -> Result<NewQuestion, Error> {
        bridge.check_targets(&request.targets)?;
        bridge.approvals().name_approvers(bridge, &mut request)?;
        bridge.effects().check_nudges(bridge, &request)?;
        let Some(url) = &request.callback_url else {
            return Ok(request);
        };
        let refused = |reason: String| askbridge_core::Error::Invalid {
            field: "callback_url",
            reason,
        };
        if bridge.options().signing_secret.is_none() {
            let why = "needs ASKBRIDGE_FLOW_SECRET, so that callbacks are signed";
            return Err(refused(why.into()).into());
        }
        // Boxed: a name lookup's future, rare and large; inline it would make every ask's
        // future as large as itself, and the handler moves that future.
        if let Some(why) = Box::pin(bridge.options().callback_egress.refusal(url)).await {
            return Err(refused(why).into());
        }
        Ok(request)
    }

    /// A question just stored: a rule may decide it at once; otherwise it is shown.
    pub(super) async fn introduce(
        &self,
        bridge: &Bridge,
        question: Question,
    ) -> Result<Question, Error> {
        bridge.recent().asked(&question);
        tracing::info!(
            question_id = %question.id,
            session_id = %question.session_id,
            kind = ?question.kind,
            targets = ?question.targets,
            "question asked"
        );
        bridge.metrics().asked();
        let mut question = question;
        if let Some(allowed) = bridge.approvals().allow_by_rule(bridge, &question).await? {
            if !allowed.is_pending() {
                return Ok(allowed);
            }
            // A batch some of whose actions rules decided: shown with them.
            question = allowed;
        }
        for target in &question.targets {
            bridge
                .effects()
                .spawn_delivery(bridge, question.clone(), target.clone());
        }
        Ok(question)
    }

    /// A run's replay meeting its own question again: it must be the same question, or the flow
    /// changed (or an HTTP flow answered differently) since it was asked.
    pub(super) async fn existing_for_run(
        &self,
        question: &Question,
    ) -> Result<Question, CreateError> {
        let existing = self.get(&question.id).await?;
        if existing.run_id.is_none() || existing.run_id != question.run_id {
            return Err(CreateError::Failed(Error::Model(
                askbridge_core::Error::Invalid {
                    field: "id",
                    reason: format!("question {} belongs to another run", question.id),
                },
            )));
        }
        if fingerprint(&existing) != fingerprint(question) {
            return Err(CreateError::Diverged {
                expected: format!("the question \"{}\" as first asked", existing.prompt),
                found: format!("asks \"{}\" differently", question.prompt),
            });
        }
        Ok(existing)
    }

    /// The question with this id.
    pub(super) async fn get(&self, id: &QuestionId) -> Result<Question, Error> {
        self.store
            .questions
            .get(id)
            .await?
            .ok_or_else(|| Error::NotFound(id.clone()))
    }

    /// Questions passing `filter`. Its session and target are checked first: they become parts
    /// of store keys.
    pub(super) async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>, Error> {
        if let Some(session_id) = &filter.session_id {
            askbridge_core::request::check_session_id(session_id)?;
        }
        if let Some(target) = filter.target.as_ref().filter(|t| !t.is_well_formed()) {
            return Err(askbridge_core::Error::Invalid {
                field: "target",
                reason: format!("`{target}` is not a target like telegram:-100 or console"),
            }
            .into());
        }
        Ok(self.store.questions.list(filter).await?)
    }

    /// Waits until question `id` leaves `pending` or `timeout` passes; returns it as it is then.
    pub(super) async fn wait(
        &self,
        bridge: &Bridge,
        id: &QuestionId,
        timeout: Duration,
    ) -> Result<Question, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before reading, so a resolution in between is not missed; dropped
            // (and so removed) on every way out of this loop.
            let mut registration = bridge.waiters().register(id);
            if let Some(question) = self.settled_or_due(id, deadline).await? {
                return Ok(question);
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if let Some(resolved) = registration.woken_within(left).await {
                return Ok(resolved);
            }
        }
    }

    /// Question `id` when it is no longer pending or `deadline` has passed; `None` when its
    /// waiter should park. The pending question read is dropped here, before the waiter parks:
    /// held across the park, its strings stayed allocated for as long as the long poll did.
    async fn settled_or_due(
        &self,
        id: &QuestionId,
        deadline: tokio::time::Instant,
    ) -> Result<Option<Question>, Error> {
        let question = self.get(id).await?;
        let due = !question.is_pending() || tokio::time::Instant::now() >= deadline;
        Ok(due.then_some(question))
    }

    /// Waits for question `id` until its deadline (and a short grace), expiring it here if the
    /// sweeper has not: a waiter never hangs past a deadline.
    pub(super) async fn wait_for_outcome(
        &self,
        bridge: &Bridge,
        id: &QuestionId,
    ) -> Result<Question, Error> {
        let question = self.get(id).await?;
        let left = question.remaining(Millis::now()) + EXPIRY_GRACE;
        let question = self.wait(bridge, id, left).await?;
        if !question.is_pending() {
            return Ok(question);
        }
        match bridge
            .resolver()
            .claim(bridge, &question, Claim::expire(Millis::now()))
            .await
        {
            Ok(resolved) => Ok(resolved),
            Err(Error::AlreadyResolved(resolved)) => Ok(*resolved),
            Err(error) => Err(error),
        }
    }

    /// Cancels one pending question (its asker gave up: a script interrupted, an agent stopped);
    /// every surface withdraws it. `AlreadyResolved` when it is not pending.
    pub(super) async fn cancel_question(
        &self,
        bridge: &Bridge,
        id: &QuestionId,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<Question, Error> {
        let question = self.get(id).await?;
        let claim = Claim::new(Transition::Cancel { reason }, actor, Millis::now());
        let cancelled = bridge.resolver().claim(bridge, &question, claim).await?;
        tracing::info!(question_id = %id, "question cancelled by its asker");
        Ok(cancelled)
    }

    /// Cancels every pending question of a session, with the reason every surface shows
    /// (`Cancelled: <reason>`); their waiters are released at once.
    pub(super) async fn cancel_session(
        &self,
        bridge: &Bridge,
        session_id: &str,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<usize, Error> {
        let filter = ListFilter {
            session_id: Some(session_id.to_owned()),
            limit: usize::MAX,
            ..ListFilter::pending()
        };
        let mut cancelled = 0;
        for question in self.list(&filter).await? {
            let claim = Claim::new(
                Transition::Cancel {
                    reason: reason.clone(),
                },
                actor.clone(),
                Millis::now(),
            );
            match bridge.resolver().claim(bridge, &question, claim).await {
                Ok(_) => cancelled += 1,
                Err(Error::AlreadyResolved(_)) => {}
                Err(error) => return Err(error),
            }
        }
        tracing::info!(session_id, cancelled, "session cancelled");
        Ok(cancelled)
    }
}

/// Why `Registry::create_for_run` created nothing.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The request cannot be asked.
    #[error(transparent)]
    Failed(#[from] Error),
    /// A run's replay met its question changed: the flow changed under a waiting run.
    #[error(
        "The flow changed while the run waited: it now {found} where its journal recorded {expected}."
    )]
    Diverged {
        /// What was asked first.
        expected: String,
        /// What is asked now.
        found: String,
    },
}

impl From<askbridge_core::Error> for CreateError {
    fn from(error: askbridge_core::Error) -> Self {
        CreateError::Failed(error.into())
    }
}

impl From<crate::store::Error> for CreateError {
    fn from(error: crate::store::Error) -> Self {
        CreateError::Failed(error.into())
    }
}
