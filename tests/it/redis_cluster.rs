//! A real Redis Cluster for the tests: three masters and three replicas on loopback ports in a
//! temp dir, created with `redis-cli --cluster create`, shared by every test of the binary (each
//! test uses a key prefix of its own). Its processes end with the test binary: each runs under a
//! shell that kills it when its stdin — held open by this process — closes.

use crate::redis_server::free_port;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The cluster.
pub struct RedisCluster {
    /// `redis://127.0.0.1:<port>` of every node.
    pub urls: Vec<String>,
    /// Every node's port.
    pub ports: Vec<u16>,
    _dir: tempfile::TempDir,
    _nodes: Mutex<Vec<(Child, ChildStdin)>>,
}

static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();

/// The shared cluster, started on first use.
pub fn shared() -> &'static RedisCluster {
    CLUSTER.get_or_init(start)
}

/// A cluster of one test's own (for faults the others must not see); gone when dropped.
pub fn private() -> RedisCluster {
    start()
}

impl RedisCluster {
    /// The ports of the masters now.
    pub fn masters(&self) -> Vec<u16> {
        self.nodes()
            .lines()
            .filter(|line| line.contains("master") && !line.contains("fail"))
            .map(port_of)
            .filter(|port| *port != 0)
            .collect()
    }

    /// Stops one node at once, without saving (a crash, as far as the cluster can tell).
    pub fn crash(&self, port: u16) {
        command(port, "SHUTDOWN NOSAVE");
    }

    /// The port of the master serving `slot` now.
    pub fn master_of(&self, slot: u16) -> u16 {
        let nodes = self.nodes();
        let line = nodes
            .lines()
            .filter(|line| line.contains("master") && !line.contains("fail"))
            .find(|line| {
                line.split_whitespace().skip(8).any(|range| {
                    let mut ends = range.splitn(2, '-').filter_map(|n| n.parse::<u16>().ok());
                    match (ends.next(), ends.next()) {
                        (Some(low), Some(high)) => (low..=high).contains(&slot),
                        (Some(one), None) => one == slot,
                        _ => false,
                    }
                })
            })
            .unwrap_or_else(|| panic!("no master serves slot {slot}:\n{nodes}"));
        port_of(line)
    }

    /// The port of a replica of the master at `master`, from the master's own `INFO
    /// replication` (`slave0:ip=...,port=...,state=online,...`): other nodes' `CLUSTER NODES`
    /// can list a fresh replica as a master for a while.
    pub fn replica_of(&self, master: u16) -> u16 {
        let info = command(master, "INFO replication");
        info.lines()
            .filter(|line| line.starts_with("slave") && line.contains("state=online"))
            .flat_map(|line| line.split(','))
            .find_map(|field| field.strip_prefix("port=")?.parse().ok())
            .unwrap_or_else(|| panic!("the master at {master} has no replica online:\n{info}"))
    }

    /// Freezes the node at `port` (SIGSTOP) until the guard is dropped: it keeps its
    /// connections open and answers nothing, as a node stuck in a long fork or swapped out would.
    pub fn freeze(&self, port: u16) -> Frozen {
        let info = command(port, "INFO server");
        let pid = info
            .lines()
            .find_map(|line| line.strip_prefix("process_id:"))
            .map(|pid| pid.trim().to_owned())
            .unwrap_or_else(|| panic!("no process_id from {port}:\n{info}"));
        signal(&pid, "-STOP");
        Frozen { pid }
    }

    /// `CLUSTER NODES`, asked of any node that answers.
    fn nodes(&self) -> String {
        self.ports
            .iter()
            .map(|port| command(*port, "CLUSTER NODES"))
            .find(|reply| reply.contains("master"))
            .unwrap_or_default()
    }

    /// Whether the cluster says it is ok, asked at `port`.
    pub fn ok_at(&self, port: u16) -> bool {
        command(port, "CLUSTER INFO").contains("cluster_state:ok")
    }
}

/// A node stopped by [`RedisCluster::freeze`]; continued when dropped (a test that fails
/// must not leave a stopped process behind: the shell's `kill` at the end would not end it).
pub struct Frozen {
    pid: String,
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal(&self.pid, "-CONT");
    }
}

fn signal(pid: &str, which: &str) {
    let sent = Command::new("kill")
        .args([which, pid])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill {which} {pid} failed");
}

/// The port in a `CLUSTER NODES` line (`<id> <ip>:<port>@<bus port> ...`).
fn port_of(line: &str) -> u16 {
    line.split_whitespace()
        .nth(1)
        .and_then(|address| address.split(['@', ':']).nth(1)?.parse().ok())
        .unwrap_or_default()
}

fn command(port: u16, line: &str) -> String {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.write_all(format!("{line}\r\n").as_bytes());
    let mut buffer = [0u8; 4096];
    let read = stream.read(&mut buffer).unwrap_or(0);
    String::from_utf8_lossy(&buffer[..read]).into_owned()
}

/// A free port whose cluster bus port (10,000 higher, as Redis places it) is free too: an
/// ephemeral port above 55535 has none, and a bus port in use keeps the node from starting.
fn free_cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port <= 55_535 && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

fn start() -> RedisCluster {
    let dir = tempfile::tempdir().unwrap();
    let ports: Vec<u16> = (0..6).map(|_| free_cluster_port()).collect();
    let mut nodes = Vec::new();
    for port in &ports {
        let script = format!(
            "redis-server --port {port} --bind 127.0.0.1 --protected-mode no --cluster-enabled yes \
             --cluster-config-file nodes-{port}.conf --cluster-node-timeout 2000 --appendonly no \
             --repl-diskless-sync-delay 0 \
             --save '' --dir {dir} >/dev/null 2>&1 & pid=$!; cat >/dev/null; kill $pid",
            dir = dir.path().display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .spawn()
            .expect("start redis-server");
        let stdin = child.stdin.take().unwrap();
        nodes.push((child, stdin));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    for port in &ports {
        while !command(*port, "PING").starts_with("+PONG") {
            assert!(
                Instant::now() < deadline,
                "redis-server {port} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let created = Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(&addresses)
        .args(["--cluster-replicas", "1", "--cluster-yes"])
        .stdout(Stdio::null())
        .status()
        .expect("redis-cli --cluster create");
    assert!(created.success(), "redis-cli --cluster create failed");
    let deadline = Instant::now() + Duration::from_secs(30);
    // Every node serving every slot, and knowing all six nodes: `cluster_state:ok` can come
    // before gossip has told a node of some replica (CI once saw a node list five), and the
    // tests read the cluster's shape from whichever node they reach.
    let known = format!("cluster_known_nodes:{}", ports.len());
    for port in &ports {
        loop {
            let info = command(*port, "CLUSTER INFO");
            if info.contains("cluster_state:ok") && info.contains(&known) {
                break;
            }
            assert!(Instant::now() < deadline, "the cluster did not become ok");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // Each master's replica in sync, or WAIT 1 would time out on every write.
    for port in &ports {
        loop {
            let info = command(*port, "INFO replication");
            if !info.contains("role:master") || info.contains("state=online") {
                break;
            }
            assert!(Instant::now() < deadline, "the replicas did not sync");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    RedisCluster {
        ports: ports.clone(),
        urls: ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect(),
        _dir: dir,
        _nodes: Mutex::new(nodes),
    }
}
