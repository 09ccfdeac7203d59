//! The embedded store: one redb file in `ASKBRIDGE_DATA_DIR`.
//!
//! redb gives serialisable write transactions committed with fsync, so the claim-once rule is a
//! read-apply-write inside one transaction, and a pending question survives a crash the moment
//! `insert` returns. redb is synchronous: every call runs on tokio's blocking pool. One process owns
//! the file (redb locks it); several processes need Redis.

use super::{EVENT_BUFFER, Event, ListFilter, Shown, Store, StoreOptions};
use crate::Error;
use askbridge_core::Rule;
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Acquire, Run};
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId, Status};
use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// The database file inside the data directory.
pub const FILE_NAME: &str = "askbridge.redb";

const QUESTIONS: TableDefinition<&str, &str> = TableDefinition::new("questions");
const SHOWN: TableDefinition<(&str, &str), &str> = TableDefinition::new("shown");
const EFFECTS: TableDefinition<(&str, &str), ()> = TableDefinition::new("effects");
const DUE: TableDefinition<(u64, &str), ()> = TableDefinition::new("due");
const DUE_AT: TableDefinition<&str, u64> = TableDefinition::new("due_at");
const BY_SESSION: TableDefinition<(&str, &str), ()> = TableDefinition::new("by_session");
const BY_TARGET: TableDefinition<(&str, &str), ()> = TableDefinition::new("by_target");
const SEEN: TableDefinition<&str, u64> = TableDefinition::new("seen");
const RUNS: TableDefinition<&str, &str> = TableDefinition::new("runs");
const RUN_LEASES: TableDefinition<(u64, &str), ()> = TableDefinition::new("run_leases");
const RUN_LEASE_AT: TableDefinition<&str, u64> = TableDefinition::new("run_lease_at");
const RULES: TableDefinition<&str, &str> = TableDefinition::new("rules");
/// Audit records by (time, sequence): ordered, and unique within a time.
const AUDIT: TableDefinition<(u64, u64), &str> = TableDefinition::new("audit");

/// Ids sort below this string, so `(key, "")..(key, ID_END)` spans every id under `key`.
const ID_END: &str = "~";

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct EmbeddedStore {
    db: Arc<Database>,
    path: PathBuf,
    events: broadcast::Sender<Event>,
    options: StoreOptions,
}

impl From<redb::Error> for Error {
    fn from(error: redb::Error) -> Self {
        Error::Embedded(error.to_string())
    }
}

macro_rules! redb_errors {
    ($($kind:ty),*) => {$(
        impl From<$kind> for Error {
            fn from(error: $kind) -> Self {
                Error::Embedded(redb::Error::from(error).to_string())
            }
        }
    )*};
}
redb_errors!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

fn decode(json: &str) -> Result<Question, Error> {
    serde_json::from_str(json).map_err(|e| Error::Embedded(format!("corrupt question record: {e}")))
}

fn encode(question: &Question) -> String {
    serde_json::to_string(question).expect("a question always serialises")
}

impl EmbeddedStore {
    /// Opens (or creates) the database in `dir`, creating the directory if needed.
    pub async fn open(dir: &Path, options: StoreOptions) -> Result<Self, Error> {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::Embedded(format!(
                "cannot create data directory {}: {e}",
                dir.display()
            ))
        })?;
        let path = dir.join(FILE_NAME);
        let open_path = path.clone();
        let db = tokio::task::spawn_blocking(move || -> Result<Database, Error> {
            let db = Database::create(&open_path).map_err(|e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => Error::Embedded(format!(
                    "{} is in use by another askbridge process; stop it, or use Redis to run several",
                    open_path.display()
                )),
                other => other.into(),
            })?;
            let txn = db.begin_write()?;
            txn.open_table(QUESTIONS)?;
            txn.open_table(SHOWN)?;
            txn.open_table(EFFECTS)?;
            txn.open_table(DUE)?;
            txn.open_table(DUE_AT)?;
            txn.open_table(BY_SESSION)?;
            txn.open_table(BY_TARGET)?;
            txn.open_table(SEEN)?;
            txn.open_table(RUNS)?;
            txn.open_table(RUN_LEASES)?;
            txn.open_table(RUN_LEASE_AT)?;
            txn.open_table(RULES)?;
            txn.open_table(AUDIT)?;
            txn.commit()?;
            Ok(db)
        })
        .await
        .map_err(|e| Error::Embedded(e.to_string()))??;
        Ok(EmbeddedStore {
            db: Arc::new(db),
            path,
            events: broadcast::channel(EVENT_BUFFER).0,
            options,
        })
    }

    /// Runs `work` on the blocking pool with the database.
    async fn blocking<T, F>(&self, work: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Database) -> Result<T, Error> + Send + 'static,
    {
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || work(&db))
            .await
            .map_err(|e| Error::Embedded(format!("store task failed: {e}")))?
    }
}

