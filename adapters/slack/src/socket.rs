//! Socket Mode: Slack's deliveries over a WebSocket askbridge opens, so no public URL is needed.
//!
//! `apps.connections.open`, called with the app-level token, gives a one-time `wss://` URL (never
//! logged: it is a credential for that connection). Slack says `hello`, then sends envelopes
//! (`events_api`, `interactive`, `slash_commands`) whose payloads are exactly what HTTP mode is
//! posted; each goes to `inbound/` and is acknowledged (`{"envelope_id": ...}`) once its claim
//! is recorded, within Slack's 3 s. An envelope never acknowledged is sent again, perhaps on
//! another connection; the retry carries the same payload, so the store's record of delivery ids
//! makes it count once, whichever replica gets it. Slack spreads envelopes over all of an app's
//! connections, so every replica connects: no leader, no takeover gap.
//!
//! Written on tokio-tungstenite (the version serenity already links, so the binary gains no second
//! WebSocket and TLS stack) rather than slack-morphism's listener: that one hands callbacks typed
//! models HTTP mode does not read (so the two transports could not share one dispatch), hides the
//! envelope and its `retry_attempt`, and runs on tungstenite 0.30, a second WebSocket stack.
//!
//! A `disconnect` message (Slack refreshing the connection) opens a new connection at once; the
//! old one stays long enough to send the acknowledgements still owed on it. A socket that closes or
//! falls silent is replaced, with backoff while Slack cannot be reached.

