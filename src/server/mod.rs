//! Serving HTTP with limits that hold whatever clients do.
//!
//! `axum::serve` keeps every connection as long as the client likes: 5,000 idle connections
//! stayed open for good, and one client that sent half a request header kept the process alive
//! long after SIGTERM. This loop serves the same router with
//! - a **header timeout** that also closes idle keep-alive connections (hyper starts it when it
//!   waits for a request's first byte), so idle sockets do not pile up;
//! - a **connection cap**: past it a connection gets a JSON 503 at once and is closed, with a
//!   warning in the log, instead of queueing where `/healthz` would time out;
//! - an **event stream backlog**: an event stream whose client leaves more than
//!   [`ServeOptions::event_backlog`] untaken is cut (see `io.rs`);
//! - **bounded shutdown**: on shutdown no connection is accepted, connections finish what they
//!   are doing for [`ServeOptions::grace`], and whatever is left (a stalled header, an event
//!   stream) is dropped.

mod conn;
mod io;
mod refusal;
mod service;

use askbridge_core::error::Chain;
use axum::Router;
use conn::Registry;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
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
    /// How long a client may take to send a request's body (`ASKBRIDGE_BODY_TIMEOUT_S`).
    pub body_timeout: Duration,
    /// How long a client may leave the server's bytes untaken (`ASKBRIDGE_WRITE_TIMEOUT_S`).
    pub write_timeout: Duration,
    /// How long a connection must have kept the server waiting before, at the cap, a new one
    /// takes its place (`ASKBRIDGE_SHED_AFTER_MS`).
    pub shed_after: Duration,
    /// The most bytes of an event stream its client may leave untaken before it is cut
    /// (`ASKBRIDGE_EVENT_BACKLOG_KB`).
    pub event_backlog: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_connections: 4096,
            header_timeout: Duration::from_secs(10),
            grace: Duration::from_secs(5),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            shed_after: Duration::from_secs(1),
            event_backlog: 1 << 20,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes, within `options`' limits.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(options.max_connections));
    let registry = Arc::new(Registry::default());
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
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors, most likely: wait rather than spin.
                tracing::warn!(error = %Chain(&error), "cannot accept a connection (lower ASKBRIDGE_MAX_CONNECTIONS or raise `ulimit -n`)");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let served = Served {
            router: router.clone(),
            registry: registry.clone(),
            closed: closed.clone(),
            options,
        };
        if let Ok(permit) = permits.clone().try_acquire_owned() {
            connections.spawn(served.serve(stream, peer, permit));
        } else if registry.shed(options.shed_after) {
            // The shed connection's place comes free as soon as its task ends (another newcomer
            // may take it first: this one then waits for the next, or is refused).
            let permits = permits.clone();
            connections.spawn(async move {
                match tokio::time::timeout(Duration::from_secs(5), permits.acquire_owned()).await {
                    Ok(Ok(permit)) => served.serve(stream, peer, permit).await,
                    _ => refuse(stream).await,
                }
            });
        } else {
            if last_warning.is_none_or(|at| at.elapsed() > Duration::from_secs(10)) {
                last_warning = Some(Instant::now());
                tracing::warn!(%peer, max = options.max_connections, "connection cap reached; refusing connections with 503 (ASKBRIDGE_MAX_CONNECTIONS)");
            }
            tokio::spawn(refuse(stream));
        }
    }
    drop(listener);
    let _ = closing.send(true);
    drain(connections, options.grace).await;
    Ok(())
}

/// Tells a connection past the cap so, and closes it.
async fn refuse(mut stream: TcpStream) {
    let busy = refusal::busy();
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(&busy)).await;
}

/// What serving one connection needs.
struct Served {
    router: Router,
    registry: Arc<Registry>,
    closed: watch::Receiver<bool>,
    options: ServeOptions,
}

impl Served {
    async fn serve(self, stream: TcpStream, peer: SocketAddr, permit: OwnedSemaphorePermit) {
        let _permit = permit;
        let Served {
            router,
            registry,
            mut closed,
            options,
        } = self;
        let registered = registry.add();
        let conn = registered.conn.clone();
        let inner = TowerToHyperService::new(router);
        let service = {
            let conn = conn.clone();
            hyper::service::service_fn(move |request| {
                let in_flight = conn.begin();
                let request = service::request(&conn, request, &options);
                let call = hyper::service::Service::call(&inner, request);
                async move {
                    Ok::<_, std::convert::Infallible>(service::response(in_flight, call.await?))
                }
            })
        };
        let io = io::Io::new(stream, conn.clone(), &options);
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(options.header_timeout);
        let connection = builder.serve_connection(TokioIo::new(io), service);
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%peer, error = %Chain(&error), "connection ended with an error");
                }
            }
            () = conn.shed() => {
                tracing::debug!(%peer, "connection shed to make room for a new one");
            }
            _ = async { closed.wait_for(|closing| *closing).await.map(|_| ()) } => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        }
    }
}

/// Lets open connections finish for `grace`, then closes what is left.
async fn drain(mut connections: JoinSet<()>, grace: Duration) {
    let open = connections.len();
    if open > 0 {
        tracing::info!(
            open,
            grace_s = grace.as_secs_f64(),
            "letting open connections finish"
        );
    }
    let drained = tokio::time::timeout(grace, async {
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
}
