//! The anchors each figure is printed beside, measured in the same run on the same machine: a
//! small claim-shaped Lua script through `redis-benchmark`, Redis PING round trips, the disk's
//! fsync rate, and LangGraph's resumes. The machine is shared and noisy: ratios mean more than
//! absolute times.

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

/// A script shaped like a claim: read a status, write two fields, touch an index.
const CLAIM_SHAPED: &str = "local s = redis.call('HGET', KEYS[1], 'status') \
     redis.call('HSET', KEYS[1], 'status', 'pending', 'res', ARGV[1]) \
     redis.call('ZADD', KEYS[2], 1, ARGV[1]) return s";

/// `redis-benchmark` running EVALSHA of [`CLAIM_SHAPED`] with `clients` connections: calls/s.
pub async fn evalsha_per_s(url: &str, port: u16, clients: usize, requests: usize) -> f64 {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(CLAIM_SHAPED)
        .query_async(&mut connection)
        .await
        .unwrap();
    let output = Command::new("redis-benchmark")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-c",
            &clients.to_string(),
            "-n",
            &requests.to_string(),
            "-q",
            "EVALSHA",
            &sha,
            "2",
            "{anchor}:h",
            "{anchor}:z",
            "x",
        ])
        .output()
        .expect("redis-benchmark (Debian's redis-tools) is installed");
    let text = String::from_utf8_lossy(&output.stdout);
    // "EVALSHA ...: 69750.00 requests per second, p50=0.207 msec"
    text.split_whitespace()
        .collect::<Vec<_>>()
        .windows(3)
        .find(|w| w[1] == "requests" && w[2] == "per")
        .and_then(|w| w[0].parse().ok())
        .unwrap_or_else(|| panic!("cannot read redis-benchmark's output: {text}"))
}

/// `count` PING round trips, one at a time, client-timed.
pub async fn ping_times(url: &str, count: usize) -> Vec<Duration> {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let mut times = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        let _: String = redis::cmd("PING")
            .query_async(&mut connection)
            .await
            .unwrap();
        times.push(started.elapsed());
    }
    times
}

/// Writes and fsyncs a small file `count` times in `dir`: fsyncs per second (what bounds a store
/// that syncs every write).
pub fn fsyncs_per_s(dir: &std::path::Path, count: usize) -> f64 {
    let mut file = std::fs::File::create(dir.join("fsync-anchor")).unwrap();
    let started = Instant::now();
    for n in 0..count {
        file.write_all(format!("{n}\n").as_bytes()).unwrap();
        file.sync_data().unwrap();
    }
    count as f64 / started.elapsed().as_secs_f64()
}

/// LangGraph's resumes per second on the same three-question flow, in its two shapes.
#[derive(Clone, Copy, Debug)]
pub struct LangGraph {
    /// A node per question (and `publish`): a checkpoint per node.
    pub nodes: f64,
    /// The three questions as one node with three `interrupt()` calls, re-run from its top on
    /// each resume: fewer checkpoints, the faster shape.
    pub one_node: f64,
}

impl LangGraph {
    /// The faster shape's rate: what the goal's ratio counts against.
    pub fn faster(&self) -> f64 {
        self.nodes.max(self.one_node)
    }

    /// The mean of two measurements, shape by shape.
    pub fn mean(&self, other: &LangGraph) -> LangGraph {
        LangGraph {
            nodes: (self.nodes + other.nodes) / 2.0,
            one_node: (self.one_node + other.one_node) / 2.0,
        }
    }
}

/// [`LangGraph`]'s rates, from the venv scripts/bench makes (`target/bench-venv`); `Err` (and
/// why) when it is not there.
pub fn langgraph_resumes_per_s(runs: usize) -> Result<LangGraph, String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/bench-venv/bin/python");
    if !python.exists() {
        return Err("no target/bench-venv: run scripts/bench, which installs langgraph".into());
    }
    let output = Command::new(python)
        .arg(root.join("benches/hot_path/langgraph_resume.py"))
        .args(["--runs", &runs.to_string()])
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&output.stdout);
    // "resumes_per_s nodes 331.0" and "resumes_per_s one_node 640.2".
    let shape = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("resumes_per_s {name} ")))
            .and_then(|v| v.trim().parse().ok())
    };
    match (shape("nodes"), shape("one_node")) {
        (Some(nodes), Some(one_node)) => Ok(LangGraph { nodes, one_node }),
        _ => Err(format!(
            "langgraph script failed: {text}{}",
            String::from_utf8_lossy(&output.stderr)
        )),
    }
}

/// The release binary's size, as `cargo build --release` leaves it.
pub fn release_binary_mb() -> Option<f64> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::metadata(root.join("target/release/askbridge"))
        .ok()
        .map(|m| m.len() as f64 / 1_000_000.0)
}
