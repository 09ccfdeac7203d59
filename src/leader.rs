//! Leader leases for the connections only one process may hold: Telegram allows one long poll
//! per bot (a second gets 409 Conflict), and one Discord gateway session per bot is what we want.
//! With several askbridge replicas, each tries to take the lease in the store; the holder runs the
//! connection and extends the lease every [`RENEW_EVERY`]; if it dies, the lease lapses after
//! [`LEASE_TTL`] and another replica takes it within [`RENEW_EVERY`] more — under 10 s in all.
//! Sending (showing questions, withdrawing them) works on every replica: it needs the token, not
//! the connection. Webhook and interactions-endpoint modes need no leader.

use crate::bridge::Bridge;
use askbridge_core::error::Chain;
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The lease of Telegram's long poll.
pub const TELEGRAM_POLL: &str = "telegram-poll";
/// The lease of Discord's gateway.
pub const DISCORD_GATEWAY: &str = "discord-gateway";
/// The lease of polling the email replies' mailbox.
pub const EMAIL_POLL: &str = "email-poll";
/// Every lease a process may hold, for `/metrics` (1 on the holder, 0 elsewhere).
pub const ALL: [&str; 3] = [TELEGRAM_POLL, DISCORD_GATEWAY, EMAIL_POLL];
/// How long a lease lasts unless extended.
pub const LEASE_TTL: Duration = Duration::from_secs(6);
/// How often the holder extends it, and how often the others try to take it.
pub const RENEW_EVERY: Duration = Duration::from_secs(2);

/// The leases this process holds, for `/healthz` and the logs.
#[derive(Debug, Default)]
pub struct LeaseBook(Mutex<BTreeSet<String>>);

impl LeaseBook {
    /// The names of the leases held now.
    pub fn held(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs `body` whenever this process holds lease `name`, until the bridge shuts down. `body`
/// gets a signal that turns true when it must stop (the lease was lost, or shutdown); it is
/// started again if the lease comes back. `book` records which leases are held (one book per
/// process, shared with the HTTP app's `/healthz`).
pub async fn while_leader<F, Fut>(
    bridge: Bridge,
    name: &'static str,
    book: Arc<LeaseBook>,
    mut body: F,
) where
    F: FnMut(watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = ()>,
{
    let owner = bridge.owner_id().to_owned();
    let mut shutdown = bridge.shutdown_signal();
    loop {
        if *shutdown.borrow() {
            return;
        }
        match bridge.store().hold_lease(name, &owner, LEASE_TTL).await {
            Ok(true) => {
                tracing::info!(lease = name, "this process holds the lease");
                book.lock().insert(name.to_owned());
                let (stop, stopped) = watch::channel(false);
                let renewer = tokio::spawn(renew(bridge.clone(), name, owner.clone(), stop));
                body(stopped).await;
                renewer.abort();
                book.lock().remove(name);
                if let Err(error) = bridge.store().release_lease(name, &owner).await {
                    tracing::warn!(lease = name, error = %Chain(&error), "cannot release the lease; it lapses");
                }
                tracing::info!(lease = name, "lease given up");
            }
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(lease = name, error = %Chain(&error), "cannot take the lease yet")
            }
        }
        tokio::select! {
            () = tokio::time::sleep(RENEW_EVERY) => {}
            _ = shutdown.wait_for(|stopped| *stopped) => return,
        }
    }
}

/// Extends the lease until it is lost (another took it after a stall) or cannot be extended
/// before it would lapse, or the bridge shuts down; then tells the body to stop.
async fn renew(bridge: Bridge, name: &'static str, owner: String, stop: watch::Sender<bool>) {
    let mut shutdown = bridge.shutdown_signal();
    let mut extended = Instant::now();
    loop {
        tokio::select! {
            () = tokio::time::sleep(RENEW_EVERY) => {}
            _ = shutdown.wait_for(|stopped| *stopped) => {
                let _ = stop.send(true);
                return;
            }
        }
        match bridge.store().hold_lease(name, &owner, LEASE_TTL).await {
            Ok(true) => extended = Instant::now(),
            Ok(false) => {
                tracing::warn!(
                    lease = name,
                    "another process took the lease; stopping here"
                );
                let _ = stop.send(true);
                return;
            }
            Err(error) if extended.elapsed() + RENEW_EVERY >= LEASE_TTL => {
                tracing::warn!(lease = name, error = %Chain(&error), "cannot extend the lease before it lapses; stopping here");
                let _ = stop.send(true);
                return;
            }
            Err(error) => {
                tracing::warn!(lease = name, error = %Chain(&error), "cannot extend the lease; retrying")
            }
        }
    }
}
