//! Runs, rules, the audit trail and delivery dedupe, in the embedded store.

use super::EmbeddedStore;
use super::tables::{
    AUDIT, ID_END, QUESTIONS, RULES, RUN_LEASE_AT, RUN_LEASES, RUNS, SEEN, decode, decode_rule,
    decode_run, insert_question, put_run, run_in,
};
use crate::store::{
    AuditLog, Dedupe, Error, Event, EventKind, Inserted, Parked, Result, Rules, Runs, Saved,
};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Acquire, Run, RunState};
use askbridge_core::{Millis, Question, QuestionId, Rule, RuleId, RunId};
use async_trait::async_trait;
use redb::{ReadableTable, WriteTransaction};
use std::time::Duration;

/// Appends an audit record inside `txn` (a claim writes its record with the resolution).
pub(super) fn append_audit_in(txn: &WriteTransaction, entry: &AuditEntry) -> Result<()> {
    let json = serde_json::to_string(entry).expect("an audit record serialises");
    let mut audit = txn.open_table(AUDIT)?;
    // The next free sequence number at this instant.
    let sequence = audit
        .range((entry.at.0, 0)..=(entry.at.0, u64::MAX))?
        .next_back()
        .transpose()?
        .map_or(0, |(key, _)| key.value().1 + 1);
    audit.insert((entry.at.0, sequence), json.as_str())?;
    Ok(())
}

/// Whether `owner` holds the stored run.
fn holds(txn: &WriteTransaction, run: &Run, owner: &str) -> Result<bool> {
    Ok(run_in(txn, run.id.as_str())?.is_some_and(|s| s.owner.as_deref() == Some(owner)))
}

/// Writes `run` if `owner` holds it (see [`Runs::save_run`]).
fn save_run(txn: &WriteTransaction, run: &Run, owner: &str) -> Result<Saved> {
    if !holds(txn, run, owner)? {
        return Ok(Saved::Lost);
    }
    put_run(txn, run)?;
    let waited = run
        .waiting_on
        .as_ref()
        .filter(|_| run.state == RunState::Waiting);
    let Some(waited) = waited else {
        return Ok(Saved::Written);
    };
    let question = txn
        .open_table(QUESTIONS)?
        .get(waited.as_str())?
        .map(|json| decode(json.value()));
    Ok(match question.transpose()? {
        Some(question) if !question.is_pending() => Saved::WaitsOnResolved,
        _ => Saved::Written,
    })
}

#[async_trait]
impl Runs for EmbeddedStore {
    async fn insert_run(&self, run: &Run) -> Result<Inserted> {
        let run = run.clone();
        self.write(move |txn| {
            if txn.open_table(RUNS)?.get(run.id.as_str())?.is_some() {
                return Ok(Inserted::Taken);
            }
            put_run(txn, &run)?;
            Ok(Inserted::Created)
        })
        .await
    }

    async fn get_run(&self, id: &RunId) -> Result<Option<Run>> {
        let id = id.clone();
        self.read(move |txn| {
            let table = txn.open_table(RUNS)?;
            let json = table.get(id.as_str())?;
            json.map(|json| decode_run(json.value())).transpose()
        })
        .await
    }

