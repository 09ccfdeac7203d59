//! The one path from "someone said this about a question" to "resolved" or "refused", for every
//! surface: the HTTP API, the console, Telegram, Discord and the ops page.
//!
//! [`Resolver::check`] reads the question once, checks the sender may answer it once, and reads
//! what they said against it once; [`Resolver::commit`] claims with that reading. A tap is
//! acknowledged between the two, from the same reading ([`Checked::predicted`]). Every refusal
//! passes through [`Resolver::conclude`], the one place refused attempts reach the audit trail.

use crate::Error;
use crate::bridge::refusals::{RefusalBudget, Verdict};
use crate::bridge::roles::ResolverRoles;
use crate::bridge::{Bridge, EFFECT_RULE, SETTLE_GRACE};
use crate::store::{AheadRun, ClaimOptions, TakeRun};
use askbridge_core::audit::AuditEntry;
use askbridge_core::error::Chain;
use askbridge_core::tally;
use askbridge_core::{Actor, Claim, ClaimOutcome, Kind, Millis, Question};

mod attempt;
mod decisions;
mod votes;

pub use attempt::{Attempt, ProgramReply, Said};
pub(crate) use attempt::{Checked, Reading, Refusal};

/// The resolver's part of the bridge: see the module documentation.
pub(super) struct Resolver {
    store: ResolverRoles,
    /// How many refusals each caller gets recorded one by one.
    refusals: RefusalBudget,
}

impl Resolver {
    pub(super) fn new(store: ResolverRoles) -> Self {
        Resolver {
            store,
            refusals: RefusalBudget::default(),
        }
    }

    /// Resolves question `id` with what `actor` said, writing in `chat`: the whole path for
    /// programs (HTTP, Rust API). Returns the resolved question, or why not
    /// ([`Error::AlreadyResolved`] carries the winner).
    pub(super) async fn attempt(
        &self,
        bridge: &Bridge,
        attempt: Attempt,
    ) -> Result<Question, Error> {
        // A program gets the claim's verdict on a question remembered as asked (see
        // `recent.rs`): if it was resolved meanwhile, the claim says so with the winner.
        let known = bridge.recent().claimable(&attempt.id);
        let result = match self.check(bridge, &attempt, known).await {
            Ok(Reading::Claim(checked)) => {
                self.commit(bridge, checked).await.map_err(Refusal::from)
            }
            Ok(Reading::Field {
                question,
                not_whole,
                ..
            }) => Err(Refusal {
                error: not_whole.into(),
                question: Some(question),
            }),
            Err(refusal) => Err(refusal),
        };
        self.conclude(&attempt.actor, Some(attempt.id.to_string()), result)
            .await
    }

    /// Reads the question (unless the caller already has it), checks the sender may answer it
    /// while it is pending, and reads what they said against it. Changes nothing.
    pub(crate) async fn check(
        &self,
        bridge: &Bridge,
        attempt: &Attempt,
        known: Option<Question>,
    ) -> Result<Reading, Refusal> {
        let question = match known {
            Some(question) => question,
            None => bridge.registry().get(&attempt.id).await?,
        };
        let refused = |error: Error, question: Question| Refusal {
            error,
            question: Some(question),
        };
        if !question.may_answer(&attempt.actor.by, &attempt.chat, Millis::now()) {
            tracing::info!(question_id = %question.id, by = %attempt.actor.by, chat = %attempt.chat, "refused: not an answerer");
            return Err(refused(Error::Forbidden, question));
        }
        if !question.is_pending() {
            return Err(Error::AlreadyResolved(Box::new(question)).into());
        }
        let transition = match &attempt.said {
            Said::Typed(text) => match question.read_typed(text) {
                // In chat a form, and an approval edited field by field, take one field's
                // value at a time: the inbox reads those words against the sender's draft.
                Err(not_whole @ askbridge_core::Error::NotFit { .. })
                    if question.kind == Kind::Form || question.edits_in_fields() =>
                {
                    let text = text.clone();
                    return Ok(Reading::Field {
                        question,
                        text,
                        not_whole,
                    });
                }
                read => read,
            },
            Said::Program(reply) => question.reply_transition(
                reply.answer.clone(),
                reply.message.clone(),
                reply.digest.as_deref(),
                reply.args.clone(),
            ),
            Said::Decline(message) => question.decline_transition(message.as_deref()),
            Said::Batch(reply) => question.batch_transition(reply),
            Said::Transition(transition) => question
                .check_transition(transition)
                .map(|()| transition.clone()),
        };
        match transition {
            Ok(transition) => {
                let claim = Claim::new(transition, attempt.actor.clone(), Millis::now());
                let checked = Checked { question, claim };
                // A member's second vote, as far as this reading shows (the store decides).
                if checked
                    .vote()
                    .is_some_and(|v| tally::has_voted(&checked.question, &v.by))
                {
                    let question = checked.question;
                    return Err(refused(
                        Error::AlreadyVoted(Box::new(question.clone())),
                        question,
                    ));
                }
                Ok(Reading::Claim(checked))
            }
            Err(error) => Err(refused(error.into(), question)),
        }
    }

