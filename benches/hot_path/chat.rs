//! How long a person waits on each chat platform (`--only chat`): one `askbridge serve` on a real
//! redis-server with Telegram (the fake Bot API, long polling), Slack (the fake Web API and
//! Socket Mode socket) and Discord (the fake REST API and gateway) on at once, the fakes of
//! tests/it/fakes. With `--pending` questions pending on all three (1,000 here by default), over
//! `--rounds` questions per platform (1,000), taking turns: from `POST /api/questions` to the
//! fake receiving the call that shows it, and from the answer sent (a tap queued for `getUpdates`, a click
//! down the socket or the gateway) to the asker's `GET …/wait` returning (`fakes/rounds.rs`).
//! Beside each platform, its anchor taken between the rounds, at the same moments: a loopback
//! HTTP round trip to the same fake (each fake on a runtime and thread of its own). The goal is
//! p99 <= 2x the round trip's p99.

use crate::fakes::discord::{FakeDiscord, TOKEN as DISCORD_TOKEN};
use crate::fakes::rounds::{
    ALICE, CHANNEL, DISCORD_CHANNEL, GROUP, ask_all, discord_alice, discord_ping, discord_round,
    p50_p99, round_trip, seen, slack_fakes, slack_ping, slack_round, telegram_ping, telegram_round,
};
use crate::fakes::slack::{APP_TOKEN, TOKEN as SLACK_TOKEN};
use crate::fakes::telegram::FakeTelegram;
use crate::redis_server::RedisServer;
use std::sync::Arc;
use std::time::Duration;

/// One platform's samples: ask -> shown, answer -> released, and the round trips.
#[derive(Default)]
struct Samples {
    shown: Vec<Duration>,
    released: Vec<Duration>,
    rtt: Vec<Duration>,
}

impl Samples {
    fn print(&mut self, platform: &str, show_call: &str, answer: &str) {
        let (shown50, shown99) = p50_p99(&mut self.shown);
        let (released50, released99) = p50_p99(&mut self.released);
        let (rtt50, rtt99) = p50_p99(&mut self.rtt);
        println!(
            "chat {platform:<8} ask -> {show_call:<16} p50 {shown50:>6.2} ms p99 {shown99:>6.2} ms   {answer:<14} -> wait released p50 {released50:>6.2} ms p99 {released99:>6.2} ms   beside a loopback round trip to the fake p50 {rtt50:.2} ms p99 {rtt99:.2} ms   p99/p99_rtt {:.1} and {:.1} (goal <= 2)   (n = {})",
            shown99 / rtt99,
            released99 / rtt99,
            self.shown.len()
        );
    }
}

pub async fn chat(rounds: usize, pending: usize) {
    // AOF fsync once a second, the setting the README recommends: with fsync on every write the
    // disk's latency under the shared machine's other work is most of every figure.
    let redis = RedisServer::start_with(&["--appendfsync", "everysec"]);
    let telegram = FakeTelegram::start();
    let (web, socket) = slack_fakes();
    let (web, socket) = (Arc::new(web), Arc::new(socket));
    // On a runtime of its own, as the other fakes are (on this thread's, its round trips were
    // the bench's own thread answering itself).
    let discord_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let discord = Arc::new(discord_runtime.spawn(FakeDiscord::start()).await.unwrap());
    let mut env = telegram.serve_env(&redis);
    env.extend([
        ("SLACK_BOT_TOKEN", SLACK_TOKEN.to_owned()),
        ("SLACK_APP_TOKEN", APP_TOKEN.to_owned()),
        ("SLACK_API_URL", web.api_url()),
        ("DISCORD_BOT_TOKEN", DISCORD_TOKEN.to_owned()),
        ("DISCORD_API_URL", discord.base.clone()),
        ("ASKBRIDGE_LOG", "warn".to_owned()),
    ]);
    let process = crate::serve_blocking(env).await;
    let base = process.base.clone();
    discord.wait_ready().await;
    let open = socket.clone();
    seen(move || !open.open().is_empty()).await;

    fill(&telegram, &web, &discord, &base, pending).await;
    // A round each first, not counted.
    telegram_round(&telegram, &base).await;
    slack_round(&web, &socket, &base, 0).await;
    discord_round(&discord, &base).await;

    // Redis's side of the rounds, counted from here (commandstats cost nothing to keep, unlike a
    // SLOWLOG of every command, which slowed the scripts it timed).
    crate::probe::reset_stats(&redis.url()).await;
    let client = reqwest::Client::new();
    let (mut on_telegram, mut on_slack, mut on_discord) = Default::default();
    for round in 1..=rounds {
        let (shown, released) = telegram_round(&telegram, &base).await;
        let rtt = round_trip(telegram_ping(&client, &telegram)).await;
        push(&mut on_telegram, shown, released, rtt);
        let (shown, released, _) = slack_round(&web, &socket, &base, round).await;
        let rtt = round_trip(slack_ping(&client, &web)).await;
        push(&mut on_slack, shown, released, rtt);
        let (shown, released) = discord_round(&discord, &base).await;
        let rtt = round_trip(discord_ping(&client, &discord)).await;
        push(&mut on_discord, shown, released, rtt);
    }
    on_telegram.print("telegram", "sendMessage", "tap queued");
    on_slack.print("slack", "chat.postMessage", "click sent");
    on_discord.print("discord", "POST message", "click sent");
    let stats = crate::probe::command_stats(&redis.url(), &["evalsha", "xread"]).await;
    println!(
        "chat redis-server during the rounds, an ask and its answer each: {}",
        per_round(&stats, 3 * rounds)
    );
    drop(process);
    discord_runtime.shutdown_background();
}

/// "EVALSHA 4.1 a round, 74.9 us each; ..." from `command_stats`' "cmdstat_evalsha:calls=…,
/// usec=…,usec_per_call=…" items. (Redis's CPU over the rounds is not divided by them: each round
/// waits 50 ms for its waiter to park, and the idle time's own work would be counted in.)
fn per_round(stats: &str, rounds: usize) -> String {
    let field = |item: &str, name: &str| {
        item.split([':', ','])
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    stats
        .split_whitespace()
        .map(|item| {
            let command = item.trim_start_matches("cmdstat_").split(':').next();
            format!(
                "{} {:.1} a round, {:.1} us each",
                command.unwrap_or_default().to_uppercase(),
                field(item, "calls") / rounds as f64,
                field(item, "usec_per_call")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn push(samples: &mut Samples, shown: Duration, released: Duration, rtt: Duration) {
    samples.shown.push(shown);
    samples.released.push(released);
    samples.rtt.push(rtt);
}

/// `count` questions pending on all three platforms, shown on each before the rounds start.
async fn fill(
    telegram: &FakeTelegram,
    web: &Arc<crate::fakes::slack::FakeSlack>,
    discord: &Arc<FakeDiscord>,
    base: &str,
    count: usize,
) {
    let targets = [
        format!("telegram:{GROUP}"),
        format!("slack:{CHANNEL}"),
        format!("discord:{DISCORD_CHANNEL}"),
    ];
    let answerers = [
        "telegram:7".to_owned(),
        format!("slack:{ALICE}"),
        discord_alice().identity(),
    ];
    for _ in 0..count {
        ask_all(base, &targets, &answerers).await;
    }
    let (telegram, web, discord) = (telegram.clone(), web.clone(), discord.clone());
    tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while telegram.sent_in(GROUP).len() < count
            || web.calls_of("chat.postMessage").len() < count
            || discord.posted(DISCORD_CHANNEL).len() < count
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the pending questions were not all shown"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
}
