//! Questions, where they were shown, and the outbox, in the embedded store.

use super::EmbeddedStore;
use super::audit::append_audit_in;
use super::tables::{
    BY_TARGET, CREATED, DONE, EFFECTS, ID_END, QUESTIONS, SESSION_DONE, SESSION_PENDING, SHOWN,
    StateIndexes, decode, encode, ids_under, insert_question, put_run, remove_open, run_in,
    session_done, set_due, work_in,
};
use crate::store::claim::{self, ClaimTxn};
use crate::store::{
    AheadRun, ClaimOptions, Claimed, Counts, FINAL, Inserted, ListFilter, Questions, Result,
    TakeRun, Work,
};
use askbridge_core::audit::AuditEntry;
use askbridge_core::run::Run;
use askbridge_core::{Claim, Millis, Question, QuestionId, RunId, Status};
use async_trait::async_trait;
use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata as _, WriteTransaction};

/// How many recent answers the time-to-answer percentiles are read from.
const RECENT_ANSWERS: usize = 2000;

/// Reads the questions with these ids (skipping any that are gone).
pub(super) fn load(
    txn: &ReadTransaction,
    ids: impl IntoIterator<Item = String>,
) -> Result<Vec<Question>> {
    let questions = txn.open_table(QUESTIONS)?;
    let mut found = Vec::new();
    for id in ids {
        if let Some(json) = questions.get(id.as_str())? {
            found.push(decode(json.value())?);
        }
    }
    Ok(found)
}

/// The embedded store's records as a claim sees them, inside its write transaction (see
/// `claim.rs`).
struct Txn<'a>(&'a WriteTransaction);

impl ClaimTxn for Txn<'_> {
    fn question(&mut self, id: &QuestionId) -> Result<Option<Question>> {
        let questions = self.0.open_table(QUESTIONS)?;
        let json = questions.get(id.as_str())?;
        json.map(|json| decode(json.value())).transpose()
    }

    fn save_resolved(&mut self, question: &Question) -> Result<()> {
        let id = question.id.as_str();
        self.0
            .open_table(QUESTIONS)?
            .insert(id, encode(question).as_str())?;
        StateIndexes {
            created: &mut self.0.open_table(CREATED)?,
            done: &mut self.0.open_table(DONE)?,
            session_pending: &mut self.0.open_table(SESSION_PENDING)?,
            session_done: &mut self.0.open_table(SESSION_DONE)?,
        }
        .enter(question, id)
    }

    fn audit(&mut self, entry: &AuditEntry) -> Result<()> {
        append_audit_in(self.0, entry)
    }

    fn set_due(&mut self, id: &QuestionId, at: Millis) -> Result<()> {
        set_due(self.0, id.as_str(), at.0)
    }

    fn run(&mut self, id: &RunId) -> Result<Option<Run>> {
        run_in(self.0, id.as_str())
    }

    fn put_run(&mut self, run: &Run) -> Result<()> {
        put_run(self.0, run)
    }

    fn insert_question(&mut self, question: &Question) -> Result<Inserted> {
        insert_question(self.0, question)
    }

    fn work(&mut self, id: &QuestionId) -> Result<Work> {
        work_in(
            &self.0.open_table(SHOWN)?,
            &self.0.open_table(EFFECTS)?,
            id.as_str(),
        )
    }

    fn finish(&mut self, question: &Question) -> Result<()> {
        remove_open(self.0, question.id.as_str(), &question.all_targets())
    }
}

