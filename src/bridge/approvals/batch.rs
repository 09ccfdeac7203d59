//! Rules and batches of actions: a rule decides the actions of a new batch it matches before
//! anyone is asked (each entry `by_rule`, and the message says which), and a batch's "always"
//! decisions each create a rule for their action. Apart from `mod.rs` so that each reads at a
//! glance; the rules themselves (who a rule may decide for) are `mod.rs`'s `decides`.

use super::{Approvals, decides, rule_of};
use crate::bridge::{Bridge, SETTLE_GRACE};
use crate::store::ClaimOptions;
use crate::{AskError, Error, NoAnswer};
use askbridge_core::Status;
use askbridge_core::actions::ActionOutcome;
use askbridge_core::batch::{self, Choice, DecideOutcome};
use askbridge_core::{ApprovalReply, Decider, Millis, Question, Rule, Transition};

/// What the function that asked for a batch gets: one outcome per action, in order, once every
/// action is decided; otherwise why there is none.
pub fn outcomes_of(question: &Question) -> Result<Vec<ActionOutcome>, AskError> {
    let id = &question.id;
    match (question.status, &question.resolution) {
        (Status::Answered, Some(resolution))
            if resolution.decisions.len() == question.actions.len() =>
        {
            Ok(resolution
                .decisions
                .iter()
                .zip(&question.actions)
                .map(|(entry, item)| ActionOutcome::of(entry, &item.action))
                .collect())
        }
        (Status::Cancelled, _) => Err(NoAnswer::Cancelled { id: id.clone() }.into()),
        (Status::Declined, resolution) => Err(NoAnswer::Declined {
            message: resolution.as_ref().and_then(|r| r.message.clone()),
        }
        .into()),
        _ => Err(NoAnswer::Timeout { id: id.clone() }.into()),
    }
}

impl Approvals {
    /// Decides the actions of the new batch `question` that rules match. Returns the question
    /// as it then stands (resolved when rules decided every action), or `None` when no rule
    /// matched.
    pub(super) async fn decide_batch_by_rules(
        &self,
        bridge: &Bridge,
        question: &Question,
    ) -> Result<Option<Question>, Error> {
        let now = Millis::now();
        let mut entries = Vec::new();
        for item in &question.actions {
            let rules = self
                .store
                .rules
                .rules_for(&item.action.digest(), &question.session_id)
                .await?;
            let Some(rule) = rules.iter().find(|r| decides(r, question, &item.action)) else {
                continue;
            };
            tracing::info!(question_id = %question.id, rule_id = %rule.id, action = item.n, "batch action allowed by rule");
            let choice = Choice {
                action: item.n,
                then: Transition::Answer {
                    value: ApprovalReply::Once.into(),
                },
            };
            entries.push(question.entry_of(&choice, &Decider::Rule(rule.id.clone()), now));
        }
        if entries.is_empty() {
            return Ok(None);
        }
        let due = now.after(SETTLE_GRACE);
        let Some((outcome, decided)) = self.store.votes.decide(question, &entries, due).await?
        else {
            return Err(Error::NotFound(question.id.clone()));
        };
        if outcome != DecideOutcome::Complete {
            return Ok(Some(decided));
        }
        let claim = batch::completing_claim(&decided).expect("a complete batch claims");
        let Some(claimed) = self
            .store
            .questions
            .claim(&decided, &claim, ClaimOptions::new(SETTLE_GRACE))
            .await?
        else {
            return Err(Error::NotFound(question.id.clone()));
        };
        let resolved = claimed.question.clone();
        bridge
            .effects()
            .after_win(bridge, claimed, None)
            .let_run()
            .await;
        Ok(Some(resolved))
    }
}

/// The rules a resolved batch's "always" decisions create, one per such action.
pub(super) fn rules_of(question: &Question) -> Vec<Rule> {
    let Some(resolution) = &question.resolution else {
        return Vec::new();
    };
    resolution
        .batch_rules()
        .filter_map(|entry| {
            let index = entry.action.checked_sub(1)?;
            let item = question.actions.get(index)?;
            let made = (entry.rule_id.clone()?, entry.by.clone(), entry.at);
            Some(rule_of(question, &item.action, entry.everywhere, made))
        })
        .collect()
}
