//! `--only cluster`: askbridge on a Redis Cluster (3 masters, 3 replicas) beside one Redis node.
//!
//! 1. Ask+answer cycles/s: one askbridge with the replica wait (`WAIT 1`) and without, in
//!    alternating pairs of windows on the same cluster, the ratio (the wait's cost, goal >= 0.8)
//!    the median of the pairs' with its spread (see [`wait_cost`]); and three askbridge replicas
//!    with the wait. On two cores this shows the
//!    cluster's overhead, not scaling.
//! 2. A master's failover under load (`--failovers N` runs, each on a cluster of its own): three
//!    askbridge replicas, 20 asks/s each answered at once from the two others, one master crashed
//!    3 s in. Each ask's latency is counted from when it was sent or from the replica's
//!    promotion, whichever is later (goal: p99 <= 1 s, none over 2 s), beside the same load on one
//!    Redis node; then every acknowledged question is read back (nothing lost, no winner changed).

use crate::{Options, percentile, redis_cluster, redis_server, support};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Asks per second in the failover load, and how long the load runs after the promotion.
const ASKS_PER_S: u64 = 20;
const AFTER_PROMOTION: Duration = Duration::from_secs(8);

pub async fn cluster(o: &Options) {
    let total = o.cycles / 4;
    let single = redis_server::RedisServer::start();
    let server = crate::serve(&single);
    crate::load::cycles(&server.base, 300, o.concurrency).await;
    let (one_node, _) = crate::load::cycles(&server.base, total * 2, o.concurrency).await;
    drop(server);
    println!("cycles/s, one Redis node    {one_node:>8.0}   (the anchor of the lines below)");
    let cluster = redis_cluster::private();
    let with_wait = spawn_on(&cluster, "wait", 1, "500");
    let without = spawn_on(&cluster, "nowait", 1, "0");
    wait_cost(&with_wait, &without, one_node, total, o.concurrency).await;
    drop((with_wait, without));
    let three = spawn_on(&cluster, "three", 3, "500");
    crate::load::cycles_on(&three, 300, o.concurrency).await;
    let (rate, mut latencies) = crate::load::cycles_on(&three, total * 2, o.concurrency).await;
    print_cycles(
        "cluster, 3 askbridge, WAIT 1",
        rate,
        one_node,
        &mut latencies,
    );
    drop(three);
    drop(cluster);
    failovers(o).await;
}

/// Windows of the wait's cost, each a with-WAIT and a without measurement side by side.
const WINDOWS: usize = 5;

/// The wait's cost: [`WINDOWS`] pairs of windows of `total / 2` cycles, with WAIT and without,
/// each pair's order the other's reversed (ABBA: a machine slowing or speeding up over the
/// run falls on both sides); each pair's ratio, their median (the figure) and spread. A 2x
/// swing between runs of one ratio from two long halves was this shared machine's moments
/// (three other builds), not the wait: a pair's two windows are a second or two apart.
async fn wait_cost(
    with_wait: &[String],
    without: &[String],
    one_node: f64,
    total: usize,
    concurrency: usize,
) {
    for bases in [with_wait, without] {
        crate::load::cycles_on(bases, 300, concurrency).await;
    }
    let window = (total / 2).max(100);
    let (mut waited, mut plain) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    let mut ratios = Vec::new();
    for pair in 0..WINDOWS {
        let mut order = [(0, with_wait, &mut waited), (1, without, &mut plain)];
        if pair % 2 == 1 {
            order.reverse();
        }
        let mut rates = [0.0; 2];
        for (side, bases, (side_rates, latencies)) in order {
            let (rate, mut measured) = crate::load::cycles_on(bases, window, concurrency).await;
            side_rates.push(rate);
            latencies.append(&mut measured);
            rates[side] = rate;
        }
        ratios.push(rates[0] / rates[1]);
    }
    for (label, (rates, latencies)) in [
        ("cluster, 1 askbridge, WAIT 1", &mut waited),
        ("cluster, 1 askbridge, no WAIT", &mut plain),
    ] {
        print_cycles(label, median(rates), one_node, latencies);
    }
    let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    let median = median(&mut ratios);
    println!(
        "WAIT 1's cost: cycles with it / without {median:.2} (goal >= 0.8), the median of {WINDOWS} alternating pairs of {window} cycles each: {} (spread {:.2}-{:.2})",
        shown.join(" "),
        ratios.first().unwrap_or(&f64::NAN),
        ratios.last().unwrap_or(&f64::NAN),
    );
}

/// The median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn print_cycles(label: &str, rate: f64, one_node: f64, latencies: &mut [Duration]) {
    println!(
        "{label:<29} {rate:>8.0}   ratio {:.2} to one node   cycle p50 {:.2} ms p99 {:.2} ms",
        rate / one_node,
        percentile(latencies, 0.5),
        percentile(latencies, 0.99),
    );
}

