//! Votes on questions with a quorum, in the embedded store: the question is read, voted on and
//! written back in one write transaction, so a second vote by the same person is refused as a
//! second claim is. And forms' drafts, one row per person and form.

use super::EmbeddedStore;
use super::tables::{DRAFTS, QUESTIONS, decode, encode, set_due};
use crate::store::{Drafts, Error, Event, Result, Votes};
use askbridge_core::Identity;
use askbridge_core::batch::{self, DecideOutcome, Entry};
use askbridge_core::form::Draft;
use askbridge_core::quorum::Vote;
use askbridge_core::tally::{self, VoteOutcome};
use askbridge_core::{Millis, Question, QuestionId};
use async_trait::async_trait;
use redb::ReadableTable as _;
use std::time::Duration;

#[async_trait]
impl Votes for EmbeddedStore {
    async fn vote(
        &self,
        snapshot: &Question,
        vote: &Vote,
        due_if_met: Millis,
    ) -> Result<Option<(VoteOutcome, Question)>> {
        let (id, vote) = (snapshot.id.clone(), vote.clone());
        let voted = self
            .write(move |txn| {
                let mut questions = txn.open_table(QUESTIONS)?;
                let stored = questions.get(id.as_str())?.map(|json| decode(json.value()));
                let Some(mut question) = stored.transpose()? else {
                    return Ok(None);
                };
                let outcome = tally::apply_vote(&mut question, &vote);
                if outcome.is_counted() {
                    questions.insert(id.as_str(), encode(&question).as_str())?;
                }
                drop(questions);
                if outcome == VoteOutcome::Met {
                    set_due(txn, id.as_str(), due_if_met.0)?;
                }
                Ok(Some((outcome, question)))
            })
            .await?;
        if let Some((outcome, question)) = &voted
            && outcome.is_counted()
        {
            let _ = self.events.send(Event::voted(question));
        }
        Ok(voted)
    }

    async fn decide(
        &self,
        snapshot: &Question,
        entries: &[Entry],
        due_if_complete: Millis,
    ) -> Result<Option<(DecideOutcome, Question)>> {
        let (id, entries) = (snapshot.id.clone(), entries.to_vec());
        let decided = self
            .write(move |txn| {
                let mut questions = txn.open_table(QUESTIONS)?;
                let stored = questions.get(id.as_str())?.map(|json| decode(json.value()));
                let Some(mut question) = stored.transpose()? else {
                    return Ok(None);
                };
                let outcome = batch::apply_decisions(&mut question, &entries);
                if outcome.is_recorded() {
                    questions.insert(id.as_str(), encode(&question).as_str())?;
                }
                drop(questions);
                if outcome == DecideOutcome::Complete {
                    set_due(txn, id.as_str(), due_if_complete.0)?;
                }
                Ok(Some((outcome, question)))
            })
            .await?;
        if let Some((outcome, question)) = &decided
            && outcome.is_recorded()
        {
            let _ = self.events.send(Event::voted(question));
        }
        Ok(decided)
    }
}

#[async_trait]
impl Drafts for EmbeddedStore {
    async fn draft(&self, id: &QuestionId, who: &Identity) -> Result<Option<Draft>> {
        let (id, who) = (id.clone(), who.clone());
        self.read(move |txn| {
            let table = txn.open_table(DRAFTS)?;
            let Some(json) = table.get((id.as_str(), who.as_str()))? else {
                return Ok(None);
            };
            serde_json::from_str(json.value())
                .map(Some)
                .map_err(|e| Error::corrupt(format!("draft of {id}"), e.to_string()))
        })
        .await
    }

    async fn save_draft(
        &self,
        id: &QuestionId,
        who: &Identity,
        draft: &Draft,
        _ttl: Duration,
    ) -> Result<()> {
        let json = serde_json::to_string(draft).expect("a draft serialises");
        let (id, who) = (id.clone(), who.clone());
        self.write(move |txn| {
            txn.open_table(DRAFTS)?
                .insert((id.as_str(), who.as_str()), json.as_str())?;
            Ok(())
        })
        .await
    }
}
