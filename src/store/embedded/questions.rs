//! Questions, where they were shown, and the outbox, in the embedded store.

use super::EmbeddedStore;
use super::records::append_audit_in;
use super::tables::{
    BY_SESSION, BY_TARGET, DUE, DUE_AT, EFFECTS, ID_END, QUESTIONS, SHOWN, decode, encode,
    ids_under, set_due,
};
use crate::store::{Deliveries, Error, Inserted, ListFilter, Outbox, Questions, Result, Shown};
use askbridge_core::audit::AuditEntry;
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId, Status, Target};
use async_trait::async_trait;
use redb::{ReadableDatabase as _, ReadableTable};
use std::time::Duration;

#[async_trait]
impl Questions for EmbeddedStore {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        let stored = question.clone();
        let inserted = self
            .write(move |txn| {
                let id = stored.id.as_str();
                let mut questions = txn.open_table(QUESTIONS)?;
                if questions.get(id)?.is_some() {
                    return Ok(Inserted::Taken);
                }
                questions.insert(id, encode(&stored).as_str())?;
                txn.open_table(BY_SESSION)?
                    .insert((stored.session_id.as_str(), id), ())?;
                let mut by_target = txn.open_table(BY_TARGET)?;
                for target in &stored.targets {
                    by_target.insert((target.as_str(), id), ())?;
                }
                set_due(txn, id, stored.expires_at.0)?;
                Ok(Inserted::Created)
            })
            .await?;
        if inserted == Inserted::Created {
            self.announce(question);
        }
        Ok(inserted)
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<Question>> {
        let id = id.clone();
        self.read(move |txn| {
            let table = txn.open_table(QUESTIONS)?;
            let json = table.get(id.as_str())?;
            json.map(|json| decode(json.value())).transpose()
        })
        .await
    }

    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
        settle_after: Duration,
    ) -> Result<Option<(ClaimOutcome, Question)>> {
        let id = snapshot.id.clone();
        let claim = claim.clone();
        let result = self
            .write(move |txn| {
                let mut questions = txn.open_table(QUESTIONS)?;
                let stored = questions.get(id.as_str())?.map(|json| decode(json.value()));
                let Some(mut question) = stored.transpose()? else {
                    return Ok(None);
                };
                let outcome = question.apply(&claim);
                if outcome != ClaimOutcome::AlreadyResolved {
                    questions.insert(id.as_str(), encode(&question).as_str())?;
                    append_audit_in(txn, &AuditEntry::resolved(&question))?;
                    set_due(txn, id.as_str(), Millis::now().after(settle_after).0)?;
                }
                Ok(Some((outcome, question)))
            })
            .await?;
        if let Some((ClaimOutcome::Won | ClaimOutcome::Expired, question)) = &result {
            self.announce(question);
        }
        Ok(result)
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        let filter = filter.clone();
        self.read(move |txn| {
            let questions = txn.open_table(QUESTIONS)?;
            let pending = filter.status.unwrap_or(Status::Pending) == Status::Pending;
            let candidates: Option<Vec<String>> = match (&filter.target, &filter.session_id) {
                (Some(target), _) if pending => {
                    Some(ids_under(&txn.open_table(BY_TARGET)?, target.as_str())?)
                }
                (_, Some(session)) => Some(ids_under(&txn.open_table(BY_SESSION)?, session)?),
                (None, None) if pending => {
                    let mut ids = Vec::new();
                    for entry in txn.open_table(DUE_AT)?.iter()? {
                        ids.push(entry?.0.value().to_owned());
                    }
                    Some(ids)
                }
                _ => None,
            };
            let mut found = Vec::new();
            match candidates {
                Some(ids) => {
                    for id in ids {
                        if let Some(json) = questions.get(id.as_str())? {
                            found.push(decode(json.value())?);
                        }
                    }
                }
                None => {
                    for entry in questions.iter()? {
                        found.push(decode(entry?.1.value())?);
                    }
                }
            }
            found.retain(|q| filter.accepts(q));
            found.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
            found.truncate(filter.effective_limit());
            Ok(found)
        })
        .await
    }

    async fn count_pending(&self) -> Result<usize> {
        Ok(self
            .list(&ListFilter {
                limit: usize::MAX,
                ..ListFilter::pending()
            })
            .await?
            .len())
    }
}

