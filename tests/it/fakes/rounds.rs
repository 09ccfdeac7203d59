//! One question's trip through a chat platform, timed from outside: from `POST /api/questions`
//! to the platform's fake receiving the call that shows it, and from a person's answer reaching
//! askbridge (an update queued, a click sent down Slack's socket or Discord's gateway) to the
//! asker's `GET …/wait` returning. Beside each, the anchor: a loopback HTTP round trip to the
//! same fake. "Received" is the moment the fake's handler started on the call (its
//! [`Arrivals`](super::Arrivals)), which the round awaits without polling.
//!
//! Here, in `fakes/`, because two kinds of benchmark use it: Slack's latency benchmark among the
//! tests (`slack_bench.rs`: debug build, an ignored test) and `--only chat` and `--only email` of
//! benches/hot_path (release build), which includes `fakes/` by path.

// Each uses a part: the tests' benchmark Slack's round, the hot-path benchmark every platform's,
// the round trips, and the helpers its email rounds share.
#![allow(dead_code)]

use super::discord::{FakeDiscord, FakeUser, Place};
use super::slack::{FakeSlack, TOKEN as SLACK_TOKEN};
use super::slack_socket::FakeSocket;
use super::telegram::{FakeTelegram, User};
use crate::support::http;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a watcher looks at a fake.
const WATCH_EVERY: Duration = Duration::from_micros(200);
const GIVE_UP: Duration = Duration::from_secs(30);
/// How many of a fake's newest messages a watcher reads: the question, and room for a
/// confirmation or an edit of the round before landing after it.
const NEWEST: usize = 4;

/// The Telegram group the rounds ask in.
pub const GROUP: i64 = -100_300;
/// The Slack channel and person of the rounds.
pub const CHANNEL: &str = "C0SOCKET1";
pub const ALICE: &str = "U0ALICE01";
/// The Discord channel of the rounds.
pub const DISCORD_CHANNEL: u64 = 555_000_000_000_000_001;

thread_local! {
    /// The rounds' client, kept: a client built per request (and its connection) was timed in
    /// each ask. One per thread, so one per runtime: a pooled connection serves the runtime
    /// that opened it.
    static CLIENT: reqwest::Client = http();
}

fn client() -> reqwest::Client {
    CLIENT.with(reqwest::Client::clone)
}

/// Waits on a blocking thread until `ready`, checking every [`WATCH_EVERY`]; returns when it was
/// first seen.
pub async fn seen(mut ready: impl FnMut() -> bool + Send + 'static) -> Instant {
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + GIVE_UP;
        while !ready() {
            assert!(Instant::now() < deadline, "gave up waiting");
            std::thread::sleep(WATCH_EVERY);
        }
        Instant::now()
    })
    .await
    .unwrap()
}

