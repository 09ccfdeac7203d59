//! Votes on questions with a quorum.
//!
//! A vote is an answer by a quorum member ([`tally::vote_of`]). The store takes one per person
//! atomically (`Votes::vote`), on any process; while the quorum is not met the question stays
//! pending and every message showing it is redrawn with its progress ("1 of 2 approved:
//! @alice"). The vote that meets it is followed by the completing claim, through the same
//! claim-once path as any answer: of several processes completing at once one wins, and if the
//! voter's process dies in between, the store has made the question due and a sweeper claims.

use super::Resolver;
use crate::Error;
use crate::bridge::{Bridge, SETTLE_GRACE};
use crate::store::Shown;
use askbridge_core::audit::AuditEntry;
use askbridge_core::error::Chain;
use askbridge_core::quorum::Vote;
use askbridge_core::tally::{self, VoteOutcome};
use askbridge_core::{Millis, Question, render};

impl Resolver {
    /// Casts `vote` on `question` and returns the question as it now stands: pending with the
    /// vote, or resolved when the vote met the quorum.
    pub(super) async fn vote(
        &self,
        bridge: &Bridge,
        question: &Question,
        vote: Vote,
    ) -> Result<Question, Error> {
        let due_if_met = Millis::now().after(SETTLE_GRACE);
        let Some((outcome, voted)) = self.store.votes.vote(question, &vote, due_if_met).await?
        else {
            return Err(Error::NotFound(question.id.clone()));
        };
        let progress = render::progress_line(&voted).unwrap_or_default();
        match outcome {
            VoteOutcome::Duplicate => {
                tracing::info!(question_id = %question.id, by = %vote.by, "refused: voted already");
                Err(Error::AlreadyVoted(Box::new(voted)))
            }
            VoteOutcome::AlreadyResolved => Err(Error::AlreadyResolved(Box::new(voted))),
            VoteOutcome::Counted => {
                tracing::info!(question_id = %question.id, by = %vote.by, %progress, "vote counted");
                bridge
                    .effects()
                    .record(AuditEntry::voted(&voted, &vote, &progress))
                    .await?;
                self.spawn_refresh(bridge, voted.clone());
                Ok(voted)
            }
            VoteOutcome::Met => {
                tracing::info!(question_id = %question.id, by = %vote.by, %progress, "vote counted; quorum met");
                bridge
                    .effects()
                    .record(AuditEntry::voted(&voted, &vote, &progress))
                    .await?;
                self.complete_quorum(bridge, &voted).await
            }
        }
    }

    /// Resolves a question whose quorum is met: after the vote that met it, or from the sweeper
    /// when that vote's process died before claiming.
    pub(in crate::bridge) async fn complete_quorum(
        &self,
        bridge: &Bridge,
        question: &Question,
    ) -> Result<Question, Error> {
        match tally::completing_claim(question) {
            Some(claim) => self.claim(bridge, question, claim).await,
            None => Ok(question.clone()),
        }
    }

    /// Redraws every message showing `question` with its progress, in the background (the
    /// voter's reply does not wait for every platform).
    ///
    /// The redraw races the question's resolution: a vote's redraw can reach the platform after
    /// the withdrawal of the vote that met the quorum, and would put the buttons back on an
    /// answered question. So each redraw is followed by a fresh read of the question, and if it
    /// has resolved meanwhile, that message is withdrawn again (an edit to the outcome, harmless
    /// when repeated). A resolution after that read is withdrawn by its own effects, which start
    /// only after it — and so after this redraw landed.
    pub(super) fn spawn_refresh(&self, bridge: &Bridge, question: Question) {
        let (bridge, deliveries) = (bridge.clone(), self.store.deliveries.clone());
        let questions = self.store.questions.clone();
        tokio::spawn(async move {
            let shown = match deliveries.shown(&question.id).await {
                Ok(shown) => shown,
                Err(error) => {
                    tracing::warn!(question_id = %question.id, error = %Chain(&error), "cannot read where the question is shown");
                    return;
                }
            };
            for shown in shown {
                let Shown { target, reference } = &shown;
                let Some(channel) = bridge.channel_for(target) else {
                    continue;
                };
                if let Err(error) = channel.refresh(&question, target, reference).await {
                    tracing::warn!(question_id = %question.id, %target, error = %Chain(&error), "cannot show the quorum's progress");
                    continue;
                }
                let now = match questions.get(&question.id).await {
                    Ok(Some(now)) if !now.is_pending() => now,
                    Ok(_) => continue,
                    Err(error) => {
                        tracing::warn!(question_id = %question.id, error = %Chain(&error), "cannot check the question after showing its progress");
                        continue;
                    }
                };
                tracing::info!(question_id = %question.id, %target, "resolved while its progress was redrawn; withdrawing again");
                // The effects' own withdrawal: its metrics, its logs, its "message gone" reading.
                bridge.effects().withdraw(&bridge, &now, &shown).await;
            }
        });
    }
}
