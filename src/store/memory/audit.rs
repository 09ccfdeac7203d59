//! The audit trail in memory.

use super::MemoryStore;
use crate::store::{AuditLog, Result};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use async_trait::async_trait;

#[async_trait]
impl AuditLog for MemoryStore {
    async fn append_audit(&self, entry: &AuditEntry) -> Result<()> {
        self.state().audit.push(entry.clone());
        Ok(())
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
        let state = self.state();
        let found: Vec<AuditEntry> = state
            .audit
            .iter()
            .filter(|e| filter.accepts(e))
            .cloned()
            .collect();
        Ok(filter.page(found))
    }
}