    async fn acquire_run(
        &self,
        id: &RunId,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>> {
        let (id, owner) = (id.clone(), owner.to_owned());
        let question: Option<QuestionId> = match why {
            Acquire::Answer(question) => Some(question.clone()),
            Acquire::Recovery => None,
        };
        self.write(move |txn| {
            let Some(mut run) = run_in(txn, id.as_str())? else {
                return Ok(None);
            };
            let why = match &question {
                Some(question) => Acquire::Answer(question),
                None => Acquire::Recovery,
            };
            if !run.acquire(why, &owner, now, lease_until) {
                return Ok(None);
            }
            put_run(txn, &run)?;
            Ok(Some(run))
        })
        .await
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<Saved> {
        let event = Event::of_run(run);
        let (run, owner) = (run.clone(), owner.to_owned());
        let saved = self.write(move |txn| save_run(txn, &run, &owner)).await?;
        if let (Saved::Written | Saved::WaitsOnResolved, Some(event)) = (saved, event) {
            let _ = self.events.send(event);
        }
        Ok(saved)
    }

    async fn park_run(&self, run: &Run, owner: &str, question: &Question) -> Result<Parked> {
        let (saved, owner, stored) = (run.clone(), owner.to_owned(), question.clone());
        let parked = self
            .write(move |txn| {
                if !holds(txn, &saved, &owner)? {
                    return Ok(Parked::Saved(Saved::Lost));
                }
                if insert_question(txn, &stored)? == Inserted::Taken {
                    return Ok(Parked::QuestionTaken);
                }
                Ok(Parked::Saved(save_run(txn, &saved, &owner)?))
            })
            .await?;
        if let Parked::Saved(Saved::Written | Saved::WaitsOnResolved) = parked {
            for event in Event::of_parked(run, question) {
                let _ = self.events.send(event);
            }
        }
        Ok(parked)
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<RunId>> {
        self.read(move |txn| {
            let table = txn.open_table(RUN_LEASES)?;
            let mut ids = Vec::new();
            for entry in table.range((0, "")..=(now.0, ID_END))?.take(limit) {
                let text = entry?.0.value().1.to_owned();
                let id = RunId::parse(&text)
                    .ok_or_else(|| Error::corrupt("the run lease index", text))?;
                ids.push(id);
            }
            Ok(ids)
        })
        .await
    }

    async fn abandon_run(&self, id: &RunId, _why: &str) -> Result<()> {
        // The record itself does not read, so it cannot be rewritten: it leaves the lease index
        // and stays for inspection until purged.
        let id = id.clone();
        self.write(move |txn| {
            if let Some(until) = txn.open_table(RUN_LEASE_AT)?.remove(id.as_str())? {
                txn.open_table(RUN_LEASES)?
                    .remove((until.value(), id.as_str()))?;
            }
            Ok(())
        })
        .await
    }
}

#[async_trait]
impl Rules for EmbeddedStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        let (rule, stored) = (rule.clone(), rule.clone());
        self.write(move |txn| {
            let json = serde_json::to_string(&stored).expect("a rule serialises");
            txn.open_table(RULES)?
                .insert(stored.id.as_str(), json.as_str())?;
            Ok(())
        })
        .await?;
        let _ = self.events.send(Event::Rule {
            kind: EventKind::RuleCreated,
            rule,
        });
        Ok(())
    }

    async fn rules(&self) -> Result<Vec<Rule>> {
        self.read(|txn| {
            let table = txn.open_table(RULES)?;
            let mut rules = Vec::new();
            for entry in table.iter()? {
                rules.push(decode_rule(entry?.1.value())?);
            }
            Ok(rules)
        })
        .await
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        let id = id.clone();
        let removed = self
            .write(move |txn| {
                let mut rules = txn.open_table(RULES)?;
                let removed = rules.remove(id.as_str())?;
                removed.map(|json| decode_rule(json.value())).transpose()
            })
            .await?;
        if let Some(rule) = &removed {
            let _ = self.events.send(Event::Rule {
                kind: EventKind::RuleRevoked,
                rule: rule.clone(),
            });
        }
        Ok(removed)
    }
}

#[async_trait]
impl AuditLog for EmbeddedStore {
    async fn append_audit(&self, entry: &AuditEntry) -> Result<()> {
        let entry = entry.clone();
        self.write(move |txn| append_audit_in(txn, &entry)).await
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
        let filter = filter.clone();
        self.read(move |txn| {
            let table = txn.open_table(AUDIT)?;
            let since = filter.since.map_or(0, |m| m.0);
            let mut found = Vec::new();
            let decode = |json: &str| -> Result<AuditEntry> {
                serde_json::from_str(json).map_err(|e| Error::corrupt("an audit record", e))
            };
            if filter.newest_first {
                // Newest first from the cursor's instant down: the records a page needs.
                let until = filter.before.map_or(u64::MAX, |c| c.at.0);
                for entry in table.range((since, 0)..=(until, u64::MAX))?.rev() {
                    let record = decode(entry?.1.value())?;
                    if filter.accepts(&record) {
                        found.push(record);
                        if found.len() == filter.wanted() {
                            break;
                        }
                    }
                }
                return Ok(filter.page(found));
            }
            for entry in table.range((since, 0)..)? {
                let record = decode(entry?.1.value())?;
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
}