/// `count` askbridge processes on `cluster` under key prefix `name`, with a replica wait of
/// `wait_ms`; their bases (the processes live as long as the returned guard).
fn spawn_on(
    cluster: &redis_cluster::RedisCluster,
    name: &str,
    count: usize,
    wait_ms: &str,
) -> Replicas {
    spawn(&cluster.urls.join(","), name, count, wait_ms)
}

fn spawn(url: &str, name: &str, count: usize, wait_ms: &str) -> Replicas {
    let env = [
        ("REDIS_URL", url.to_owned()),
        ("ASKBRIDGE_REDIS_PREFIX", name.to_owned()),
        ("ASKBRIDGE_REDIS_REPLICA_WAIT_MS", wait_ms.to_owned()),
        ("ASKBRIDGE_LOG", "warn".to_owned()),
    ];
    let processes: Vec<support::Process> = (0..count)
        .map(|_| support::Process::spawn(&["serve"], &env))
        .collect();
    Replicas {
        bases: processes.iter().map(|p| p.base.clone()).collect(),
        _processes: processes,
    }
}

/// Running askbridge processes and their base URLs.
struct Replicas {
    bases: Vec<String>,
    _processes: Vec<support::Process>,
}

impl std::ops::Deref for Replicas {
    type Target = [String];
    fn deref(&self) -> &[String] {
        &self.bases
    }
}

/// One ask of the failover load: when it was sent, when its 201 came (its question's id then),
/// when both answers came back, and the answer that won.
struct Ask {
    sent: Instant,
    acknowledged: Option<(Instant, String)>,
    answered: Option<Instant>,
    winner: Option<&'static str>,
}

async fn failovers(o: &Options) {
    // The anchor: the same load on one node, nothing crashed.
    let single = redis_server::RedisServer::start();
    let replicas = spawn(&single.url(), "load", 3, "500");
    let (_until, until) = watch::channel(Instant::now() + Duration::from_secs(6));
    let asks = load(replicas.bases.clone(), until).await;
    let mut latencies: Vec<Duration> = asks
        .iter()
        .filter_map(|a| Some(a.answered? - a.sent))
        .collect();
    println!(
        "20 asks/s on one Redis node: ask+answers p50 {:.0} ms p99 {:.0} ms max {:.0} ms   (the anchor of the failover lines)",
        ms(&mut latencies, 0.5),
        ms(&mut latencies, 0.99),
        ms(&mut latencies, 1.0),
    );
    drop(replicas);
    for run in 1..=o.failovers {
        failover(run).await;
    }
}

/// One failover run (see the module documentation).
async fn failover(run: usize) {
    let cluster = Arc::new(redis_cluster::private());
    let replicas = spawn_on(&cluster, "failover", 3, "500");
    let (stop, until) = watch::channel(Instant::now() + Duration::from_secs(60));
    let load = tokio::spawn(load(replicas.bases.clone(), until));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let masters = blocking(&cluster, |c| c.masters()).await;
    let crashed = masters[0];
    let crashed_at = Instant::now();
    cluster.crash(crashed);
    let promoted = loop {
        let now = blocking(&cluster, |c| c.masters()).await;
        if now.len() == 3 && !now.contains(&crashed) {
            break Instant::now();
        }
        assert!(
            crashed_at.elapsed() < Duration::from_secs(30),
            "no failover"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let _ = stop.send(promoted + AFTER_PROMOTION);
    let asks = load.await.unwrap();
    let mut from_promotion: Vec<Duration> = asks
        .iter()
        .filter_map(|a| {
            a.answered
                .filter(|at| *at > promoted)
                .map(|at| at - a.sent.max(promoted))
        })
        .collect();
    // Apart: asks already sent at the promotion (waiting out retries through the outage) and
    // those sent after it (what a failover costs once the cluster is back).
    let (mut in_flight, mut after): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
    for a in &asks {
        if let Some(at) = a.answered.filter(|at| *at > promoted) {
            let list = if a.sent < promoted {
                &mut in_flight
            } else {
                &mut after
            };
            list.push(at - a.sent.max(promoted));
        }
    }
    let unanswered = asks.iter().filter(|a| a.answered.is_none()).count();
    let over_2s = from_promotion
        .iter()
        .filter(|d| **d > Duration::from_secs(2))
        .count();
    let (lost, changed) = read_back(&replicas.bases[0], &asks, crashed_at).await;
    println!(
        "failover {run}: promoted {:.1} s after the crash; {} asks answered after it, from the promotion p50 {:.0} ms p99 {:.0} ms max {:.0} ms (goal p99 <= 1000, max <= 2000), {over_2s} over 2 s; {unanswered} of {} without both answers in 10 s; acknowledged and lost {lost}, winner changed {changed}",
        (promoted - crashed_at).as_secs_f64(),
        from_promotion.len(),
        ms(&mut from_promotion, 0.5),
        ms(&mut from_promotion, 0.99),
        ms(&mut from_promotion, 1.0),
        asks.len(),
    );
    println!(
        "  of which {} in flight at the promotion: p50 {:.0} ms max {:.0} ms; {} sent after it: p50 {:.0} ms p99 {:.0} ms max {:.0} ms",
        in_flight.len(),
        ms(&mut in_flight, 0.5),
        ms(&mut in_flight, 1.0),
        after.len(),
        ms(&mut after, 0.5),
        ms(&mut after, 0.99),
        ms(&mut after, 1.0),
    );
}

/// [`percentile`] in ms, NaN for no samples.
fn ms(samples: &mut [Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    percentile(samples, p)
}

/// Runs `f` on the cluster off the runtime's one thread (its node commands block).
async fn blocking<T: Send + 'static>(
    cluster: &Arc<redis_cluster::RedisCluster>,
    f: impl FnOnce(&redis_cluster::RedisCluster) -> T + Send + 'static,
) -> T {
    let cluster = cluster.clone();
    tokio::task::spawn_blocking(move || f(&cluster))
        .await
        .unwrap()
}

/// [`ASKS_PER_S`] asks spread over `bases` until the time `until` holds, each answered at once
/// from the two other replicas; every ask once it is done (or has given up after 10 s).
async fn load(bases: Vec<String>, until: watch::Receiver<Instant>) -> Vec<Ask> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut tasks = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / ASKS_PER_S));
    for n in 0.. {
        tick.tick().await;
        if Instant::now() >= *until.borrow() {
            break;
        }
        let (client, bases) = (client.clone(), bases.clone());
        tasks.push(tokio::spawn(async move { ask(&client, &bases, n).await }));
    }
    let mut asks = Vec::new();
    for task in tasks {
        asks.push(task.await.unwrap());
    }
    asks
}