    /// Claims what [`Resolver::check`] read, as of now.
    pub(crate) async fn commit(
        &self,
        bridge: &Bridge,
        checked: Checked,
    ) -> Result<Question, Error> {
        let Checked {
            question,
            mut claim,
        } = checked;
        claim.at = Millis::now();
        let checked = Checked { question, claim };
        // A vote and a batch's decision are boxed: rarer than a claim and larger, their futures
        // inline made every answer's future as large as theirs, and moving it copied all of it.
        if let Some(vote) = checked.vote() {
            return Box::pin(self.vote(bridge, &checked.question, vote)).await;
        }
        if checked.question.is_batch() && checked.claim.at < checked.question.expires_at {
            return Box::pin(self.decide(bridge, &checked.question, checked.claim)).await;
        }
        self.claim(bridge, &checked.question, checked.claim).await
    }

    /// Passes a result on, recording a refusal in the audit trail first: the one place refused
    /// attempts are audited. A store that did not answer is not a refusal (and could not record
    /// one anyway).
    pub(crate) async fn conclude(
        &self,
        actor: &Actor,
        attempted: Option<String>,
        result: Result<Question, Refusal>,
    ) -> Result<Question, Error> {
        let refusal = match result {
            Ok(question) => return Ok(question),
            Err(refusal) => refusal,
        };
        // A quorum member's partial list is kept, not refused.
        if refusal.error.is_retryable() || matches!(refusal.error, Error::Noted { .. }) {
            return Err(refusal.error);
        }
        let caller = format!("{}/{}", actor.by, actor.via);
        let mut why = refusal.error.to_string();
        match self.refusals.judge(&caller, Millis::now()) {
            Verdict::Skip { first } => {
                if first {
                    tracing::warn!(%caller, "many refused attempts by one caller; counting the rest of this minute's instead of recording each");
                }
                return Err(refusal.error);
            }
            Verdict::Record { unrecorded: 0 } => {}
            Verdict::Record { unrecorded } => {
                why.push_str(&format!(
                    " (and {unrecorded} earlier refused attempts by this caller, counted but not recorded one by one)"
                ));
            }
        }
        let entry = AuditEntry::refused(
            &actor.by,
            &actor.via,
            attempted,
            refusal.question.as_ref(),
            &why,
        );
        if let Err(error) = self.store.audit.append_audit(&entry).await {
            tracing::warn!(error = %Chain(&error), "cannot append to the audit trail");
        }
        Err(refusal.error)
    }