use crate::inbound::{EventCallback, Hook, Interaction};
use crate::{Error, Slack, sending};
use askbridge_core::{Inbox, Secret};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The wait before the first reconnection attempt after a failure; it doubles up to [`LAST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(30);
/// How often askbridge pings; a socket that has said nothing for [`SILENCE`] is replaced.
const PING_EVERY: Duration = Duration::from_secs(10);
const SILENCE: Duration = Duration::from_secs(35);
/// How long a connection Slack asked to leave is kept to send the acknowledgements owed on it.
const DRAIN: Duration = Duration::from_secs(5);

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// One message from Slack over the socket.
#[derive(Debug, Deserialize)]
struct Frame {
    #[serde(rename = "type")]
    kind: String,
    envelope_id: Option<String>,
    payload: Option<Value>,
    #[serde(default)]
    retry_attempt: u32,
    reason: Option<String>,
}

/// How a connection ended.
enum Ended {
    Shutdown,
    /// Slack asked for a new connection; the old one is handed back to be drained.
    Disconnect(Box<Socket>, mpsc::UnboundedReceiver<String>),
    /// The socket closed, failed or fell silent; `greeted` when Slack had said hello on it.
    Dropped {
        greeted: bool,
        why: String,
    },
}

/// Connects, receives and reconnects until `shutdown`; see the module's doc.
pub(crate) async fn run(
    slack: Slack,
    token: Secret,
    inbox: Arc<dyn Inbox>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), Error> {
    let hook = Hook { slack, inbox };
    let mut delay = FIRST_RETRY;
    loop {
        let stopping = *shutdown.borrow();
        if stopping {
            return Ok(());
        }
        let wait = match connect(&hook, &token).await {
            Ok(socket) => match session(&hook, socket, &mut shutdown).await {
                Ended::Shutdown => return Ok(()),
                Ended::Disconnect(socket, acks) => {
                    tokio::spawn(drain(hook.clone(), socket, acks));
                    delay = FIRST_RETRY;
                    continue;
                }
                Ended::Dropped { greeted, why } => {
                    tracing::warn!(why, "Slack's Socket Mode connection dropped; reconnecting");
                    if greeted {
                        delay = FIRST_RETRY;
                    }
                    delay
                }
            },
            Err(ConnectError::Refused(error)) => return Err(Error::AppTokenRefused(error)),
            Err(ConnectError::Unreachable(why)) => {
                tracing::warn!(
                    why,
                    retry_in_ms = delay.as_millis() as u64,
                    "cannot connect to Slack's Socket Mode; retrying"
                );
                delay
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = stopped(&mut shutdown) => return Ok(()),
        }
        delay = (delay * 2).min(LAST_RETRY);
    }
}

/// Returns once `shutdown` turns true (or its sender is gone).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stopped| *stopped).await;
}

enum ConnectError {
    Refused(crate::SlackApiError),
    Unreachable(String),
}

/// Asks for a URL and opens the socket.
async fn connect(hook: &Hook, token: &Secret) -> Result<Socket, ConnectError> {
    let client = &hook.slack.client;
    let opened = sending::call("apps.connections.open", "", || {
        client.open_connection(token)
    })
    .await;
    let url = match opened {
        Ok(opened) => opened.url,
        Err(error) if error.is_retryable() => {
            return Err(ConnectError::Unreachable(error.to_string()));
        }
        Err(error) => return Err(ConnectError::Refused(error)),
    };
    match tokio_tungstenite::connect_async(url.as_str()).await {
        Ok((socket, _)) => Ok(socket),
        // tungstenite's errors name no URL.
        Err(error) => Err(ConnectError::Unreachable(error.to_string())),
    }
}

/// Receives on one connection until it ends.
async fn session(hook: &Hook, mut socket: Socket, shutdown: &mut watch::Receiver<bool>) -> Ended {
    let (owed, mut acks) = mpsc::unbounded_channel::<String>();
    let mut ping = tokio::time::interval(PING_EVERY);
    let mut heard = Instant::now();
    let mut greeted = false;
    let dropped = |greeted, why: String| Ended::Dropped { greeted, why };
    loop {
        tokio::select! {
            () = stopped(shutdown) => {
                let _ = socket.close(None).await;
                return Ended::Shutdown;
            }
            Some(ack) = acks.recv() => {
                if let Err(error) = socket.send(Message::text(ack)).await {
                    return dropped(greeted, error.to_string());
                }
            }
            _ = ping.tick() => {
                if heard.elapsed() > SILENCE {
                    return dropped(greeted, format!("nothing heard for {} s", SILENCE.as_secs()));
                }
                if let Err(error) = socket.send(Message::Ping(Default::default())).await {
                    return dropped(greeted, error.to_string());
                }
            }
            frame = socket.next() => {
                heard = Instant::now();
                let text = match frame {
                    None | Some(Ok(Message::Close(_))) => return dropped(greeted, "closed".into()),
                    Some(Err(error)) => return dropped(greeted, error.to_string()),
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(_)) => continue,
                };
                match read(hook, text.as_str(), &owed) {
                    Said::Hello => {
                        greeted = true;
                        tracing::info!(mode = "socket", "connected to Slack (Socket Mode)");
                    }
                    Said::Disconnect(reason) => {
                        tracing::info!(reason, "Slack asked for a new Socket Mode connection");
                        return Ended::Disconnect(Box::new(socket), acks);
                    }
                    Said::Other => {}
                }
            }
        }
    }
}

/// Sends the acknowledgements still owed on a connection Slack asked to leave (and handles what
/// else arrives on it meanwhile), then closes it.
async fn drain(hook: Hook, mut socket: Box<Socket>, mut acks: mpsc::UnboundedReceiver<String>) {
    let (owed, mut more) = mpsc::unbounded_channel::<String>();
    let until = Instant::now() + DRAIN;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(until) => break,
            Some(ack) = acks.recv() => { let _ = socket.send(Message::text(ack)).await; }
            Some(ack) = more.recv() => { let _ = socket.send(Message::text(ack)).await; }
            frame = socket.next() => match frame {
                Some(Ok(Message::Text(text))) => { read(&hook, text.as_str(), &owed); }
                Some(Ok(_)) => {}
                None | Some(Err(_)) => return,
            },
        }
    }
    let _ = (*socket).close(None).await;
}

enum Said {
    Hello,
    Disconnect(String),
    Other,
}

/// Reads one message; an envelope is handled in a task of its own, which sends its
/// acknowledgement on `owed` once claimed.
fn read(hook: &Hook, text: &str, owed: &mpsc::UnboundedSender<String>) -> Said {
    let frame: Frame = match serde_json::from_str(text) {
        Ok(frame) => frame,
        Err(error) => {
            tracing::warn!(%error, "unreadable Socket Mode message from Slack");
            return Said::Other;
        }
    };
    match frame.kind.as_str() {
        "hello" => return Said::Hello,
        "disconnect" => return Said::Disconnect(frame.reason.unwrap_or_default()),
        "events_api" | "interactive" | "slash_commands" => {}
        other => {
            tracing::debug!(kind = other, "Socket Mode message of another kind ignored");
            return Said::Other;
        }
    }
    let Some(envelope_id) = frame.envelope_id else {
        tracing::warn!(
            kind = frame.kind,
            "Socket Mode envelope without an envelope_id"
        );
        return Said::Other;
    };
    if frame.retry_attempt > 0 {
        tracing::info!(
            retry_attempt = frame.retry_attempt,
            kind = frame.kind,
            "Slack sent an envelope again"
        );
    }
    let (hook, owed) = (hook.clone(), owed.clone());
    tokio::spawn(async move {
        let ack = match dispatch(&hook, &frame.kind, frame.payload.unwrap_or_default()).await {
            // A modal's submission: Slack reads what to do with the modal in the ack's payload.
            Some(payload) => serde_json::json!({ "envelope_id": envelope_id, "payload": payload }),
            None => serde_json::json!({ "envelope_id": envelope_id }),
        };
        let _ = owed.send(ack.to_string());
    });
    Said::Other
}

/// Hands an envelope's payload to the dispatch HTTP mode uses; returns once it is claimed. An
/// unreadable payload is acknowledged all the same: it would read no better on a retry. Returns
/// the payload the acknowledgement carries, if any (a modal submission's answer).
async fn dispatch(hook: &Hook, kind: &str, payload: Value) -> Option<Value> {
    match kind {
        "events_api" => match serde_json::from_value::<EventCallback>(payload) {
            Ok(callback) => hook.event(callback).await,
            Err(error) => tracing::warn!(%error, "unreadable Slack event"),
        },
        "interactive" => match serde_json::from_value::<Interaction>(payload) {
            Ok(interaction) => return hook.interaction(interaction).await,
            Err(error) => tracing::warn!(%error, "unreadable Slack interaction"),
        },
        _ => {
            // A slash command's payload holds the fields HTTP mode is posted as a form.
            let fields: HashMap<String, Value> =
                serde_json::from_value(payload).unwrap_or_default();
            let fields = fields
                .into_iter()
                .filter_map(|(name, value)| Some((name, value.as_str()?.to_owned())))
                .collect();
            if hook.command(fields).await.is_err() {
                tracing::warn!("unreadable Slack slash command");
            }
        }
    }
    None
}
