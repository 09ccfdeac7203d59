//! Fake chat platforms on loopback, for the real client libraries.

pub mod discord;
pub mod rounds;
pub mod slack;
pub mod slack_socket;
pub mod telegram;

use axum::Router;
use std::sync::Mutex;

/// A fake's HTTP server, on a runtime of its own so that [`Server::stop`] really cuts every
/// connection (aborting the accept loop alone leaves keep-alive connections serving), the way an
/// outage would.
pub struct Server {
    pub base: String,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
}

impl Server {
    pub fn start(app: Router) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
        Server {
            base,
            runtime: Mutex::new(Some(runtime)),
        }
    }

    /// Stops answering: the listener and every open connection close.
    pub fn stop(&self) {
        if let Some(runtime) = self.runtime.lock().unwrap().take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
