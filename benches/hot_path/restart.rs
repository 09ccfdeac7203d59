//! Restarts, timed from outside (`--only restart`, and `--only million` on Redis): askbridge
//! stopped with SIGTERM and started again on the same port and store, timed from the spawn to
//! `/healthz` answering 200 and to the first page of `/api/questions` returning, each polled
//! every 5 ms. `--only restart` does it on the embedded store with `--pending` questions pending
//! (100,000 by default), beside the same with 100 (goal: serving within 1 s).

use crate::load;
use crate::support::Process;
use std::time::{Duration, Instant};

/// Seconds from the spawn to `/healthz` and to the first page.
pub struct Restarted {
    pub healthy_s: f64,
    pub first_page_s: f64,
}

/// Stops `process`, starts it again on its port with `env`, and times it.
pub async fn restart(process: &mut Process, env: Vec<(&'static str, String)>) -> Restarted {
    let port = process.port();
    assert!(process.terminate(Duration::from_secs(60)), "did not stop");
    let base = process.base.clone();
    let started = Instant::now();
    let healthy = tokio::spawn(first_ok(format!("{base}/healthz"), started));
    let page = tokio::spawn(first_ok(format!("{base}/api/questions?limit=50"), started));
    let spawned = tokio::task::spawn_blocking(move || Process::spawn_at(port, &["serve"], &env));
    *process = spawned.await.unwrap();
    Restarted {
        healthy_s: healthy.await.unwrap(),
        first_page_s: page.await.unwrap(),
    }
}

/// Seconds from `started` until `url` first answers 2xx.
async fn first_ok(url: String, started: Instant) -> f64 {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    loop {
        if let Ok(response) = client.get(&url).send().await
            && response.status().is_success()
            && response.bytes().await.is_ok()
        {
            return started.elapsed().as_secs_f64();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{url} never answered"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The embedded store's environment in `dir`.
fn embedded_env(dir: &std::path::Path) -> Vec<(&'static str, String)> {
    vec![
        ("ASKBRIDGE_DATA_DIR", dir.display().to_string()),
        ("ASKBRIDGE_LOG", "warn".to_owned()),
    ]
}

/// `pending` questions asked on a fresh embedded store, then a timed restart.
async fn embedded_with(pending: usize, concurrency: usize) -> Restarted {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Process::spawn(&["serve"], &embedded_env(dir.path()));
    let filled = Instant::now();
    load::fill(&server.base, pending, concurrency, "restart").await;
    let fill_s = filled.elapsed().as_secs_f64();
    let restarted = restart(&mut server, embedded_env(dir.path())).await;
    if pending > 100 {
        println!("  (asked {pending} in {fill_s:.0} s)");
    }
    restarted
}

pub async fn embedded(pending: usize, concurrency: usize) {
    let few = embedded_with(100, concurrency).await;
    let many = embedded_with(pending, concurrency).await;
    println!(
        "embedded restart with {pending} pending: /healthz after {:.3} s, first page after {:.3} s (goal <= 1 s)   beside 100 pending: {:.3} s and {:.3} s",
        many.healthy_s, many.first_page_s, few.healthy_s, few.first_page_s
    );
}