/// `GET /api/questions/{id}/wait` parked (a moment to reach the server), and when it returned.
pub async fn parked_wait(base: &str, id: &str) -> tokio::task::JoinHandle<(Instant, Value)> {
    let url = format!("{base}/api/questions/{id}/wait?timeout_s=30");
    let waiter = tokio::spawn(async move {
        let response = client().get(url).send().await.unwrap();
        let done = Instant::now();
        (done, response.json().await.unwrap())
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    waiter
}

/// Asks `targets`, answerable by `answerers`; returns the question's id.
pub async fn ask_all(base: &str, targets: &[String], answerers: &[String]) -> String {
    let body = json!({
        "session_id": "bench", "prompt": "Which library?", "options": ["dayjs", "date-fns"],
        "targets": targets, "answerers": answerers,
    });
    let response = client().post(format!("{base}/api/questions")).json(&body);
    let created: Value = response.send().await.unwrap().json().await.unwrap();
    created["id"].as_str().unwrap().to_owned()
}

pub async fn ask(base: &str, target: &str, answerer: &str) -> String {
    ask_all(base, &[target.to_owned()], &[answerer.to_owned()]).await
}

/// "what   p50 … ms   p99 … ms   (n = …)".
pub fn line(what: &str, samples: &mut [Duration]) -> String {
    let (p50, p99) = p50_p99(samples);
    format!(
        "{what:<52} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   (n = {})",
        samples.len()
    )
}

/// The median and the 99th percentile (nearest rank), in ms.
pub fn p50_p99(samples: &mut [Duration]) -> (f64, f64) {
    samples.sort_unstable();
    let at = |p: f64| {
        let rank = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
        samples[rank - 1].as_secs_f64() * 1000.0
    };
    (at(0.5), at(0.99))
}

/// The person who answers on Telegram.
pub fn telegram_alice() -> User {
    User {
        id: 7,
        username: "alice",
    }
}

/// One Telegram round: (POST -> sendMessage, a tap on the second option queued -> wait
/// released). A tap, as a person answers: askbridge answers its callback query too.
pub async fn telegram_round(fake: &FakeTelegram, base: &str) -> (Duration, Duration) {
    let asked = Instant::now();
    let id = ask(base, &format!("telegram:{GROUP}"), "telegram:7").await;
    let shown = fake.arrivals().arrival_of(&id).await;
    let message = fake
        .newest_in(GROUP, NEWEST)
        .into_iter()
        .find(|m| m.text.contains(&id))
        .unwrap();
    let second = message.buttons().concat()[1].1.clone();
    let waiter = parked_wait(base, &id).await;
    let pushed = Instant::now();
    fake.tap(GROUP, message.id, &telegram_alice(), &second);
    let (released, question) = waiter.await.unwrap();
    assert_eq!(question["status"], "answered", "{question}");
    (shown - asked, released - pushed)
}

/// The two Slack fakes, the Web API handing out the socket's URL.
pub fn slack_fakes() -> (FakeSlack, FakeSocket) {
    let (web, socket) = (FakeSlack::start(), FakeSocket::start());
    web.socket_mode(&socket.url);
    (web, socket)
}

/// A click on option `choice` of question `id`, shown as message `ts` in [`CHANNEL`].
pub fn slack_click(user: &str, id: &str, ts: &str, choice: usize, at: &str) -> Value {
    json!({
        "type": "block_actions",
        "user": {"id": user, "username": user.to_lowercase()},
        "channel": {"id": CHANNEL},
        "container": {"type": "message", "message_ts": ts, "channel_id": CHANNEL},
        "trigger_id": format!("trigger-{at}"),
        "actions": [{"type": "button", "action_id": format!("askbridge-{}", choice - 1),
                     "value": format!("/answer {id} {choice}"), "action_ts": at}],
    })
}

/// One Slack round: (POST -> chat.postMessage, click sent -> wait released), and the click's
/// envelope.
pub async fn slack_round(
    web: &Arc<FakeSlack>,
    socket: &FakeSocket,
    base: &str,
    round: usize,
) -> (Duration, Duration, String) {
    let asked = Instant::now();
    let id = ask(base, &format!("slack:{CHANNEL}"), &format!("slack:{ALICE}")).await;
    let shown = web.arrivals().arrival_of(&id).await;
    let ts = web.find_newest(CHANNEL, &id, NEWEST).unwrap();
    let waiter = parked_wait(base, &id).await;
    let clicked = Instant::now();
    let at = format!("1800000000.{round:06}");
    let envelope = socket.send("interactive", slack_click(ALICE, &id, &ts, 2, &at));
    let (released, question) = waiter.await.unwrap();
    assert_eq!(question["status"], "answered", "{question}");
    (shown - asked, released - clicked, envelope)
}

/// The person who answers on Discord.
pub fn discord_alice() -> FakeUser {
    FakeUser::person(111_000_000_000_000_001, "alice")
}

/// One Discord round: (POST -> the message posted, click dispatched -> wait released).
pub async fn discord_round(fake: &Arc<FakeDiscord>, base: &str) -> (Duration, Duration) {
    let place = Place::guild_channel(DISCORD_CHANNEL);
    let asked = Instant::now();
    let id = ask(base, &place.target(), &discord_alice().identity()).await;
    let shown = fake.arrivals().arrival_of(&id).await;
    let message = fake.newest_holding(&id, NEWEST).unwrap();
    let waiter = parked_wait(base, &id).await;
    let clicked = Instant::now();
    fake.click(&discord_alice(), place, message, &format!("/answer {id} 2"));
    let (released, question) = waiter.await.unwrap();
    assert_eq!(question["status"], "answered", "{question}");
    (shown - asked, released - clicked)
}

/// A loopback HTTP round trip: the time from sending `request` to its whole response read.
pub async fn round_trip(request: reqwest::RequestBuilder) -> Duration {
    let sent = Instant::now();
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response.bytes().await.unwrap();
    sent.elapsed()
}

/// The anchors' requests, one per fake: a call each fake answers from memory.
pub fn telegram_ping(client: &reqwest::Client, fake: &FakeTelegram) -> reqwest::RequestBuilder {
    client.post(format!("{}/bot1:fake/getMe", fake.base))
}

pub fn slack_ping(client: &reqwest::Client, web: &FakeSlack) -> reqwest::RequestBuilder {
    client
        .post(format!("{}/auth.test", web.api_url()))
        .bearer_auth(SLACK_TOKEN)
}

pub fn discord_ping(client: &reqwest::Client, fake: &FakeDiscord) -> reqwest::RequestBuilder {
    client
        .get(format!("{}/api/v10/users/@me", fake.base))
        .header("authorization", format!("Bot {}", super::discord::TOKEN))
}
