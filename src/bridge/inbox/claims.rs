//! A message's claim: the copy of its question it is checked against, its reply, and the claim
//! sent in one round trip with its delivery's taking in hand.
//!
//! A tap or an `/answer` naming a question this process remembers (`recent.rs`) needs no read:
//! it is checked against that copy, as the HTTP API's replies are, and the answer is one round
//! trip to the store, not two (the read and the taking in hand, then the claim).
//!
//! The claim goes with the taking in hand rather than after it: a claim is once-only in the
//! store, so a duplicate's claim changes nothing there (already resolved, already voted), and the
//! duplicate is then dropped as before, its claim's result unread and no refusal recorded. Only
//! a duplicate racing its first coming can now be the one whose claim wins; it stays silent, and
//! the first coming, finding the question resolved as its own claim would have resolved it, by
//! the same person, tells them it is done.

use super::commands::{Turn, done, refusal_reply};
use crate::Error;
use crate::bridge::resolve::{Checked, Refusal};
use askbridge_core::command::{Command, CommandLine};
use askbridge_core::{IdRef, Kind, Question, QuestionId, Reply};

impl Turn {
    /// Claims `checked` in the same round trip as taking delivery `key` in hand; the reply, or
    /// none for a duplicate.
    pub(super) async fn claim_in_hand(
        &self,
        key: &str,
        checked: Checked,
        attempted: String,
    ) -> Option<Reply> {
        let (taken, result) = tokio::join!(self.take_in_hand(key), self.claim(checked));
        if self.handled_already(key, taken).await {
            return None;
        }
        let (reply, recorded) = self.concluded(result, attempted).await;
        self.settle_delivery(key, recorded).await;
        Some(reply)
    }

    /// Claims `checked`. A question already resolved as this claim would have resolved it, by
    /// the same person, counts as this claim's: a copy of the delivery racing it won.
    pub(super) async fn claim(&self, checked: Checked) -> std::result::Result<Question, Error> {
        let mine = checked.predicted().ok();
        match self.bridge.resolver().commit(&self.bridge, checked).await {
            Err(Error::AlreadyResolved(won)) if same_outcome(&won, mine.as_ref()) => Ok(*won),
            result => result,
        }
    }

    /// A claim's reply, its refusal recorded; false when the store failed to record it.
    pub(super) async fn concluded(
        &self,
        result: Result<Question, Error>,
        attempted: String,
    ) -> (Reply, bool) {
        let result = result.map_err(Refusal::from);
        let recorded = !result.as_ref().is_err_and(Refusal::is_store_failure);
        let resolver = self.bridge.resolver();
        let reply = match resolver
            .conclude(&self.actor, Some(attempted), result)
            .await
        {
            Ok(resolved) => done(resolved),
            Err(error) => refusal_reply(&error),
        };
        (reply, recorded)
    }

    /// The question a message answers by its full id (`/answer <id> …`, `/decline <id>`, a
    /// button), when this process remembers it and that copy is as good as a read (see
    /// `Recent::claimable`), and it is not a form or an approval edited field by field, whose
    /// fields are read against a draft.
    pub(super) fn remembered(&self) -> Option<Question> {
        let id = match CommandLine::parse(&self.message.text) {
            Ok(Some(CommandLine {
                command: Command::Answer(command),
                ..
            })) => command.id,
            Ok(Some(CommandLine {
                command: Command::Decline(command),
                ..
            })) => command.id,
            _ => return None,
        };
        let IdRef::Full(id) = id else { return None };
        self.remembered_as(&id)
    }

    /// The question with full id `id` when this process remembers it and that copy is as good
    /// as a read (see [`Turn::remembered`]).
    pub(super) fn remembered_as(&self, id: &QuestionId) -> Option<Question> {
        self.bridge
            .recent()
            .claimable(id)
            .filter(|q| q.kind != Kind::Form && !q.edits_in_fields())
    }
}

/// True when `won` was resolved as `mine` (this delivery's claim, predicted) would have resolved
/// it, by the same person: a copy of this delivery racing it won the claim.
fn same_outcome(won: &Question, mine: Option<&Question>) -> bool {
    let Some(mine) = mine else { return false };
    match (&won.resolution, &mine.resolution) {
        (Some(theirs), Some(ours)) => {
            won.status == mine.status
                && theirs.by() == ours.by()
                && theirs.value == ours.value
                && theirs.message == ours.message
        }
        _ => false,
    }
}
