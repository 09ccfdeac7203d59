//! The facade: what the layers above call, each function one line into the part that owns the
//! work. A part's functions take the `&Bridge` they were called through, for what they ask of
//! other parts or of what the process shares.

use super::registry::CreateError;
use super::{Attempt, Bridge, Reserved, RunNews, Said, Storing};
use crate::Error;
use crate::store::ListFilter;
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Origin, Run};
use askbridge_core::{
    Actor, Identity, Millis, NewQuestion, Question, QuestionId, Rule, RuleId, Target,
};
use std::time::Duration;

impl Bridge {
    /// Registers a question and shows it on its targets. Returns it as stored.
    pub async fn create(&self, request: NewQuestion) -> Result<Question, Error> {
        self.registry().create(self, request).await
    }

    /// The question with this id.
    pub async fn get(&self, id: &QuestionId) -> Result<Question, Error> {
        self.registry().get(id).await
    }

    /// Questions passing `filter`. Its session and target are checked first: they become parts
    /// of store keys.
    pub async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>, Error> {
        self.registry().list(filter).await
    }

    /// Waits until question `id` leaves `pending` or `timeout` passes; returns it as it is then.
    pub async fn wait(&self, id: &QuestionId, timeout: Duration) -> Result<Question, Error> {
        self.registry().wait(self, id, timeout).await
    }

    /// Cancels one pending question (its asker gave up: a script interrupted, an agent stopped);
    /// every surface withdraws it. `AlreadyResolved` when it is not pending.
    pub async fn cancel_question(
        &self,
        id: &QuestionId,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<Question, Error> {
        self.registry()
            .cancel_question(self, id, actor, reason)
            .await
    }

    /// Cancels every pending question of a session, with the reason every surface shows
    /// (`Cancelled: <reason>`); their waiters are released at once.
    pub async fn cancel_session(
        &self,
        session_id: &str,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<usize, Error> {
        let registry = self.registry();
        registry
            .cancel_session(self, session_id, actor, reason)
            .await
    }

    /// Resolves question `id` with what `actor` said, writing in `chat`: the whole path for
    /// programs (HTTP, Rust API). Returns the resolved question, or why not
    /// ([`Error::AlreadyResolved`] carries the winner).
    pub async fn attempt(&self, attempt: Attempt) -> Result<Question, Error> {
        self.resolver().attempt(self, attempt).await
    }

    /// The run with this id.
    pub async fn get_run(&self, id: &str) -> Result<Run, Error> {
        self.runs().get_run(id).await
    }

    /// Waits until run `id` parks on a question other than `after` (or on any, without
    /// `after`) or ends, or until `timeout` passes; returns it as it is then.
    pub async fn wait_run(
        &self,
        id: &str,
        after: Option<&QuestionId>,
        timeout: Duration,
    ) -> Result<RunNews, Error> {
        self.runs().wait_run(self, id, after, timeout).await
    }

    /// Starts flow `name` for `origin` with the wired [`super::Runner`], stored as `storing` says.
    pub async fn start_run(
        &self,
        name: &str,
        input: &str,
        origin: Origin,
        storing: Storing,
    ) -> Result<Run, Error> {
        self.runs()
            .start_run(self, name, input, origin, storing)
            .await
    }

    /// Every "always allow" rule, oldest first.
    pub async fn rules(&self) -> Result<Vec<Rule>, Error> {
        self.approvals().rules().await
    }

    /// Revokes a rule on behalf of `actor`; the audit trail records it.
    pub async fn revoke_rule(&self, id: &RuleId, actor: &Actor) -> Result<(), Error> {
        self.approvals().revoke_rule(id, actor).await
    }

    /// Audit records passing `filter`.
    pub async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>, Error> {
        self.approvals().audit(filter).await
    }

    /// One pass of the sweeper: expire what is overdue and finish interrupted effects. Returns
    /// how many entries were due.
    pub async fn sweep_once(&self) -> Result<usize, Error> {
        self.effects().sweep_once(self).await
    }

    // What flows, sessions and the HTTP layer need beyond the public surface.

    /// [`Bridge::create`] under a run's derived id: a replay after a crash that meets the same
    /// question again gets it back as it is; one that meets it changed gets
    /// [`CreateError::Diverged`].
    pub(crate) async fn create_for_run(
        &self,
        request: NewQuestion,
        id: QuestionId,
    ) -> Result<Question, CreateError> {
        self.registry().create_for_run(self, request, id).await
    }

    /// The question a run's request becomes under its derived id, checked but not stored.
    pub(crate) async fn prepare_for_run(
        &self,
        request: NewQuestion,
        id: QuestionId,
    ) -> Result<Question, Error> {
        self.registry().prepare_for_run(self, request, id).await
    }

    /// A question just stored: a rule may decide it at once; otherwise it is shown.
    pub(crate) async fn introduce(&self, question: Question) -> Result<Question, Error> {
        self.registry().introduce(self, question).await
    }

    /// A run's replay meeting its own question again: it must be the same question.
    pub(crate) async fn existing_for_run(
        &self,
        question: &Question,
    ) -> Result<Question, CreateError> {
        self.registry().existing_for_run(question).await
    }

    /// Waits for question `id` until its deadline (and a short grace), expiring it here if the
    /// sweeper has not.
    pub(crate) async fn wait_for_outcome(&self, id: &QuestionId) -> Result<Question, Error> {
        self.registry().wait_for_outcome(self, id).await
    }

    /// Answers the question run `id` waits on (`expected`, when given); returns that question.
    pub(crate) async fn answer_run(
        &self,
        id: &str,
        expected: Option<&QuestionId>,
        said: Said,
        by: (Actor, Target),
    ) -> Result<QuestionId, Error> {
        self.runs().answer(self, id, expected, said, by).await
    }

    /// Leases `session` for `askbridge exec` (see `leased.rs`); returns when the lease lapses
    /// unless renewed. With `open`, a closed session is opened again.
    pub(crate) async fn hold_session(&self, session: &str, open: bool) -> Result<Millis, Error> {
        self.exec_sessions().hold_session(self, session, open).await
    }

    /// Closes `session`: asks in it are refused from now on, and its pending questions are
    /// cancelled. Returns how many were.
    pub(crate) async fn close_session(
        &self,
        session: &str,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<usize, Error> {
        let sessions = self.exec_sessions();
        sessions.close_session(self, session, actor, reason).await
    }

    /// Reserves an `Idempotency-Key` (already scoped to its route) for a request whose digest
    /// is `request`; the same key with another request is refused.
    pub(crate) async fn reserve_key(&self, key: &str, request: &str) -> Result<Reserved, Error> {
        self.idempotent().reserve_key(key, request).await
    }

    /// Records what the create a fresh key went ahead with made, or frees the key.
    pub(crate) async fn settle_key(&self, key: &str, request: &str, made: Option<&str>) {
        self.idempotent().settle_key(key, request, made).await
    }

    /// True when `identity` may manage rules from a chat.
    pub(crate) fn is_approver(&self, identity: &Identity) -> bool {
        self.options().approvers.contains(identity)
    }
}
