//! The embedded store's tables, the codecs of its records, and the index helpers every role uses.

use crate::store::rule_index::RuleKey;
use crate::store::{Cursor, Error, Inserted, Result, Shown, Work};
use askbridge_core::run::Run;
use askbridge_core::{Question, Rule, Status, Target};
use redb::{ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};
use std::ops::Range;

pub(super) const QUESTIONS: TableDefinition<&str, &str> = TableDefinition::new("questions");
/// Forms being filled in chat: (question id, identity) -> the draft's JSON.
pub(super) const DRAFTS: TableDefinition<(&str, &str), &str> = TableDefinition::new("drafts");
pub(super) const SHOWN: TableDefinition<(&str, &str), &str> = TableDefinition::new("shown");
pub(super) const EFFECTS: TableDefinition<(&str, &str), ()> = TableDefinition::new("effects");
pub(super) const DUE: TableDefinition<(u64, &str), ()> = TableDefinition::new("due");
pub(super) const DUE_AT: TableDefinition<&str, u64> = TableDefinition::new("due_at");
/// Every question by (session, id), kept by files of layouts before 5 and read by nothing since
/// a session's listings have their own indexes (`SESSION_PENDING`, `SESSION_DONE`): deleted on
/// open, so no insert pays for it.
const BY_SESSION_BEFORE: TableDefinition<(&str, &str), ()> = TableDefinition::new("by_session");
pub(super) const BY_TARGET: TableDefinition<(&str, &str), ()> = TableDefinition::new("by_target");
pub(super) const SEEN: TableDefinition<&str, u64> = TableDefinition::new("seen");
/// Deliveries taken in hand, and when their lease lapses (`Dedupe::take_in_hand`).
pub(super) const IN_HAND: TableDefinition<&str, u64> = TableDefinition::new("in_hand");
pub(super) const RUNS: TableDefinition<&str, &str> = TableDefinition::new("runs");
pub(super) const RUN_LEASES: TableDefinition<(u64, &str), ()> = TableDefinition::new("run_leases");
pub(super) const RUN_LEASE_AT: TableDefinition<&str, u64> = TableDefinition::new("run_lease_at");
pub(super) const RULES: TableDefinition<&str, &str> = TableDefinition::new("rules");
/// Rules by where an approval looks for them, (digest, scope, id) (`rule_index.rs`).
pub(super) const RULES_BY_KEY: TableDefinition<(&str, &str, &str), ()> =
    TableDefinition::new("rules_by_key");
/// Pending questions by (asked at, id): listing the newest pending ones reads only a page.
pub(super) const CREATED: TableDefinition<(u64, &str), ()> = TableDefinition::new("created");
/// Pending questions by (session, asked at, id): a session's pending page reads only that page,
/// not every question the session had.
pub(super) const SESSION_PENDING: TableDefinition<(&str, u64, &str), ()> =
    TableDefinition::new("session_pending");
/// Resolved questions by (status, resolved at, id): counts and pages by outcome and time.
pub(super) const DONE: TableDefinition<(&str, u64, &str), ()> = TableDefinition::new("done");
/// Resolved questions by (session, status, resolved at, id): a session's history page, and its
/// questions of one outcome, read only that page, not every question the session had.
pub(super) const SESSION_DONE: TableDefinition<(&str, &str, u64, &str), ()> =
    TableDefinition::new("session_done");
/// Leased sessions by (lease end, session), and each one's lease end (`askbridge exec`).
pub(super) const SESSION_LEASES: TableDefinition<(u64, &str), ()> =
    TableDefinition::new("session_leases");
pub(super) const SESSION_LEASE_AT: TableDefinition<&str, u64> =
    TableDefinition::new("session_lease_at");
/// Closed sessions, and until when that is remembered.
pub(super) const SESSIONS_CLOSED: TableDefinition<&str, u64> =
    TableDefinition::new("sessions_closed");
/// Idempotency keys: until when each is kept, and what it made.
pub(super) const IDEMPOTENCY: TableDefinition<&str, (u64, &str)> =
    TableDefinition::new("idempotency");
/// Facts about the file itself (`layout`: the version of the tables above).
pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// The current table layout; older files get their indexes rebuilt once on open.
pub(super) const LAYOUT: u64 = 5;
/// Audit records by (time, sequence): ordered, and unique within a time.
pub(super) const AUDIT: TableDefinition<(u64, u64), &str> = TableDefinition::new("audit");

