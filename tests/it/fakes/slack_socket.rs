//! A fake Slack Socket Mode server on 127.0.0.1, for askbridge's Socket Mode client.
//!
//! It behaves as Slack does where it matters: a connection is greeted with `hello`; envelopes go
//! to the open connections in turn; each must be acknowledged (`{"envelope_id": ...}`) within
//! 3 s, and an acknowledgement after that is recorded as a failure; an envelope not acknowledged
//! in 3 s (its connection died, say) is sent again with `retry_attempt` one higher, to another
//! connection when there is one. `disconnect` asks a connection to go (Slack refreshing it) and
//! closes it a second later. While "down", connections are cut before the WebSocket handshake.
//! The Web API's `apps.connections.open` (in `slack.rs`) hands out this server's URL.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// Slack's limit for an acknowledgement.
pub const ACK_WITHIN: Duration = Duration::from_secs(3);
/// How many times an unacknowledged envelope is sent again.
const RETRIES: u32 = 3;

/// One envelope and what became of it.
#[derive(Clone, Debug)]
pub struct Envelope {
    pub id: String,
    pub kind: String,
    pub payload: Value,
    /// The connections it was sent to, in order (retries included).
    pub sent_to: Vec<usize>,
    /// The connection that first acknowledged it, and how long after its last sending.
    pub acked: Option<(usize, Duration)>,
    /// Every acknowledgement, in order.
    pub acks: Vec<(usize, Duration)>,
    last_sent: Instant,
}

#[derive(Default)]
struct Inner {
    up: bool,
    next_connection: usize,
    /// Open connections: what to send on each.
    open: BTreeMap<usize, mpsc::UnboundedSender<Message>>,
    /// Connections ever greeted.
    greeted: usize,
    envelopes: BTreeMap<String, Envelope>,
    next_envelope: u64,
    turn: usize,
    /// Acknowledgements that broke the rules (late, unknown, twice).
    failures: Vec<String>,
}

/// The fake Socket Mode server.
pub struct FakeSocket {
    /// `ws://127.0.0.1:<port>/link`, what `apps.connections.open` hands out.
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl FakeSocket {
    pub fn start() -> FakeSocket {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("ws://{}/link", listener.local_addr().unwrap());
        let inner = Arc::new(Mutex::new(Inner {
            up: true,
            ..Inner::default()
        }));
        // A runtime of its own: the fake keeps serving while a test blocks.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let accepting = Arc::clone(&inner);
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((stream, _)) = listener.accept().await {
                if !accepting.lock().unwrap().up {
                    drop(stream);
                    continue;
                }
                tokio::spawn(connection(Arc::clone(&accepting), stream));
            }
        });
        runtime.spawn(redeliver_late(Arc::clone(&inner)));
        FakeSocket {
            url,
            inner,
            runtime: Some(runtime),
        }
    }

    /// The open connections' numbers.
    pub fn open(&self) -> Vec<usize> {
        self.inner.lock().unwrap().open.keys().copied().collect()
    }

    /// How many connections were ever greeted.
    pub fn greeted(&self) -> usize {
        self.inner.lock().unwrap().greeted
    }

    /// While down, every connection is cut before its handshake, and open ones are closed.
    pub fn set_up(&self, up: bool) {
        let mut inner = self.inner.lock().unwrap();
        inner.up = up;
        if !up {
            for (_, connection) in std::mem::take(&mut inner.open) {
                let _ = connection.send(Message::Close(None));
            }
        }
    }

    /// Sends an envelope to the next open connection in turn; returns its id.
    pub fn send(&self, kind: &str, payload: Value) -> String {
        let mut inner = self.inner.lock().unwrap();
        let open: Vec<usize> = inner.open.keys().copied().collect();
        assert!(!open.is_empty(), "no open Socket Mode connection");
        inner.turn += 1;
        let to = open[inner.turn % open.len()];
        new_envelope(&mut inner, kind, payload, to)
    }

    /// Sends an envelope to connection `to`; returns its id.
    pub fn send_to(&self, to: usize, kind: &str, payload: Value) -> String {
        new_envelope(&mut self.inner.lock().unwrap(), kind, payload, to)
    }

    /// Sends envelope `id` again, as Slack retries, to connection `to`.
    pub fn resend_to(&self, id: &str, to: usize) {
        let mut inner = self.inner.lock().unwrap();
        deliver(&mut inner, id, to);
    }

    /// Asks connection `to` to go, and closes it a second later.
    pub fn disconnect(&self, to: usize) {
        let inner = self.inner.lock().unwrap();
        let connection = inner.open.get(&to).expect("an open connection").clone();
        let _ = connection.send(Message::text(
            json!({"type": "disconnect", "reason": "refresh_requested",
                   "debug_info": {"host": "fake"}})
            .to_string(),
        ));
        self.runtime.as_ref().unwrap().spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let _ = connection.send(Message::Close(None));
        });
    }

    pub fn envelope(&self, id: &str) -> Envelope {
        self.inner.lock().unwrap().envelopes[id].clone()
    }

    /// The acknowledgements that broke Slack's rules.
    pub fn failures(&self) -> Vec<String> {
        self.inner.lock().unwrap().failures.clone()
    }
}

