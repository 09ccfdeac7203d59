//! Votes on questions with a quorum (`tally::apply_vote` under the lock) and forms' drafts, in
//! memory.

use super::MemoryStore;
use crate::store::{Drafts, Event, Result, Votes};
use askbridge_core::Identity;
use askbridge_core::batch::{self, DecideOutcome, Entry};
use askbridge_core::form::Draft;
use askbridge_core::quorum::Vote;
use askbridge_core::tally::{self, VoteOutcome};
use askbridge_core::{Millis, Question, QuestionId};
use async_trait::async_trait;
use std::time::Duration;

#[async_trait]
impl Votes for MemoryStore {
    async fn vote(
        &self,
        snapshot: &Question,
        vote: &Vote,
        due_if_met: Millis,
    ) -> Result<Option<(VoteOutcome, Question)>> {
        let (outcome, question) = {
            let mut state = self.state();
            let Some(question) = state.questions.get_mut(&snapshot.id) else {
                return Ok(None);
            };
            let outcome = tally::apply_vote(question, vote);
            let question = question.clone();
            if outcome == VoteOutcome::Met {
                state.set_due(&question.id, due_if_met);
            }
            (outcome, question)
        };
        if outcome.is_counted() {
            let _ = self.events.send(Event::voted(&question));
        }
        Ok(Some((outcome, question)))
    }

    async fn decide(
        &self,
        snapshot: &Question,
        entries: &[Entry],
        due_if_complete: Millis,
    ) -> Result<Option<(DecideOutcome, Question)>> {
        let (outcome, question) = {
            let mut state = self.state();
            let Some(question) = state.questions.get_mut(&snapshot.id) else {
                return Ok(None);
            };
            let outcome = batch::apply_decisions(question, entries);
            let question = question.clone();
            if outcome == DecideOutcome::Complete {
                state.set_due(&question.id, due_if_complete);
            }
            (outcome, question)
        };
        if outcome.is_recorded() {
            let _ = self.events.send(Event::voted(&question));
        }
        Ok(Some((outcome, question)))
    }
}

#[async_trait]
impl Drafts for MemoryStore {
    async fn draft(&self, id: &QuestionId, who: &Identity) -> Result<Option<Draft>> {
        let drafts = self.drafts.lock().unwrap_or_else(|p| p.into_inner());
        Ok(drafts.get(&(id.clone(), who.clone())).cloned())
    }

    async fn save_draft(
        &self,
        id: &QuestionId,
        who: &Identity,
        draft: &Draft,
        _ttl: Duration,
    ) -> Result<()> {
        let mut drafts = self.drafts.lock().unwrap_or_else(|p| p.into_inner());
        drafts.insert((id.clone(), who.clone()), draft.clone());
        Ok(())
    }
}