/// Ids sort below this string, so `(key, "")..(key, ID_END)` spans every id under `key`.
pub(super) const ID_END: &str = "~";

/// Every `(id, name)` key of question `id` in a table keyed so (`SHOWN` by target, `EFFECTS` by
/// effect): names may hold any character, so the range ends at the highest one, not `ID_END`.
pub(super) fn keys_of(id: &str) -> Range<(&str, &str)> {
    (id, "")..(id, "\u{10FFFF}")
}

/// Creates every table, so that readers never meet a missing one.
pub(super) fn create_all(txn: &WriteTransaction) -> Result<()> {
    txn.open_table(QUESTIONS)?;
    txn.open_table(DRAFTS)?;
    txn.open_table(SHOWN)?;
    txn.open_table(EFFECTS)?;
    txn.open_table(DUE)?;
    txn.open_table(DUE_AT)?;
    txn.delete_table(BY_SESSION_BEFORE)?;
    txn.open_table(BY_TARGET)?;
    txn.open_table(SEEN)?;
    txn.open_table(IN_HAND)?;
    txn.open_table(RUNS)?;
    txn.open_table(RUN_LEASES)?;
    txn.open_table(RUN_LEASE_AT)?;
    txn.open_table(RULES)?;
    txn.open_table(RULES_BY_KEY)?;
    txn.open_table(AUDIT)?;
    txn.open_table(CREATED)?;
    txn.open_table(DONE)?;
    txn.open_table(SESSION_PENDING)?;
    txn.open_table(SESSION_DONE)?;
    txn.open_table(SESSION_LEASES)?;
    txn.open_table(SESSION_LEASE_AT)?;
    txn.open_table(SESSIONS_CLOSED)?;
    txn.open_table(IDEMPOTENCY)?;
    let meta = txn.open_table(META)?;
    let layout = meta.get("layout")?.map(|v| v.value());
    if layout != Some(LAYOUT) {
        drop(meta);
        rebuild_indexes(txn)?;
        txn.open_table(META)?.insert("layout", LAYOUT)?;
    }
    Ok(())
}

/// Fills the pending and resolved indexes from the questions themselves, and the rules' index
/// from the rules (a file written before they existed).
fn rebuild_indexes(txn: &WriteTransaction) -> Result<()> {
    let questions = txn.open_table(QUESTIONS)?;
    let mut created = txn.open_table(CREATED)?;
    let mut done = txn.open_table(DONE)?;
    let mut session_pending = txn.open_table(SESSION_PENDING)?;
    let mut session_done = txn.open_table(SESSION_DONE)?;
    for entry in questions.iter()? {
        let (id, json) = entry?;
        let question = decode(json.value())?;
        let indexes = StateIndexes {
            created: &mut created,
            done: &mut done,
            session_pending: &mut session_pending,
            session_done: &mut session_done,
        };
        indexes.enter(&question, id.value())?;
    }
    let rules = txn.open_table(RULES)?;
    let mut by_key = txn.open_table(RULES_BY_KEY)?;
    for entry in rules.iter()? {
        let rule = decode_rule(entry?.1.value())?;
        let key = RuleKey::of(&rule);
        by_key.insert(
            (key.digest.as_str(), key.scope.as_str(), rule.id.as_str()),
            (),
        )?;
    }
    Ok(())
}