fn set_due(txn: &redb::WriteTransaction, id: &str, at: u64) -> Result<(), Error> {
    let mut due_at = txn.open_table(DUE_AT)?;
    let mut due = txn.open_table(DUE)?;
    if let Some(old) = due_at.insert(id, at)? {
        due.remove((old.value(), id))?;
    }
    due.insert((at, id), ())?;
    Ok(())
}

fn decode_run(json: &str) -> Result<Run, Error> {
    serde_json::from_str(json).map_err(|e| Error::Embedded(format!("corrupt run record: {e}")))
}

/// Writes a run and keeps the lease index in step with it: runs that need an executor are
/// indexed by lease end, others not at all.
fn put_run(txn: &redb::WriteTransaction, run: &Run) -> Result<(), Error> {
    let json = serde_json::to_string(run).expect("a run always serialises");
    txn.open_table(RUNS)?
        .insert(run.id.as_str(), json.as_str())?;
    let mut lease_at = txn.open_table(RUN_LEASE_AT)?;
    let mut leases = txn.open_table(RUN_LEASES)?;
    if let Some(old) = lease_at.remove(run.id.as_str())? {
        leases.remove((old.value(), run.id.as_str()))?;
    }
    if run.needs_executor() {
        let until = run.lease_until.map_or(0, |m| m.0);
        lease_at.insert(run.id.as_str(), until)?;
        leases.insert((until, run.id.as_str()), ())?;
    }
    Ok(())
}

fn ids_under(
    table: &impl ReadableTable<(&'static str, &'static str), ()>,
    key: &str,
) -> Result<Vec<String>, Error> {
    let mut ids = Vec::new();
    for entry in table.range((key, "")..(key, ID_END))? {
        let (k, _) = entry?;
        ids.push(k.value().1.to_owned());
    }
    Ok(ids)
}

#[async_trait]
impl Store for EmbeddedStore {
    fn describe(&self) -> String {
        format!("embedded ({})", self.path.display())
    }

    fn is_durable(&self) -> bool {
        true
    }

    async fn ping(&self) -> Result<(), Error> {
        self.blocking(|db| {
            db.begin_read()?.open_table(QUESTIONS)?;
            Ok(())
        })
        .await
    }

