//! A batch's decisions ([`askbridge_core::batch`]).
//!
//! Without a quorum, each decision is recorded by the store, one per action, the first winning
//! (`Votes::decide`), and the question stays pending with it; every message showing it is
//! redrawn with the decision. The decision that leaves no action undecided is followed by the
//! completing claim, through the same claim-once path as any answer, as a met quorum is: of
//! several processes completing at once one wins, and if the decider's process dies in between,
//! the store has made the question due and a sweeper claims.
//!
//! With a quorum, a member's decisions gather in their draft (the store's, as a form's) until
//! they cover every action; the whole list is then their vote.

use super::Resolver;
use crate::Error;
use crate::bridge::{Bridge, SETTLE_GRACE};
use askbridge_core::batch::{Choice, DecideOutcome};
use askbridge_core::form::Draft;
use askbridge_core::tally;
use askbridge_core::{Claim, Millis, Question, Transition};

impl Resolver {
    /// Records `claim`'s decisions on the batch `question` and returns it as it now stands:
    /// pending with them, or resolved when they were the last.
    pub(super) async fn decide(
        &self,
        bridge: &Bridge,
        question: &Question,
        claim: Claim,
    ) -> Result<Question, Error> {
        let Transition::Decide { choices } = &claim.transition else {
            return self.claim(bridge, question, claim).await;
        };
        if question.quorum.is_some() {
            return self.gather(bridge, question, choices, claim.clone()).await;
        }
        let entries = question.entries_of(choices, &claim.decider, claim.at);
        let due = Millis::now().after(SETTLE_GRACE);
        let Some((outcome, decided)) = self.store.votes.decide(question, &entries, due).await?
        else {
            return Err(Error::NotFound(question.id.clone()));
        };
        match outcome {
            DecideOutcome::Recorded => {
                tracing::info!(question_id = %question.id, decided = entries.len(), "batch decisions recorded");
                self.spawn_refresh(bridge, decided.clone());
                Ok(decided)
            }
            DecideOutcome::Complete => {
                tracing::info!(question_id = %question.id, "batch decisions recorded; every action decided");
                self.complete_quorum(bridge, &decided).await
            }
            DecideOutcome::Decided(n) => Err(already_decided(&decided, n)),
            DecideOutcome::AlreadyResolved => Err(Error::AlreadyResolved(Box::new(decided))),
        }
    }

    /// A quorum member's decisions, added to those they gave before (their draft): a vote once
    /// they cover every action; until then the draft is kept and the question is unchanged.
    async fn gather(
        &self,
        bridge: &Bridge,
        question: &Question,
        choices: &[Choice],
        claim: Claim,
    ) -> Result<Question, Error> {
        let Some(actor) = claim.decider.actor().cloned() else {
            return self.claim(bridge, question, claim).await;
        };
        let mut draft = self
            .store
            .drafts
            .draft(&question.id, &actor.by)
            .await?
            .unwrap_or_default();
        let mut gathered: Vec<Choice> = draft
            .values
            .values()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect();
        gathered.retain(|c| !choices.iter().any(|new| new.action == c.action));
        gathered.extend(choices.iter().cloned());
        gathered.sort_by_key(|c| c.action);
        let whole = Claim {
            transition: Transition::Decide { choices: gathered },
            ..claim
        };
        if let Some(vote) = tally::vote_of(question, &whole) {
            return self.vote(bridge, question, vote).await;
        }
        let Transition::Decide { choices: gathered } = &whole.transition else {
            unreachable!("made above")
        };
        draft = Draft {
            at: gathered.len(),
            values: gathered
                .iter()
                .map(|c| (c.action.to_string(), serde_json::json!(c)))
                .collect(),
            ..Draft::default()
        };
        let ttl = question.remaining(Millis::now()) + SETTLE_GRACE;
        self.store
            .drafts
            .save_draft(&question.id, &actor.by, &draft, ttl)
            .await?;
        Err(Error::Noted {
            question: Box::new(question.clone()),
            noted: gathered.len(),
        })
    }
}

/// The refusal of a decision on action `n`, decided already (0: every action was).
fn already_decided(question: &Question, n: usize) -> Error {
    let reason = match n.checked_sub(1).and_then(|i| question.actions.get(i)) {
        Some(item) => match &item.decision {
            Some(entry) => format!(
                "Action {n} was decided already ({} by {}). Nothing was decided.",
                entry.decision.as_str(),
                entry.who()
            ),
            None => format!("Action {n} is named twice. Nothing was decided."),
        },
        None => format!("There is no action {n}. Nothing was decided."),
    };
    Error::Model(askbridge_core::Error::AlreadyDecided { action: n, reason })
}
