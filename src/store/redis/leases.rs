//! Leader leases in Redis: a key per lease, held and given up by scripts that check the holder.

use super::RedisStore;
use super::scripts::{HOLD_LEASE, RELEASE_LEASE};
use crate::store::{Leases, Result};
use async_trait::async_trait;
use std::time::Duration;

#[async_trait]
impl Leases for RedisStore {
    async fn hold_lease(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool> {
        let mut invocation = HOLD_LEASE.prepare_invoke();
        invocation
            .key(self.keys.lease(name))
            .arg(owner)
            .arg(ttl.as_millis() as u64);
        let held: i64 = self.invoke("hold lease", &invocation).await?;
        Ok(held == 1)
    }

    async fn release_lease(&self, name: &str, owner: &str) -> Result<()> {
        let mut invocation = RELEASE_LEASE.prepare_invoke();
        invocation.key(self.keys.lease(name)).arg(owner);
        let _: i64 = self.invoke("release lease", &invocation).await?;
        Ok(())
    }
}