    /// The run waiting on `question`, carried ahead to its next question with the answer
    /// `claim` would give (see [`crate::bridge::Runner::ahead`]), when the store can save that with the
    /// claim and this process knows the run as it waits. Quorum votes and expiries are left to
    /// the usual hand-over.
    fn carry_ahead(
        &self,
        bridge: &Bridge,
        question: &Question,
        claim: &Claim,
    ) -> Option<crate::bridge::Ahead> {
        let run_id = question.run_id.as_ref()?;
        if question.quorum.is_some() || !self.store.questions.claims_ahead() {
            return None;
        }
        // Only the run is copied, and only when it waits on this question.
        let run = bridge
            .recent()
            .run_with(run_id, |news| {
                let run = &news.run;
                (run.waits_on(&question.id) && !run.knows(&question.id)).then(|| (**run).clone())
            })
            .flatten()?;
        let mut answered = question.clone();
        if answered.apply(claim) != ClaimOutcome::Won {
            return None;
        }
        bridge.runner()?.ahead(bridge, run, &answered)
    }

    /// Applies `claim` in the store and starts the effects of a win. No authorisation check:
    /// expiry, cancellation, and the checked attempts above.
    pub(crate) async fn claim(
        &self,
        bridge: &Bridge,
        question: &Question,
        claim: Claim,
    ) -> Result<Question, Error> {
        if !question.is_pending() {
            return Err(Error::AlreadyResolved(Box::new(question.clone())));
        }
        // With a run engine here, a run parked on the question is handed over with the claim.
        let lease_until = Millis::now().after(bridge.options().run_lease);
        let take_run = bridge.runner().map(|_| TakeRun {
            owner: bridge.owner_id(),
            lease_until,
        });
        // A resolution with no effect of its own (no callback, no rule to create) can be finished
        // by the claim itself, when it turns out to have been shown nowhere.
        let (_, resolution) = question.resolution_for(&claim);
        let finish_when_idle = question.callback_url.is_none() && !resolution.creates_rules();
        let ahead = take_run.and_then(|_| self.carry_ahead(bridge, question, &claim));
        let options = ClaimOptions {
            take_run,
            finish_when_idle,
            ahead: ahead.as_ref().map(|ahead| AheadRun {
                was: ahead.was,
                run: &ahead.run,
                next: &ahead.next,
            }),
            ..ClaimOptions::new(SETTLE_GRACE)
        };
        let Some(claimed) = self
            .store
            .questions
            .claim(question, &claim, options)
            .await?
        else {
            return Err(Error::NotFound(question.id.clone()));
        };
        let mut claimed = claimed;
        let ahead = ahead.filter(|_| claimed.ahead);
        let resolved = claimed.question.clone();
        match claimed.outcome {
            ClaimOutcome::Won => {
                tracing::info!(
                    question_id = %resolved.id,
                    status = %resolved.status,
                    decider = ?claim.decider,
                    "question resolved"
                );
                // Boxed, as the vote and the decision in `commit` are: rare and large.
                Box::pin(rules_now(bridge, &resolved, &mut claimed)).await;
                bridge
                    .effects()
                    .after_win(bridge, claimed, ahead)
                    .let_run()
                    .await;
                Ok(resolved)
            }
            ClaimOutcome::Expired => {
                tracing::info!(question_id = %resolved.id, "question expired (claim arrived after the deadline)");
                bridge
                    .effects()
                    .after_win(bridge, claimed, None)
                    .let_run()
                    .await;
                Err(Error::AlreadyResolved(Box::new(resolved)))
            }
            ClaimOutcome::AlreadyResolved => Err(Error::AlreadyResolved(Box::new(resolved))),
        }
    }
}

/// "Always allow": the rule exists (and matching pending approvals are allowed) before the
/// approver's reply returns; the rest follows as usual.
async fn rules_now(bridge: &Bridge, resolved: &Question, claimed: &mut crate::store::Claimed) {
    if !resolved
        .resolution
        .as_ref()
        .is_some_and(|r| r.creates_rules())
    {
        return;
    }
    match bridge.approvals().create_rule_now(bridge, resolved).await {
        Ok(()) => claimed.work.done.push(EFFECT_RULE.into()),
        Err(error) => {
            tracing::warn!(question_id = %resolved.id, error = %Chain(&error), "cannot create the rule yet; the sweeper will retry");
        }
    }
}