    async fn insert(&self, question: &Question) -> Result<(), Error> {
        let question = question.clone();
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            let id = question.id.as_str();
            {
                let mut questions = txn.open_table(QUESTIONS)?;
                if questions.get(id)?.is_some() {
                    return Err(Error::IdTaken);
                }
                questions.insert(id, encode(&question).as_str())?;
                txn.open_table(BY_SESSION)?
                    .insert((question.session_id.as_str(), id), ())?;
                let mut by_target = txn.open_table(BY_TARGET)?;
                for target in &question.targets {
                    by_target.insert((target.as_str(), id), ())?;
                }
            }
            set_due(&txn, id, question.expires_at.0)?;
            txn.commit()?;
            Ok(())
        })
        .await
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<Question>, Error> {
        let id = id.clone();
        self.blocking(move |db| {
            let table = db.begin_read()?.open_table(QUESTIONS)?;
            let json = table.get(id.as_str())?;
            json.map(|json| decode(json.value())).transpose()
        })
        .await
    }

    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
    ) -> Result<Option<(ClaimOutcome, Question)>, Error> {
        let id = snapshot.id.clone();
        let claim = claim.clone();
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            let result = {
                let mut questions = txn.open_table(QUESTIONS)?;
                let stored = questions.get(id.as_str())?.map(|json| decode(json.value()));
                let Some(mut question) = stored.transpose()? else {
                    return Ok(None);
                };
                let outcome = question.apply(&claim);
                if outcome != ClaimOutcome::AlreadyResolved {
                    questions.insert(id.as_str(), encode(&question).as_str())?;
                }
                (outcome, question)
            };
            txn.commit()?;
            Ok(Some(result))
        })
        .await
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>, Error> {
        let filter = filter.clone();
        self.blocking(move |db| {
            let txn = db.begin_read()?;
            let questions = txn.open_table(QUESTIONS)?;
            let pending = filter.status.unwrap_or(Status::Pending) == Status::Pending;
            let candidates: Option<Vec<String>> = match (&filter.target, &filter.session_id) {
                (Some(target), _) if pending => {
                    Some(ids_under(&txn.open_table(BY_TARGET)?, target)?)
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

    async fn count_pending(&self) -> Result<usize, Error> {
        Ok(self
            .list(&ListFilter {
                limit: usize::MAX,
                ..ListFilter::pending()
            })
            .await?
            .len())
    }

    async fn record_shown(&self, id: &QuestionId, shown: &Shown) -> Result<(), Error> {
        let (id, shown) = (id.clone(), shown.clone());
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            txn.open_table(SHOWN)?.insert(
                (id.as_str(), shown.target.as_str()),
                shown.reference.as_str(),
            )?;
            txn.commit()?;
            Ok(())
        })
        .await
    }

    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>, Error> {
        let id = id.clone();
        self.blocking(move |db| {
            let table = db.begin_read()?.open_table(SHOWN)?;
            let mut shown = Vec::new();
            for entry in table.range((id.as_str(), "")..(id.as_str(), "\u{10FFFF}"))? {
                let (key, reference) = entry?;
                shown.push(Shown {
                    target: key.value().1.to_owned(),
                    reference: reference.value().to_owned(),
                });
            }
            Ok(shown)
        })
        .await
    }

    async fn mark_effect(&self, id: &QuestionId, effect: &str) -> Result<bool, Error> {
        let (id, effect) = (id.clone(), effect.to_owned());
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            let first = txn
                .open_table(EFFECTS)?
                .insert((id.as_str(), effect.as_str()), ())?
                .is_none();
            txn.commit()?;
            Ok(first)
        })
        .await
    }

    async fn effects_done(&self, id: &QuestionId) -> Result<Vec<String>, Error> {
        let id = id.clone();
        self.blocking(move |db| {
            let table = db.begin_read()?.open_table(EFFECTS)?;
            ids_under(&table, id.as_str())
        })
        .await
    }

    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>, Error> {
        self.blocking(move |db| {
            // The sweeper asks four times a second: a read transaction first, so that an idle
            // store does not commit (and fsync) for nothing.
            let anything_due = db
                .begin_read()?
                .open_table(DUE)?
                .range((0, "")..=(now.0, ID_END))?
                .next()
                .is_some();
            if !anything_due {
                return Ok(Vec::new());
            }
            let txn = db.begin_write()?;
            let mut due_ids = Vec::new();
            {
                let due = txn.open_table(DUE)?;
                for entry in due.range((0, "")..=(now.0, ID_END))?.take(limit) {
                    due_ids.push(entry?.0.value().1.to_owned());
                }
            }
            let until = now.after(lease).0;
            for id in &due_ids {
                set_due(&txn, id, until)?;
            }
            txn.commit()?;
            due_ids
                .iter()
                .map(|id| QuestionId::parse(id).map_err(Error::from))
                .collect()
        })
        .await
    }

    async fn open_ids(&self) -> Result<Vec<QuestionId>, Error> {
        self.blocking(|db| {
            let table = db.begin_read()?.open_table(DUE_AT)?;
            let mut ids = Vec::new();
            for entry in table.iter()? {
                ids.push(QuestionId::parse(entry?.0.value())?);
            }
            Ok(ids)
        })
        .await
    }

    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<(), Error> {
        let id = id.clone();
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            set_due(&txn, id.as_str(), at.0)?;
            txn.commit()?;

            Ok(())
        })
        .await
    }

    async fn settle(&self, id: &QuestionId, question: Option<&Question>) -> Result<(), Error> {
        let id = id.clone();
        let targets = question.map(|q| q.targets.clone()).unwrap_or_default();
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            {
                let mut due_at = txn.open_table(DUE_AT)?;
                if let Some(old) = due_at.remove(id.as_str())? {
                    txn.open_table(DUE)?.remove((old.value(), id.as_str()))?;
                }
                let mut by_target = txn.open_table(BY_TARGET)?;
                for target in &targets {
                    by_target.remove((target.as_str(), id.as_str()))?;
                }
            }
            txn.commit()?;
            Ok(())
        })
        .await
    }

    async fn first_sighting(&self, key: &str, ttl: Duration) -> Result<bool, Error> {
        let key = key.to_owned();
        self.blocking(move |db| {
            let now = Millis::now();
            let txn = db.begin_write()?;
            let first = {
                let mut seen = txn.open_table(SEEN)?;
                let live = seen
                    .get(key.as_str())?
                    .is_some_and(|until| until.value() > now.0);
                if !live {
                    seen.insert(key.as_str(), now.after(ttl).0)?;
                }
                !live
            };
            txn.commit()?;
            Ok(first)
        })
        .await
    }

    async fn purge(&self, now: Millis) -> Result<usize, Error> {
        let retention = self.options.retention;
        let audit_cutoff = now
            .0
            .saturating_sub(self.options.audit_retention.as_millis() as u64);
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            let removed;
            {
                let due_at = txn.open_table(DUE_AT)?;
                let mut questions = txn.open_table(QUESTIONS)?;
                let mut old = Vec::new();
                for entry in questions.iter()? {
                    let (id, json) = entry?;
                    let question = decode(json.value())?;
                    let expired_record = question
                        .resolution
                        .as_ref()
                        .is_some_and(|r| r.at.after(retention) <= now);
                    if expired_record && due_at.get(id.value())?.is_none() {
                        old.push(question);
                    }
                }
                let mut shown = txn.open_table(SHOWN)?;
                let mut effects = txn.open_table(EFFECTS)?;
                let mut by_session = txn.open_table(BY_SESSION)?;
                for question in &old {
                    let id = question.id.as_str();
                    questions.remove(id)?;
                    by_session.remove((question.session_id.as_str(), id))?;
                    shown.retain_in((id, "")..(id, "\u{10FFFF}"), |_, _| false)?;
                    effects.retain_in((id, "")..(id, "\u{10FFFF}"), |_, _| false)?;
                }
                removed = old.len();
                txn.open_table(SEEN)?.retain(|_, until| until > now.0)?;
                txn.open_table(AUDIT)?
                    .retain_in((0, 0)..(audit_cutoff, 0), |_, _| false)?;
                txn.open_table(RUNS)?.retain(|_, json| {
                    decode_run(json).is_ok_and(|run| {
                        !(run.state.is_final()
                            && run.reported
                            && run.updated_at.after(retention) <= now)
                    })
                })?;
            }
            txn.commit()?;
            Ok(removed)
        })
        .await
    }

    async fn insert_run(&self, run: &Run) -> Result<(), Error> {
        let run = run.clone();
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            if txn.open_table(RUNS)?.get(run.id.as_str())?.is_some() {
                return Err(Error::IdTaken);
            }
            put_run(&txn, &run)?;
            txn.commit()?;
            Ok(())
        })
        .await
    }

    async fn get_run(&self, id: &str) -> Result<Option<Run>, Error> {
        let id = id.to_owned();
        self.blocking(move |db| {
            let table = db.begin_read()?.open_table(RUNS)?;
            let json = table.get(id.as_str())?;
            json.map(|json| decode_run(json.value())).transpose()
        })
        .await
    }

    async fn acquire_run(
        &self,
        id: &str,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>, Error> {
        let (id, owner) = (id.to_owned(), owner.to_owned());
        let question = match why {
            Acquire::Answer(question) => Some(question.clone()),
            Acquire::Recovery => None,
        };
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            let stored = txn
                .open_table(RUNS)?
                .get(id.as_str())?
                .map(|json| decode_run(json.value()));
            let Some(mut run) = stored.transpose()? else {
                return Ok(None);
            };
            let why = match &question {
                Some(question) => Acquire::Answer(question),
                None => Acquire::Recovery,
            };
            if !run.acquire(why, &owner, now, lease_until) {
                return Ok(None);
            }
            put_run(&txn, &run)?;
            txn.commit()?;
            Ok(Some(run))
        })
        .await
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<bool, Error> {
        let (run, owner) = (run.clone(), owner.to_owned());
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            let stored = txn
                .open_table(RUNS)?
                .get(run.id.as_str())?
                .map(|json| decode_run(json.value()));
            let held = stored
                .transpose()?
                .is_some_and(|s| s.owner.as_deref() == Some(owner.as_str()));
            if !held {
                return Ok(false);
            }
            put_run(&txn, &run)?;
            txn.commit()?;
            Ok(true)
        })
        .await
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<String>, Error> {
        self.blocking(move |db| {
            let table = db.begin_read()?.open_table(RUN_LEASES)?;
            let mut ids = Vec::new();
            for entry in table.range((0, "")..=(now.0, ID_END))?.take(limit) {
                ids.push(entry?.0.value().1.to_owned());
            }
            Ok(ids)
        })
        .await
    }

    async fn put_rule(&self, rule: &Rule) -> Result<(), Error> {
        let rule = rule.clone();
        self.blocking(move |db| {
            let json = serde_json::to_string(&rule).expect("a rule serialises");
            let txn = db.begin_write()?;
            txn.open_table(RULES)?
                .insert(rule.id.as_str(), json.as_str())?;
            txn.commit()?;
            Ok(())
        })
        .await
    }

    async fn rules(&self) -> Result<Vec<Rule>, Error> {
        self.blocking(|db| {
            let table = db.begin_read()?.open_table(RULES)?;
            let mut rules = Vec::new();
            for entry in table.iter()? {
                let json = entry?.1;
                rules.push(
                    serde_json::from_str(json.value())
                        .map_err(|e| Error::Embedded(format!("corrupt rule: {e}")))?,
                );
            }
            Ok(rules)
        })
        .await
    }

    async fn delete_rule(&self, id: &str) -> Result<bool, Error> {
        let id = id.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_write()?;
            let existed = txn.open_table(RULES)?.remove(id.as_str())?.is_some();
            txn.commit()?;
            Ok(existed)
        })
        .await
    }

    async fn append_audit(&self, entry: &AuditEntry) -> Result<(), Error> {
        let entry = entry.clone();
        self.blocking(move |db| {
            let json = serde_json::to_string(&entry).expect("an audit record serialises");
            let txn = db.begin_write()?;
            {
                let mut audit = txn.open_table(AUDIT)?;
                // The next free sequence number at this instant.
                let sequence = audit
                    .range((entry.at.0, 0)..=(entry.at.0, u64::MAX))?
                    .next_back()
                    .transpose()?
                    .map_or(0, |(key, _)| key.value().1 + 1);
                audit.insert((entry.at.0, sequence), json.as_str())?;
            }
            txn.commit()?;
            Ok(())
        })
        .await
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>, Error> {
        let filter = filter.clone();
        self.blocking(move |db| {
            let table = db.begin_read()?.open_table(AUDIT)?;
            let since = filter.since.map_or(0, |m| m.0);
            let mut found = Vec::new();
            for entry in table.range((since, 0)..)? {
                let record: AuditEntry = serde_json::from_str(entry?.1.value())
                    .map_err(|e| Error::Embedded(format!("corrupt audit record: {e}")))?;
                if filter.accepts(&record) {
                    found.push(record);
                    if found.len() == filter.effective_limit() {
                        break;
                    }
                }
            }
            Ok(found)
        })
        .await
    }

    async fn publish(&self, event: &Event) -> Result<(), Error> {
        let _ = self.events.send(event.clone());
        Ok(())
    }

    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}
