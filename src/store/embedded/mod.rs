//! The embedded store: one redb file in `ASKBRIDGE_DATA_DIR`.
//!
//! redb gives serialisable write transactions committed with fsync, so the claim-once rule is a
//! read-apply-write inside one transaction, and a pending question survives a crash the moment
//! `insert` returns. One process owns the file (redb locks it); several processes need Redis.
//!
//! # Group commit
//!
//! An fsync costs milliseconds, so one transaction per write would cap the store at a few hundred
//! writes a second. Writes go to one writer thread instead, which takes every write waiting at
//! that moment into one transaction and commits them with one fsync; each caller gets its answer
//! once that commit is durable. The rule that makes sharing a transaction safe: a write decides
//! whether it fails before it writes anything (a storage error fails the whole batch, and every
//! caller in it hears so). Reads run on tokio's blocking pool in read transactions.
//!
//! `tables.rs` holds the tables, codecs and index helpers; the roles have a file each, named as in
//! the other stores (`questions.rs`, `outbox.rs`, `votes.rs`, `runs.rs`, `rules.rs`, `audit.rs`,
//! `leases.rs`, `listings.rs`).

mod audit;
mod kept;
mod leases;
mod listings;
mod outbox;
mod questions;
mod rules;
mod runs;
mod tables;
mod votes;

use super::local_leases::LocalLeases;
use super::{Admin, EVENT_BUFFER, Error, Event, Events, Result, StoreOptions};
use askbridge_core::Millis;
use askbridge_core::error::Chain;
use askbridge_core::run::Run;
use async_trait::async_trait;
use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable, WriteTransaction};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tables::{
    AUDIT, DRAFTS, DUE_AT, EFFECTS, QUESTIONS, RUNS, SEEN, SESSION_DONE, SHOWN, decode, decode_run,
    keys_of,
};
use tokio::sync::broadcast;

/// The database file inside the data directory.
pub const FILE_NAME: &str = "askbridge.redb";

/// Most writes one transaction takes: bounds how long the first caller of a batch waits.
const BATCH: usize = 256;

/// A write as the writer thread runs it: it writes into the shared transaction and returns what
/// to tell its caller once the commit is known.
type Job = Box<dyn FnOnce(&WriteTransaction) -> Box<dyn FnOnce(Result<()>) + Send> + Send>;

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct EmbeddedStore {
    db: Arc<Database>,
    writer: std::sync::mpsc::Sender<Job>,
    path: PathBuf,
    events: broadcast::Sender<Event>,
    options: StoreOptions,
    /// One process uses the file at a time, so its leases are that process's.
    leases: Arc<LocalLeases>,
}

/// The writer thread: batches waiting writes into one transaction each. Ends when the last clone
/// of the store is dropped.
fn write_batches(db: Arc<Database>, jobs: std::sync::mpsc::Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let txn = match db.begin_write() {
            Ok(txn) => txn,
            Err(error) => {
                // The jobs never ran; dropping them tells each caller the write did not happen.
                tracing::warn!(error = %Chain(&error), writes = batch.len(), "cannot begin a write transaction");
                continue;
            }
        };
        let finishers: Vec<_> = batch.into_iter().map(|job| job(&txn)).collect();
        let committed = txn.commit().map_err(Error::from);
        for finish in finishers {
            let shared = match &committed {
                Ok(()) => Ok(()),
                Err(error) => Err(Error::new(super::ErrorKind::Unavailable, error.to_string())),
            };
            finish(shared);
        }
    }
}

