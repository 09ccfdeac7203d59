//! The audit trail in the embedded store, by (time, sequence).

use super::EmbeddedStore;
use super::tables::AUDIT;
use crate::store::{AuditLog, Error, Result};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use async_trait::async_trait;
use redb::{ReadableTable, WriteTransaction};

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
