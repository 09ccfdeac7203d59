//! Serving HTTP with limits that hold whatever clients do.
//!
//! `axum::serve` keeps every connection as long as the client likes: 5,000 idle connections
//! stayed open for good, and one client that sent half a request header kept the process alive
//! long after SIGTERM. This loop serves the same router with
//! - a **header timeout** that also closes idle keep-alive connections (hyper starts it when it
//!   waits for a request's first byte), so idle sockets do not pile up;
//! - a **connection cap**: past it a connection gets a JSON 503 at once and is closed, with a
//!   warning in the log, instead of queueing where `/healthz` would time out;
//! - **bounded shutdown**: on shutdown no connection is accepted, connections finish what they
//!   are doing for [`ServeOptions::grace`], and whatever is left (a stalled header, an event
//!   stream) is dropped.

use askbridge_core::error::Chain;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

/// Limits of [`serve_with`].
#[derive(Clone, Copy, Debug)]
pub struct ServeOptions {
    /// Connections served at once (`ASKBRIDGE_MAX_CONNECTIONS`).
    pub max_connections: usize,
    /// How long a client may take to send a request's header, and how long a connection may
    /// stay idle between requests.
    pub header_timeout: Duration,
    /// How long requests in flight may go on after shutdown begins.
    pub grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_connections: 4096,
            header_timeout: Duration::from_secs(10),
            grace: Duration::from_secs(5),
        }
    }
}

/// What a connection past the cap is told before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
retry-after: 1\r\nconnection: close\r\ncontent-length: 62\r\n\r\n\
{\"error\":\"too many connections; try again in a moment please\"}";

/// Serves `router` on `listener` until `shutdown` completes, within `options`' limits.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(options.max_connections));
    let (closing, closed) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut last_warning: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        // Reap finished connections so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
        let (mut stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors, most likely: wait rather than spin.
                tracing::warn!(error = %Chain(&error), "cannot accept a connection (lower ASKBRIDGE_MAX_CONNECTIONS or raise `ulimit -n`)");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            if last_warning.is_none_or(|at| at.elapsed() > Duration::from_secs(10)) {
                last_warning = Some(Instant::now());
                tracing::warn!(%peer, max = options.max_connections, "connection cap reached; refusing connections with 503 (ASKBRIDGE_MAX_CONNECTIONS)");
            }
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(BUSY)).await;
            });
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let mut closed = closed.clone();
        let header_timeout = options.header_timeout;
        connections.spawn(async move {
            let _permit = permit;
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%peer, error = %Chain(&error), "connection ended with an error");
                    }
                }
                _ = async { closed.wait_for(|closing| *closing).await.map(|_| ()) } => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    drop(listener);
    let _ = closing.send(true);
    let open = connections.len();
    if open > 0 {
        tracing::info!(
            open,
            grace_s = options.grace.as_secs_f64(),
            "letting open connections finish"
        );
    }
    let drained = tokio::time::timeout(options.grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = connections.len(),
            "connections still open after the grace period; closing them"
        );
        connections.shutdown().await;
    }
    Ok(())
}
