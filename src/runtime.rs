//! Wiring configuration into a running service: opening the store, serving HTTP with graceful
//! shutdown, waiting for SIGTERM or Ctrl-C.

use crate::Error;
use crate::config::StoreChoice;
use crate::store::embedded::EmbeddedStore;
use crate::store::memory::MemoryStore;
use crate::store::redis::{RedisOptions, RedisStore};
use crate::store::{Store, StoreOptions};
use askbridge_core::error::Chain;
use axum::Router;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Opens the chosen store.
pub async fn open_store(
    choice: &StoreChoice,
    options: StoreOptions,
) -> Result<Arc<dyn Store>, Error> {
    Ok(match choice {
        StoreChoice::Redis {
            url,
            prefix,
            cluster,
            replica_wait,
            events_gather,
        } => Arc::new(
            RedisStore::connect(RedisOptions {
                url: url.expose().to_owned(),
                cluster: *cluster,
                replica_wait: *replica_wait,
                events_gather: *events_gather,
                prefix: prefix.clone(),
                store: options,
            })
            .await?,
        ),
        StoreChoice::Embedded { dir } => Arc::new(EmbeddedStore::open(dir, options).await?),
        StoreChoice::Memory => Arc::new(MemoryStore::new(options)),
    })
}

/// Serves `router` on `listener` until `shutdown` completes, then lets requests in flight finish
/// for a bounded time (see [`crate::server`]).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: crate::server::ServeOptions,
) -> std::io::Result<()> {
    crate::server::serve_with(listener, router, shutdown, options).await
}

/// Completes on Ctrl-C or SIGTERM.
pub async fn termination() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %Chain(&error), "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(error = %Chain(&error), "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => tracing::info!("Ctrl-C received; shutting down"),
        _ = term => tracing::info!("SIGTERM received; shutting down"),
    }
}