#[async_trait]
impl Deliveries for EmbeddedStore {
    async fn record_shown(&self, id: &QuestionId, shown: &Shown) -> Result<()> {
        let (id, shown) = (id.clone(), shown.clone());
        self.write(move |txn| {
            txn.open_table(SHOWN)?.insert(
                (id.as_str(), shown.target.as_str()),
                shown.reference.as_str(),
            )?;
            Ok(())
        })
        .await
    }

    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>> {
        let id = id.clone();
        self.read(move |txn| {
            let table = txn.open_table(SHOWN)?;
            let mut shown = Vec::new();
            for entry in table.range((id.as_str(), "")..(id.as_str(), "\u{10FFFF}"))? {
                let (key, reference) = entry?;
                shown.push(Shown {
                    target: Target::new(key.value().1),
                    reference: reference.value().to_owned(),
                });
            }
            Ok(shown)
        })
        .await
    }
}

#[async_trait]
impl Outbox for EmbeddedStore {
    async fn mark_effect(&self, id: &QuestionId, effect: &str) -> Result<bool> {
        let (id, effect) = (id.clone(), effect.to_owned());
        self.write(move |txn| {
            let first = txn
                .open_table(EFFECTS)?
                .insert((id.as_str(), effect.as_str()), ())?
                .is_none();
            Ok(first)
        })
        .await
    }

    async fn effects_done(&self, id: &QuestionId) -> Result<Vec<String>> {
        let id = id.clone();
        self.read(move |txn| ids_under(&txn.open_table(EFFECTS)?, id.as_str()))
            .await
    }

    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>> {
        // The sweeper asks four times a second: a read transaction first, so that an idle store
        // does not commit (and fsync) for nothing.
        let db = std::sync::Arc::clone(&self.db);
        let anything_due = tokio::task::spawn_blocking(move || -> Result<bool> {
            Ok(db
                .begin_read()?
                .open_table(DUE)?
                .range((0, "")..=(now.0, ID_END))?
                .next()
                .is_some())
        })
        .await
        .map_err(|e| Error::unavailable("store task", e))??;
        if !anything_due {
            return Ok(Vec::new());
        }
        self.write(move |txn| {
            let mut due_ids = Vec::new();
            {
                let due = txn.open_table(DUE)?;
                for entry in due.range((0, "")..=(now.0, ID_END))?.take(limit) {
                    due_ids.push(entry?.0.value().1.to_owned());
                }
            }
            let until = now.after(lease).0;
            for id in &due_ids {
                set_due(txn, id, until)?;
            }
            due_ids
                .iter()
                .map(|id| QuestionId::parse(id).map_err(|e| Error::corrupt("the open index", e)))
                .collect()
        })
        .await
    }

    async fn open_ids(&self) -> Result<Vec<QuestionId>> {
        self.read(|txn| {
            let table = txn.open_table(DUE_AT)?;
            let mut ids = Vec::new();
            for entry in table.iter()? {
                let id = QuestionId::parse(entry?.0.value())
                    .map_err(|e| Error::corrupt("the open index", e))?;
                ids.push(id);
            }
            Ok(ids)
        })
        .await
    }

    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<()> {
        let id = id.clone();
        self.write(move |txn| set_due(txn, id.as_str(), at.0)).await
    }

    async fn settle(&self, id: &QuestionId, question: Option<&Question>) -> Result<()> {
        let id = id.clone();
        let targets = question.map(|q| q.targets.clone()).unwrap_or_default();
        self.write(move |txn| {
            let mut due_at = txn.open_table(DUE_AT)?;
            if let Some(old) = due_at.remove(id.as_str())? {
                txn.open_table(DUE)?.remove((old.value(), id.as_str()))?;
            }
            let mut by_target = txn.open_table(BY_TARGET)?;
            for target in &targets {
                by_target.remove((target.as_str(), id.as_str()))?;
            }
            Ok(())
        })
        .await
    }
}
