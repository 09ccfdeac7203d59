//! Leader leases in memory: one process, so its own (see `local_leases.rs`).

use super::MemoryStore;
use crate::store::{Leases, Result};
use async_trait::async_trait;
use std::time::Duration;

#[async_trait]
impl Leases for MemoryStore {
    async fn hold_lease(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool> {
        Ok(self.leases.hold(name, owner, ttl))
    }

    async fn release_lease(&self, name: &str, owner: &str) -> Result<()> {
        self.leases.release(name, owner);
        Ok(())
    }
}