impl EmbeddedStore {
    /// Opens (or creates) the database in `dir`, creating the directory if needed.
    pub async fn open(dir: &Path, options: StoreOptions) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::unavailable(format!("cannot create data directory {}", dir.display()), e)
        })?;
        let path = dir.join(FILE_NAME);
        let open_path = path.clone();
        let db = tokio::task::spawn_blocking(move || -> Result<Database> {
            let db = Database::create(&open_path).map_err(|e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => Error::new(
                    super::ErrorKind::Unavailable,
                    format!(
                        "{} is in use by another askbridge process; stop it, or use Redis to run several",
                        open_path.display()
                    ),
                ),
                other => other.into(),
            })?;
            let txn = db.begin_write()?;
            tables::create_all(&txn)?;
            txn.commit()?;
            Ok(db)
        })
        .await
        .map_err(|e| Error::unavailable("opening the database", e))??;
        let db = Arc::new(db);
        let (writer, jobs) = std::sync::mpsc::channel();
        let writer_db = Arc::clone(&db);
        std::thread::Builder::new()
            .name("askbridge-redb-writer".into())
            .spawn(move || write_batches(writer_db, jobs))
            .map_err(|e| Error::unavailable("starting the database writer", e))?;
        Ok(EmbeddedStore {
            db,
            writer,
            path,
            events: broadcast::channel(EVENT_BUFFER).0,
            options,
            leases: Arc::default(),
        })
    }

    /// Runs `work` in a read transaction on the blocking pool.
    async fn read<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&ReadTransaction) -> Result<T> + Send + 'static,
    {
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || {
            let txn = db.begin_read()?;
            work(&txn)
        })
        .await
        .map_err(|e| Error::unavailable("store task", e))?
    }

    /// Runs `work` in the writer's next transaction and returns its result once that transaction
    /// is committed (with fsync). `work` must fail, if it fails, before it writes anything: the
    /// transaction is shared (see the module documentation).
    async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteTransaction) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |txn| {
            let result = work(txn);
            Box::new(move |committed: Result<()>| {
                let _ = reply.send(committed.and(result));
            })
        });
        self.writer.send(job).map_err(|_| {
            Error::new(super::ErrorKind::Unavailable, "the database writer stopped")
        })?;
        answer.await.map_err(|_| {
            Error::new(
                super::ErrorKind::Unavailable,
                "a write transaction could not begin",
            )
        })?
    }

    fn announce(&self, question: &askbridge_core::Question) {
        let _ = self.events.send(Event::of(question));
    }
}

impl Events for EmbeddedStore {
    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}

#[async_trait]
impl Admin for EmbeddedStore {
    fn describe(&self) -> String {
        format!("embedded ({})", self.path.display())
    }

    fn is_durable(&self) -> bool {
        true
    }

    async fn ping(&self) -> Result<()> {
        self.read(|txn| {
            txn.open_table(QUESTIONS)?;
            Ok(())
        })
        .await
    }

    async fn topology(&self) -> Result<crate::store::Topology> {
        Ok(crate::store::Topology::single("embedded"))
    }

    async fn purge(&self, now: Millis) -> Result<usize> {
        let retention = self.options.retention;
        let audit_cutoff = now
            .0
            .saturating_sub(self.options.audit_retention.as_millis() as u64);
        self.write(move |txn| {
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
            let mut session_done = txn.open_table(SESSION_DONE)?;
            for question in &old {
                let id = question.id.as_str();
                let session = question.session_id.as_str();
                questions.remove(id)?;
                if let Some(resolution) = &question.resolution {
                    let status = question.status.as_str();
                    session_done.remove((session, status, resolution.at.0, id))?;
                }
                shown.retain_in(keys_of(id), |_, _| false)?;
                effects.retain_in(keys_of(id), |_, _| false)?;
            }
            // Forms' drafts go with their question: a draft is only read while its form is
            // pending, and without this they stayed for good (Redis gives each a TTL). A draft
            // whose question is gone already (purged before drafts were) goes too.
            txn.open_table(DRAFTS)?
                .retain(|(id, _), _| !matches!(questions.get(id), Ok(None)))?;
            txn.open_table(SEEN)?.retain(|_, until| until > now.0)?;
            txn.open_table(tables::IN_HAND)?
                .retain(|_, until| until > now.0)?;
            txn.open_table(tables::SESSIONS_CLOSED)?
                .retain(|_, until| until > now.0)?;
            txn.open_table(tables::IDEMPOTENCY)?
                .retain(|_, (until, _)| until > now.0)?;
            txn.open_table(AUDIT)?
                .retain_in((0, 0)..(audit_cutoff, 0), |_, _| false)?;
            txn.open_table(RUNS)?.retain(|_, json| {
                decode_run(json).is_ok_and(|run: Run| {
                    !(run.state.is_final()
                        && run.reported
                        && run.updated_at.after(retention) <= now)
                })
            })?;
            Ok(old.len())
        })
        .await
    }
}
