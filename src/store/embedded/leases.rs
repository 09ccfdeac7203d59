//! Leader leases in the embedded store: one process owns the file, so its own (see
//! `local_leases.rs`).

use super::EmbeddedStore;
use crate::store::{Leases, Result};
use async_trait::async_trait;
use std::time::Duration;

#[async_trait]
impl Leases for EmbeddedStore {
    async fn hold_lease(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool> {
        Ok(self.leases.hold(name, owner, ttl))
    }

    async fn release_lease(&self, name: &str, owner: &str) -> Result<()> {
        self.leases.release(name, owner);
        Ok(())
    }
}
