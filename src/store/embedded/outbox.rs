//! Where questions were shown, the outbox (the open index: see `crate::store`) and delivery
//! dedupe, in the embedded store.

use super::EmbeddedStore;
use super::tables::{
    DUE, DUE_AT, EFFECTS, ID_END, IN_HAND, SEEN, SHOWN, keys_of, remove_open, resolved_in, set_due,
    set_due_by, work_in,
};
use crate::store::{Dedupe, Deliveries, Error, Outbox, Result, Shown, Sighting, Work};
use askbridge_core::{Millis, Question, QuestionId};
use async_trait::async_trait;
use redb::{ReadableDatabase as _, ReadableTable};
use std::time::Duration;

#[async_trait]
impl Deliveries for EmbeddedStore {
    async fn record_shown(&self, id: &QuestionId, shown: &Shown, due_at: Millis) -> Result<bool> {
        let (id, shown) = (id.clone(), shown.clone());
        self.write(move |txn| {
            txn.open_table(SHOWN)?.insert(
                (id.as_str(), shown.target.as_str()),
                shown.reference.as_str(),
            )?;
            let resolved = resolved_in(txn, id.as_str())?;
            if resolved {
                set_due_by(txn, id.as_str(), due_at.0)?;
            }
            Ok(resolved)
        })
        .await
    }

    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>> {
        Ok(self.work(id).await?.shown)
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

    async fn work(&self, id: &QuestionId) -> Result<Work> {
        let id = id.clone();
        self.read(move |txn| {
            work_in(
                &txn.open_table(SHOWN)?,
                &txn.open_table(EFFECTS)?,
                id.as_str(),
            )
        })
        .await
    }

    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>> {
        // The sweeper asks often: a read first, so that an idle store does not commit (and
        // fsync) for nothing.
        if self.next_due().await?.is_none_or(|at| at > now) {
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
            let ids = due_ids
                .iter()
                .map(|id| QuestionId::parse(id).map_err(|e| Error::corrupt("the open index", e)))
                .collect::<Result<Vec<_>>>()?;
            let until = now.after(lease).0;
            for id in &due_ids {
                set_due(txn, id, until)?;
            }
            Ok(ids)
        })
        .await
    }

    async fn next_due(&self) -> Result<Option<Millis>> {
        let db = std::sync::Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || -> Result<Option<Millis>> {
            let table = db.begin_read()?.open_table(DUE)?;
            let first = table.first()?;
            Ok(first.map(|(key, _)| Millis(key.value().0)))
        })
        .await
        .map_err(|e| Error::unavailable("store task", e))?
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

    async fn finish(
        &self,
        id: &QuestionId,
        question: Option<&Question>,
        done: &[String],
        retry_at: Option<Millis>,
        shown_seen: Option<usize>,
    ) -> Result<()> {
        let id = id.clone();
        let done = done.to_vec();
        let targets = question.map(Question::all_targets).unwrap_or_default();
        self.write(move |txn| {
            let mut effects = txn.open_table(EFFECTS)?;
            for effect in &done {
                effects.insert((id.as_str(), effect.as_str()), ())?;
            }
            if let Some(at) = retry_at {
                return set_due(txn, id.as_str(), at.0);
            }
            if let Some(seen) = shown_seen {
                let shown = txn.open_table(SHOWN)?.range(keys_of(id.as_str()))?.count();
                if shown > seen {
                    return Ok(());
                }
            }
            remove_open(txn, id.as_str(), &targets)
        })
        .await
    }
}

#[async_trait]
impl Dedupe for EmbeddedStore {
    async fn first_sighting(&self, key: &str, ttl: Duration) -> Result<bool> {
        let key = key.to_owned();
        self.write(move |txn| {
            let now = Millis::now();
            let mut seen = txn.open_table(SEEN)?;
            let live = seen
                .get(key.as_str())?
                .is_some_and(|until| until.value() > now.0);
            if !live {
                seen.insert(key.as_str(), now.after(ttl).0)?;
            }
            Ok(!live)
        })
        .await
    }

    async fn take_in_hand(&self, key: &str, lease: Duration) -> Result<Sighting> {
        let key = key.to_owned();
        self.write(move |txn| {
            let now = Millis::now();
            let live = |until: Option<redb::AccessGuard<'_, u64>>| {
                until.is_some_and(|until| until.value() > now.0)
            };
            if live(txn.open_table(SEEN)?.get(key.as_str())?) {
                return Ok(Sighting::Handled);
            }
            let mut in_hand = txn.open_table(IN_HAND)?;
            if live(in_hand.get(key.as_str())?) {
                return Ok(Sighting::InHand);
            }
            in_hand.insert(key.as_str(), now.after(lease).0)?;
            Ok(Sighting::First)
        })
        .await
    }

    async fn settle(&self, key: &str, ttl: Duration) -> Result<()> {
        let key = key.to_owned();
        self.write(move |txn| {
            txn.open_table(IN_HAND)?.remove(key.as_str())?;
            let until = Millis::now().after(ttl).0;
            txn.open_table(SEEN)?.insert(key.as_str(), until)?;
            Ok(())
        })
        .await
    }

    async fn forget(&self, key: &str) -> Result<()> {
        let key = key.to_owned();
        self.write(move |txn| {
            txn.open_table(SEEN)?.remove(key.as_str())?;
            txn.open_table(IN_HAND)?.remove(key.as_str())?;
            Ok(())
        })
        .await
    }
}
