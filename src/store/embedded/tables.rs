//! The embedded store's tables, the codecs of its records, and the index helpers every role uses.

use crate::store::{Error, Result};
use askbridge_core::run::Run;
use askbridge_core::{Question, Rule};
use redb::{ReadableTable, TableDefinition, WriteTransaction};

pub(super) const QUESTIONS: TableDefinition<&str, &str> = TableDefinition::new("questions");
pub(super) const SHOWN: TableDefinition<(&str, &str), &str> = TableDefinition::new("shown");
pub(super) const EFFECTS: TableDefinition<(&str, &str), ()> = TableDefinition::new("effects");
pub(super) const DUE: TableDefinition<(u64, &str), ()> = TableDefinition::new("due");
pub(super) const DUE_AT: TableDefinition<&str, u64> = TableDefinition::new("due_at");
pub(super) const BY_SESSION: TableDefinition<(&str, &str), ()> = TableDefinition::new("by_session");
pub(super) const BY_TARGET: TableDefinition<(&str, &str), ()> = TableDefinition::new("by_target");
pub(super) const SEEN: TableDefinition<&str, u64> = TableDefinition::new("seen");
pub(super) const RUNS: TableDefinition<&str, &str> = TableDefinition::new("runs");
pub(super) const RUN_LEASES: TableDefinition<(u64, &str), ()> = TableDefinition::new("run_leases");
pub(super) const RUN_LEASE_AT: TableDefinition<&str, u64> = TableDefinition::new("run_lease_at");
pub(super) const RULES: TableDefinition<&str, &str> = TableDefinition::new("rules");
/// Audit records by (time, sequence): ordered, and unique within a time.
pub(super) const AUDIT: TableDefinition<(u64, u64), &str> = TableDefinition::new("audit");

/// Ids sort below this string, so `(key, "")..(key, ID_END)` spans every id under `key`.
pub(super) const ID_END: &str = "~";

/// Creates every table, so that readers never meet a missing one.
pub(super) fn create_all(txn: &WriteTransaction) -> Result<()> {
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
    Ok(())
}

/// redb's errors are failures to reach the file: unavailable, not corrupt records.
macro_rules! redb_errors {
    ($($kind:ty),*) => {$(
        impl From<$kind> for Error {
            fn from(error: $kind) -> Self {
                Error::unavailable("embedded database", redb::Error::from(error))
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

pub(super) fn decode(json: &str) -> Result<Question> {
    serde_json::from_str(json).map_err(|e| Error::corrupt("a question record", e))
}

pub(super) fn encode(question: &Question) -> String {
    serde_json::to_string(question).expect("a question always serialises")
}

pub(super) fn decode_run(json: &str) -> Result<Run> {
    serde_json::from_str(json).map_err(|e| Error::corrupt("a run record", e))
}

pub(super) fn decode_rule(json: &str) -> Result<Rule> {
    serde_json::from_str(json).map_err(|e| Error::corrupt("a rule", e))
}

/// Sets when `id` is next due in the open index.
pub(super) fn set_due(txn: &WriteTransaction, id: &str, at: u64) -> Result<()> {
    let mut due_at = txn.open_table(DUE_AT)?;
    let mut due = txn.open_table(DUE)?;
    if let Some(old) = due_at.insert(id, at)? {
        due.remove((old.value(), id))?;
    }
    due.insert((at, id), ())?;
    Ok(())
}

/// Writes a run and keeps the lease index in step with it: runs that need an executor are
/// indexed by lease end, others not at all.
pub(super) fn put_run(txn: &WriteTransaction, run: &Run) -> Result<()> {
    let json = serde_json::to_string(run).expect("a run always serialises");
    let id = run.id.as_str();
    txn.open_table(RUNS)?.insert(id, json.as_str())?;
    let mut lease_at = txn.open_table(RUN_LEASE_AT)?;
    let mut leases = txn.open_table(RUN_LEASES)?;
    if let Some(old) = lease_at.remove(id)? {
        leases.remove((old.value(), id))?;
    }
    if run.needs_executor() {
        let until = run.lease_until.map_or(0, |m| m.0);
        lease_at.insert(id, until)?;
        leases.insert((until, id), ())?;
    }
    Ok(())
}

/// The second parts of the keys `(key, _)` of a two-part table.
pub(super) fn ids_under(
    table: &impl ReadableTable<(&'static str, &'static str), ()>,
    key: &str,
) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for entry in table.range((key, "")..(key, ID_END))? {
        let (k, _) = entry?;
        ids.push(k.value().1.to_owned());
    }
    Ok(ids)
}