/// Ask `n`: asked of one replica, answered "yes" and "no" at once by the two others; each
/// request sent again on an error or a 5xx, as a client would, for up to 10 s in all.
async fn ask(client: &reqwest::Client, bases: &[String], n: usize) -> Ask {
    let sent = Instant::now();
    let deadline = sent + Duration::from_secs(10);
    let mut ask = Ask {
        sent,
        acknowledged: None,
        answered: None,
        winner: None,
    };
    let base = &bases[n % bases.len()];
    let body = json!({"session_id": "failover", "prompt": "Go?", "options": ["yes", "no"]});
    let id = loop {
        if Instant::now() > deadline {
            return ask;
        }
        let response = client
            .post(format!("{base}/api/questions"))
            .json(&body)
            .send()
            .await;
        if let Ok(response) = response
            && response.status() == 201
        {
            let created: Value = response.json().await.unwrap();
            break created["id"].as_str().unwrap().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    ask.acknowledged = Some((Instant::now(), id.clone()));
    let (yes, no) = tokio::join!(
        reply(client, &bases[(n + 1) % bases.len()], &id, "yes", deadline),
        reply(client, &bases[(n + 2) % bases.len()], &id, "no", deadline),
    );
    if let (Some(yes), Some(no)) = (yes, no) {
        ask.answered = Some(Instant::now());
        ask.winner = match (yes, no) {
            (200, 200) => panic!("question {id}: both answers won"),
            (200, _) => Some("yes"),
            (_, 200) => Some("no"),
            _ => None, // a won claim whose 200 was lost to a retry: unknown
        };
    }
    ask
}

/// Replies `answer` until askbridge says 200 (won) or 409 (another won); the status, or `None`
/// at `deadline`.
async fn reply(
    client: &reqwest::Client,
    base: &str,
    id: &str,
    answer: &str,
    deadline: Instant,
) -> Option<u16> {
    while Instant::now() < deadline {
        let response = client
            .post(format!("{base}/api/questions/{id}/reply"))
            .json(&json!({ "answer": answer }))
            .send()
            .await;
        if let Ok(response) = response {
            let status = response.status().as_u16();
            if status == 200 || status == 409 {
                return Some(status);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Reads every acknowledged question back (but those acknowledged within the second before the
/// crash, which asynchronous replication does not promise): how many are gone, and how many
/// show another winner than the one that got its 200.
async fn read_back(base: &str, asks: &[Ask], crashed_at: Instant) -> (usize, usize) {
    let client = crate::load::client();
    let (mut lost, mut changed) = (0, 0);
    for ask in asks {
        let Some((at, id)) = &ask.acknowledged else {
            continue;
        };
        if *at < crashed_at && *at + Duration::from_secs(1) > crashed_at {
            continue;
        }
        let response = client
            .get(format!("{base}/api/questions/{id}"))
            .send()
            .await
            .unwrap();
        if response.status() != 200 {
            lost += 1;
            continue;
        }
        let question: Value = response.json().await.unwrap();
        if let Some(winner) = ask.winner
            && question["resolution"]["value"] != winner
        {
            changed += 1;
        }
    }
    (lost, changed)
}
