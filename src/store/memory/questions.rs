//! Questions in memory: stored, read, claimed (the claim's steps are `claim.rs`'s), listed
//! and counted.

use super::MemoryStore;
use crate::store::claim;
use crate::store::{ClaimOptions, Claimed, Counts, FINAL, Inserted, ListFilter, Questions, Result};
use askbridge_core::Status;
use askbridge_core::{Claim, Millis, Question, QuestionId};
use async_trait::async_trait;

#[async_trait]
impl Questions for MemoryStore {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        if crate::store::Sessions::session_closed(self, &question.session_id).await? {
            return Ok(Inserted::Closed);
        }
        let inserted = self.state().insert_question(question);
        if inserted == Inserted::Created {
            self.announce(question);
        }
        Ok(inserted)
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<Question>> {
        Ok(self.state().questions.get(id).cloned())
    }

    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
        options: ClaimOptions<'_>,
    ) -> Result<Option<Claimed>> {
        let claimed = claim::claim_in(&mut *self.state(), &snapshot.id, claim, &options)?;
        if let Some(claimed) = &claimed {
            claim::announce(&self.events, claimed, &options);
        }
        Ok(claimed)
    }

    fn claims_ahead(&self) -> bool {
        true
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        let state = self.state();
        let mut found: Vec<Question> = state
            .questions
            .values()
            .filter(|q| filter.accepts(q))
            .cloned()
            .collect();
        found.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        found.truncate(filter.effective_limit());
        Ok(found)
    }

    async fn counts(&self, since: Millis) -> Result<Counts> {
        let state = self.state();
        let mut counts = Counts::default();
        let mut answered: Vec<(Millis, u64)> = Vec::new();
        for question in state.questions.values() {
            let Some(resolution) = &question.resolution else {
                counts.pending += 1;
                continue;
            };
            if let Some(slot) = FINAL.iter().position(|s| *s == question.status)
                && resolution.at >= since
            {
                counts.resolved[slot] += 1;
            }
            if question.status == Status::Answered {
                let took = resolution.at.since(question.created_at).as_millis() as u64;
                answered.push((resolution.at, took));
            }
        }
        answered.sort_unstable_by_key(|(at, _)| std::cmp::Reverse(*at));
        counts.answer_ms = answered.into_iter().take(2000).map(|(_, ms)| ms).collect();
        Ok(counts)
    }
}