/// The indexes a question's state decides.
pub(super) struct StateIndexes<'a, 'txn> {
    pub(super) created: &'a mut redb::Table<'txn, (u64, &'static str), ()>,
    pub(super) done: &'a mut redb::Table<'txn, (&'static str, u64, &'static str), ()>,
    pub(super) session_pending: &'a mut redb::Table<'txn, (&'static str, u64, &'static str), ()>,
    pub(super) session_done:
        &'a mut redb::Table<'txn, (&'static str, &'static str, u64, &'static str), ()>,
}

impl<'txn> StateIndexes<'_, 'txn> {
    /// Enters `question` in the pending indexes or the resolved ones, as its state says.
    pub(super) fn enter(self, question: &Question, id: &str) -> Result<()> {
        let asked = question.created_at.0;
        let session = question.session_id.as_str();
        match &question.resolution {
            None => {
                self.created.insert((asked, id), ())?;
                self.session_pending.insert((session, asked, id), ())?;
            }
            Some(resolution) => {
                let (status, at) = (question.status.as_str(), resolution.at.0);
                self.created.remove((asked, id))?;
                self.session_pending.remove((session, asked, id))?;
                self.done.insert((status, at, id), ())?;
                self.session_done.insert((session, status, at, id), ())?;
            }
        }
        Ok(())
    }
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

/// Makes `id` due at `at` in the open index, unless it is due sooner already.
pub(super) fn set_due_by(txn: &WriteTransaction, id: &str, at: u64) -> Result<()> {
    let due = txn.open_table(DUE_AT)?.get(id)?.map(|due| due.value());
    if due.is_none_or(|due| due > at) {
        set_due(txn, id, at)?;
    }
    Ok(())
}

/// Whether the question stored under `id` is no longer pending (false when there is none).
pub(super) fn resolved_in(txn: &WriteTransaction, id: &str) -> Result<bool> {
    let questions = txn.open_table(QUESTIONS)?;
    let json = questions.get(id)?;
    Ok(json
        .map(|json| decode(json.value()))
        .transpose()?
        .is_some_and(|q| !q.is_pending()))
}

/// The run stored under `id`, read inside a write.
pub(super) fn run_in(txn: &WriteTransaction, id: &str) -> Result<Option<Run>> {
    let runs = txn.open_table(RUNS)?;
    let json = runs.get(id)?;
    json.map(|json| decode_run(json.value())).transpose()
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

/// Stores `question` with its index entries unless its id is taken (see [`Questions::insert`]).
pub(super) fn insert_question(txn: &WriteTransaction, question: &Question) -> Result<Inserted> {
    let id = question.id.as_str();
    let mut questions = txn.open_table(QUESTIONS)?;
    if questions.get(id)?.is_some() {
        return Ok(Inserted::Taken);
    }
    questions.insert(id, encode(question).as_str())?;
    txn.open_table(CREATED)?
        .insert((question.created_at.0, id), ())?;
    txn.open_table(SESSION_PENDING)?.insert(
        (question.session_id.as_str(), question.created_at.0, id),
        (),
    )?;
    let mut by_target = txn.open_table(BY_TARGET)?;
    for target in &question.all_targets() {
        by_target.insert((target.as_str(), id), ())?;
    }
    set_due(txn, id, question.next_due(&[]).0)?;
    Ok(Inserted::Created)
}

/// Takes a question out of the open index and its targets' sets: nothing is left to do for it.
pub(super) fn remove_open(txn: &WriteTransaction, id: &str, targets: &[Target]) -> Result<()> {
    let mut due_at = txn.open_table(DUE_AT)?;
    if let Some(old) = due_at.remove(id)? {
        txn.open_table(DUE)?.remove((old.value(), id))?;
    }
    let mut by_target = txn.open_table(BY_TARGET)?;
    for target in targets {
        by_target.remove((target.as_str(), id))?;
    }
    Ok(())
}

/// Where a question was shown and which effects are done, read inside a transaction.
pub(super) fn work_in(
    shown: &impl ReadableTable<(&'static str, &'static str), &'static str>,
    effects: &impl ReadableTable<(&'static str, &'static str), ()>,
    id: &str,
) -> Result<Work> {
    let mut work = Work::default();
    for entry in shown.range(keys_of(id))? {
        let (key, reference) = entry?;
        work.shown.push(Shown {
            target: Target::new(key.value().1),
            reference: reference.value().to_owned(),
        });
    }
    for entry in effects.range(keys_of(id))? {
        work.done.push(entry?.0.value().1.to_owned());
    }
    Ok(work)
}

/// The ids of session `session`'s newest `limit` questions resolved with `status`, after
/// `after` (resolution time and id), from their index.
pub(super) fn session_done(
    txn: &ReadTransaction,
    session: &str,
    status: Status,
    after: Option<&Cursor>,
    limit: usize,
) -> Result<Vec<String>> {
    let (until, last) = bound(after);
    let status = status.as_str();
    let range = (session, status, 0, "")..(session, status, until, last);
    let mut ids = Vec::new();
    for entry in txn
        .open_table(SESSION_DONE)?
        .range(range)?
        .rev()
        .take(limit)
    {
        ids.push(entry?.0.value().3.to_owned());
    }
    Ok(ids)
}

/// Where a newest-first range ends, exclusive: before the cursor's entry, or past every entry.
pub(super) fn bound(after: Option<&Cursor>) -> (u64, &str) {
    after.map_or((u64::MAX, ID_END), |c| (c.at.0, c.id.as_str()))
}