impl Drop for FakeSocket {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn new_envelope(inner: &mut Inner, kind: &str, payload: Value, to: usize) -> String {
    inner.next_envelope += 1;
    let id = format!("env-{:04}-fake", inner.next_envelope);
    inner.envelopes.insert(
        id.clone(),
        Envelope {
            id: id.clone(),
            kind: kind.to_owned(),
            payload,
            sent_to: Vec::new(),
            acked: None,
            acks: Vec::new(),
            last_sent: Instant::now(),
        },
    );
    deliver(inner, &id, to);
    id
}

/// Sends envelope `id` (again) on connection `to`, if it is open.
fn deliver(inner: &mut Inner, id: &str, to: usize) {
    let envelope = inner.envelopes.get_mut(id).expect("a known envelope");
    let retry_attempt = envelope.sent_to.len();
    envelope.sent_to.push(to);
    envelope.last_sent = Instant::now();
    let frame = json!({
        "envelope_id": envelope.id, "type": envelope.kind, "payload": envelope.payload,
        "accepts_response_payload": envelope.kind != "events_api",
        "retry_attempt": retry_attempt, "retry_reason": if retry_attempt > 0 { "timeout" } else { "" },
    });
    if let Some(connection) = inner.open.get(&to) {
        let _ = connection.send(Message::text(frame.to_string()));
    }
}

/// Every 100 ms: an envelope unacknowledged for 3 s is sent again, to another open connection
/// when there is one.
async fn redeliver_late(inner: Arc<Mutex<Inner>>) {
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut inner = inner.lock().unwrap();
        let late: Vec<(String, usize)> = inner
            .envelopes
            .values()
            .filter(|e| e.acked.is_none() && e.last_sent.elapsed() > ACK_WITHIN)
            .filter(|e| e.sent_to.len() <= RETRIES as usize)
            .map(|e| (e.id.clone(), *e.sent_to.last().unwrap()))
            .collect();
        for (id, last) in late {
            let open: Vec<usize> = inner.open.keys().copied().collect();
            let to = open
                .iter()
                .copied()
                .find(|c| *c != last)
                .or(open.first().copied());
            match to {
                Some(to) => deliver(&mut inner, &id, to),
                // Nobody to send it to: try again once someone connects.
                None => inner.envelopes.get_mut(&id).unwrap().last_sent = Instant::now(),
            }
        }
    }
}

async fn connection(inner: Arc<Mutex<Inner>>, stream: tokio::net::TcpStream) {
    let Ok(mut socket) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let (sender, mut outgoing) = mpsc::unbounded_channel();
    let number = {
        let mut inner = inner.lock().unwrap();
        inner.next_connection += 1;
        inner.greeted += 1;
        let number = inner.next_connection;
        inner.open.insert(number, sender);
        number
    };
    let hello = json!({"type": "hello", "num_connections": 1,
                       "connection_info": {"app_id": "A0FAKE"},
                       "debug_info": {"host": "fake", "approximate_connection_time": 18060}});
    if socket.send(Message::text(hello.to_string())).await.is_ok() {
        loop {
            tokio::select! {
                out = outgoing.recv() => match out {
                    Some(Message::Close(_)) | None => {
                        let _ = socket.close(None).await;
                        break;
                    }
                    Some(message) => {
                        if socket.send(message).await.is_err() {
                            break;
                        }
                    }
                },
                read = socket.next() => match read {
                    Some(Ok(Message::Text(text))) => acknowledge(&inner, number, &text),
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                },
            }
        }
    }
    inner.lock().unwrap().open.remove(&number);
}

fn acknowledge(inner: &Mutex<Inner>, connection: usize, text: &str) {
    let mut inner = inner.lock().unwrap();
    let ack: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let Some(id) = ack["envelope_id"].as_str() else {
        inner
            .failures
            .push(format!("not an acknowledgement: {text}"));
        return;
    };
    let failure = match inner.envelopes.get_mut(id) {
        None => Some(format!("acknowledged an unknown envelope {id}")),
        Some(envelope) => {
            let after = envelope.last_sent.elapsed();
            if envelope.acked.is_none() {
                envelope.acked = Some((connection, after));
            }
            envelope.acks.push((connection, after));
            (after > ACK_WITHIN).then(|| format!("{id} acknowledged after {after:?}"))
        }
    };
    inner.failures.extend(failure);
}
