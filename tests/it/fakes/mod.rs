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

/// When each call that shows a message reached a fake, for the latency rounds (`rounds.rs`): the
/// moment its handler started, kept with the call's body, and a wake-up for whoever waits on one.
/// The rounds used to poll the fakes' messages every 200 µs from a thread of their own; that timed
/// the poller's wake-up (up to a period late) rather than the call, and the poller's thread took
/// a share of the two cores from the processes it measured.
#[derive(Default)]
pub struct Arrivals {
    /// The newest [`Arrivals::KEPT`] calls: (body as JSON text, when it arrived).
    calls: Mutex<std::collections::VecDeque<(String, std::time::Instant)>>,
    arrived: tokio::sync::Notify,
}

impl Arrivals {
    /// Enough for a round's question and the confirmations and edits landing beside it.
    const KEPT: usize = 64;

    /// Records a showing call whose handler started `at`.
    pub fn record(&self, body: &serde_json::Value, at: std::time::Instant) {
        let mut calls = self.calls.lock().unwrap();
        if calls.len() == Self::KEPT {
            calls.pop_front();
        }
        calls.push_back((body.to_string(), at));
        drop(calls);
        self.arrived.notify_waiters();
    }

    /// When the newest showing call holding `needle` arrived, waiting for it (30 s at most).
    pub async fn arrival_of(&self, needle: &str) -> std::time::Instant {
        let give_up = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            // Registered before looking, so that a call recorded in between still wakes us.
            arrived.as_mut().enable();
            let found = self
                .calls
                .lock()
                .unwrap()
                .iter()
                .rev()
                .find_map(|(body, at)| body.contains(needle).then_some(*at));
            if let Some(at) = found {
                return at;
            }
            tokio::time::timeout_at(give_up, arrived)
                .await
                .unwrap_or_else(|_| panic!("no call holding {needle:?} reached the fake"));
        }
    }
}

#[cfg(test)]
mod tests {
    // Imports inside the test: hot_path includes this folder by path, and there the test is not
    // compiled while `cfg(test)` may be set.
    #[tokio::test]
    async fn an_arrival_is_found_by_its_text_at_the_instant_recorded_even_when_awaited_first() {
        use super::Arrivals;
        use serde_json::json;
        use std::sync::Arc;
        use std::time::{Duration, Instant};

        let arrivals = Arc::new(Arrivals::default());
        let first = Instant::now();
        arrivals.record(&json!({"text": "Which library? (q1)"}), first);
        assert_eq!(arrivals.arrival_of("q1").await, first);

        let waiter = tokio::spawn({
            let arrivals = arrivals.clone();
            async move { arrivals.arrival_of("q2").await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "found before it arrived");
        arrivals.record(&json!({"text": "something else"}), Instant::now());
        let second = Instant::now();
        arrivals.record(&json!({"blocks": [{"value": "/answer q2 1"}]}), second);
        assert_eq!(waiter.await.unwrap(), second);
        assert_eq!(arrivals.arrival_of("q1").await, first);
    }
}