#[async_trait]
impl Questions for EmbeddedStore {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        let stored = question.clone();
        let inserted = self
            .write(
                move |txn| match super::kept::closed(txn, &stored.session_id)? {
                    true => Ok(Inserted::Closed),
                    false => insert_question(txn, &stored),
                },
            )
            .await?;
        if inserted == Inserted::Created {
            self.announce(question);
        }
        Ok(inserted)
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<Question>> {
        let id = id.clone();
        self.read(move |txn| Ok(load(txn, [id.to_string()])?.pop()))
            .await
    }

    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
        options: ClaimOptions<'_>,
    ) -> Result<Option<Claimed>> {
        let id = snapshot.id.clone();
        let claim = claim.clone();
        // Owned, for the write's thread.
        let take = options
            .take_run
            .map(|t| (t.owner.to_owned(), t.lease_until));
        let ahead = options
            .ahead
            .map(|a| (a.was, a.run.clone(), a.next.clone()));
        let (settle_after, finish_when_idle) = (options.settle_after, options.finish_when_idle);
        let claimed = self
            .write(move |txn| {
                let options = ClaimOptions {
                    settle_after,
                    take_run: take.as_ref().map(|(owner, lease_until)| TakeRun {
                        owner,
                        lease_until: *lease_until,
                    }),
                    finish_when_idle,
                    ahead: ahead.as_ref().map(|(was, run, next)| AheadRun {
                        was: *was,
                        run,
                        next,
                    }),
                };
                claim::claim_in(&mut Txn(txn), &id, &claim, &options)
            })
            .await?;
        if let Some(claimed) = &claimed {
            claim::announce(&self.events, claimed, &options);
        }
        Ok(claimed)
    }

    fn claims_ahead(&self) -> bool {
        true
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        let filter = filter.clone();
        self.read(move |txn| {
            let status = filter.status.unwrap_or(Status::Pending);
            let limit = filter.effective_limit();
            let mut found = match (&filter.target, &filter.session_id) {
                (Some(target), _) if status == Status::Pending => load(
                    txn,
                    ids_under(&txn.open_table(BY_TARGET)?, target.as_str())?,
                )?,
                // A session's pending page: that page from its own index, newest first.
                (_, Some(session)) if status == Status::Pending => {
                    let range = (session.as_str(), 0, "")..=(session.as_str(), u64::MAX, ID_END);
                    let mut ids = Vec::new();
                    for entry in txn
                        .open_table(SESSION_PENDING)?
                        .range(range)?
                        .rev()
                        .take(limit)
                    {
                        ids.push(entry?.0.value().2.to_owned());
                    }
                    load(txn, ids)?
                }
                // A session's questions of one outcome: the newest resolved, from their index.
                (_, Some(session)) => load(txn, session_done(txn, session, status, None, limit)?)?,
                (None, None) if status == Status::Pending => {
                    // Newest first, a page at a time: the index is ordered by time asked.
                    let mut ids = Vec::new();
                    for entry in txn.open_table(CREATED)?.iter()?.rev().take(limit) {
                        ids.push(entry?.0.value().1.to_owned());
                    }
                    load(txn, ids)?
                }
                _ => {
                    let mut ids = Vec::new();
                    let range = (status.as_str(), 0, "")..=(status.as_str(), u64::MAX, ID_END);
                    for entry in txn.open_table(DONE)?.range(range)?.rev().take(limit) {
                        ids.push(entry?.0.value().2.to_owned());
                    }
                    load(txn, ids)?
                }
            };
            found.retain(|q| filter.accepts(q));
            found.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
            found.truncate(limit);
            Ok(found)
        })
        .await
    }

    async fn counts(&self, since: Millis) -> Result<Counts> {
        self.read(move |txn| {
            let mut counts = Counts {
                pending: txn.open_table(CREATED)?.len()? as usize,
                ..Counts::default()
            };
            let done = txn.open_table(DONE)?;
            for (slot, status) in FINAL.iter().enumerate() {
                let range = (status.as_str(), since.0, "")..=(status.as_str(), u64::MAX, ID_END);
                counts.resolved[slot] = done.range(range)?.count();
            }
            let answered =
                (Status::Answered.as_str(), 0, "")..=(Status::Answered.as_str(), u64::MAX, ID_END);
            let mut ids = Vec::new();
            for entry in done.range(answered)?.rev().take(RECENT_ANSWERS) {
                ids.push(entry?.0.value().2.to_owned());
            }
            for question in load(txn, ids)? {
                if let Some(resolution) = &question.resolution {
                    counts
                        .answer_ms
                        .push(resolution.at.since(question.created_at).as_millis() as u64);
                }
            }
            Ok(counts)
        })
        .await
    }
}
