//! Votes on questions with a quorum, in Redis: one script in the question's bucket
//! (`lua/vote.lua`) marks the voter, appends the vote, counts the votes that agree, announces it
//! and, when the quorum is met, makes the outbox entry due. And forms' drafts: one string per
//! person and form, in the form's bucket, expiring with it.

use super::RedisStore;
use super::codec::{voted_frame, votes_of};
use super::events::EVENTS_MAXLEN;
use super::keys::question_bucket;
use super::scripts::VOTE;
use crate::store::{Drafts, Error, Event, Result, Votes};
use askbridge_core::batch::{DecideOutcome, Entry};
use askbridge_core::form::Draft;
use askbridge_core::quorum::Vote;
use askbridge_core::tally::VoteOutcome;
use askbridge_core::{Identity, QuestionId};
use askbridge_core::{Millis, Question};
use async_trait::async_trait;
use std::time::Duration;

#[async_trait]
impl Votes for RedisStore {
    async fn vote(
        &self,
        snapshot: &Question,
        vote: &Vote,
        due_if_met: Millis,
    ) -> Result<Option<(VoteOutcome, Question)>> {
        let id = snapshot.id.as_str();
        let needs = snapshot.quorum.as_ref().map_or(1, |q| q.needs);
        let json = serde_json::to_string(vote).expect("a vote serialises");
        let (event, before_votes) = voted_frame();
        let mut invocation = VOTE.prepare_invoke();
        invocation
            .key(self.keys.question(id))
            .key(self.keys.open(question_bucket(id)))
            .key(self.keys.events(question_bucket(id)))
            .arg(vote.by.as_str())
            .arg(&json)
            .arg(&vote.tally)
            .arg(needs)
            .arg(due_if_met.0)
            .arg(id)
            .arg(EVENTS_MAXLEN)
            .arg(&event.head)
            .arg(&before_votes)
            .arg(&event.tail);
        self.tag(&mut invocation);
        let reply: Vec<String> = self.invoke("vote", &invocation).await?;
        let (outcome, votes) = match reply.as_slice() {
            [outcome, votes] => (outcome.as_str(), votes.as_str()),
            _ => return Ok(None),
        };
        let outcome = match outcome {
            "counted" => VoteOutcome::Counted,
            "met" => VoteOutcome::Met,
            "duplicate" => VoteOutcome::Duplicate,
            "resolved" => {
                // The winner's resolution is what the voter is told: read it.
                let resolved = self.load_many(&[id.to_owned()]).await?.pop();
                return Ok(resolved.map(|q| (VoteOutcome::AlreadyResolved, q)));
            }
            other => {
                let why = format!("vote reply {other}");
                return Err(Error::corrupt(format!("question {id}"), why));
            }
        };
        if outcome != VoteOutcome::Duplicate {
            self.replicated(&self.keys.question(id)).await;
        }
        let mut question = snapshot.clone();
        question.votes = votes_of(votes)?;
        if outcome.is_counted() {
            self.deliver([Event::voted(&question)]);
        }
        Ok(Some((outcome, question)))
    }

    async fn decide(
        &self,
        snapshot: &Question,
        entries: &[Entry],
        due_if_complete: Millis,
    ) -> Result<Option<(DecideOutcome, Question)>> {
        self.record_decisions(snapshot, entries, due_if_complete)
            .await
    }
}

#[async_trait]
impl Drafts for RedisStore {
    async fn draft(&self, id: &QuestionId, who: &Identity) -> Result<Option<Draft>> {
        let mut get = redis::cmd("GET");
        get.arg(self.keys.draft(id.as_str(), who.as_str()));
        let json: Option<String> = self.query("draft", &get).await?;
        json.map(|json| {
            serde_json::from_str(&json)
                .map_err(|e| Error::corrupt(format!("draft of {id}"), e.to_string()))
        })
        .transpose()
    }

    async fn save_draft(
        &self,
        id: &QuestionId,
        who: &Identity,
        draft: &Draft,
        ttl: Duration,
    ) -> Result<()> {
        let json = serde_json::to_string(draft).expect("a draft serialises");
        let mut set = redis::cmd("SET");
        set.arg(self.keys.draft(id.as_str(), who.as_str()))
            .arg(json)
            .arg("PX")
            .arg(ttl.as_millis().max(1) as u64);
        self.query::<()>("draft", &set).await
    }
}
