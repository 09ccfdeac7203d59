//! What a load costs, read from outside askbridge: the commands Redis receives (MONITOR), Redis's
//! memory and CPU (`INFO`), the bytes its append-only file grew by, and a process's CPU time.
//! Kept apart from the loads so that a figure and the load it measures can be read separately.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A MONITOR connection counting the commands clients send (lines a script runs inside Redis,
/// marked `lua`, and blocking stream reads are left out).
pub struct Monitor {
    counted: Arc<AtomicUsize>,
    /// Lines scripts ran inside Redis.
    inside: Arc<AtomicUsize>,
    names: Arc<std::sync::Mutex<Vec<String>>>,
    /// Closed on drop, which ends MONITOR (it slows Redis down while it runs).
    stream: TcpStream,
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

impl Monitor {
    pub fn start(port: u16) -> Self {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(b"MONITOR\r\n").unwrap();
        let kept = stream.try_clone().unwrap();
        let (counted, inside) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let names = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (c, n, i) = (counted.clone(), names.clone(), inside.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { return };
                if line.contains(" lua] ") {
                    i.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                if !line.starts_with('+') || line == "+OK" {
                    continue;
                }
                let command = line
                    .split("] \"")
                    .nth(1)
                    .and_then(|rest| rest.split('"').next())
                    .unwrap_or_default()
                    .to_uppercase();
                if command == "XREAD" {
                    continue;
                }
                // Which script: EVALSHA's first argument, shortened.
                let command = match command.as_str() {
                    "EVALSHA" => {
                        let sha = line.split("\" \"").nth(1).unwrap_or_default();
                        format!("EVALSHA:{}", &sha[..sha.len().min(6)])
                    }
                    _ => command,
                };
                c.fetch_add(1, Ordering::Relaxed);
                n.lock().unwrap().push(command);
            }
        });
        Monitor {
            counted,
            inside,
            names,
            stream: kept,
        }
    }

    /// Commands counted so far.
    pub fn count(&self) -> usize {
        self.counted.load(Ordering::Relaxed)
    }

    /// Commands scripts ran inside Redis so far.
    pub fn inside(&self) -> usize {
        self.inside.load(Ordering::Relaxed)
    }

    /// The names of the commands counted since the last call.
    pub fn take_names(&self) -> Vec<String> {
        std::mem::take(&mut *self.names.lock().unwrap())
    }
}

/// A section of Redis's `INFO`.
async fn info(url: &str, section: &str) -> String {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("INFO")
        .arg(section)
        .query_async(&mut connection)
        .await
        .unwrap()
}

/// Rewrites Redis's AOF now and returns once it is done, so that a rewrite the writes before
/// called for does not run (a forked child, on the shared cores) during what is measured next.
pub async fn rewrite_aof(url: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    // Refused while one is already running: that one is waited for all the same.
    let _: redis::RedisResult<()> = redis::cmd("BGREWRITEAOF")
        .query_async(&mut connection)
        .await;
    aof_rewritten(url).await;
}

/// Returns once no AOF rewrite runs or is scheduled (one Redis started by itself included).
pub async fn aof_rewritten(url: &str) {
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let persistence = info(url, "persistence").await;
        let busy = ["aof_rewrite_in_progress:1", "aof_rewrite_scheduled:1"]
            .iter()
            .any(|flag| persistence.lines().any(|l| l.trim() == *flag));
        if !busy {
            return;
        }
    }
}

/// The bytes of every bucket's event stream (`MEMORY USAGE … SAMPLES 0`: each entry counted).
/// The streams are capped by entries (`EVENTS_MAXLEN` a bucket), not bytes: a figure of bytes per
/// item that includes them counts how much larger the newest entries are than those they replace.
pub async fn streams_memory(url: &str) -> u64 {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*:events")
        .query_async(&mut connection)
        .await
        .unwrap();
    let mut total = 0;
    for key in keys {
        let bytes: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(&mut connection)
            .await
            .unwrap();
        total += bytes.unwrap_or_default();
    }
    total
}

/// Redis's `used_memory`.
pub async fn used_memory(url: &str) -> u64 {
    info(url, "memory")
        .await
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// CPU seconds (user + system) Redis has used, from `INFO cpu`.
pub async fn redis_cpu_s(url: &str) -> f64 {
    let info = info(url, "cpu").await;
    ["used_cpu_sys:", "used_cpu_user:"]
        .iter()
        .filter_map(|field| info.lines().find_map(|l| l.strip_prefix(field)))
        .map(|v| v.trim().parse::<f64>().unwrap())
        .sum()
}

/// The bytes of redis-server's append-only file (`aof_current_size`: its base and what was
/// appended since), 0 without AOF.
pub async fn aof_bytes(url: &str) -> u64 {
    let info = info(url, "persistence").await;
    info.lines()
        .find_map(|l| l.strip_prefix("aof_current_size:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// CPU seconds (user + system) process `pid` (`self` for this one) has used, from
/// `/proc/<pid>/stat` (clock ticks, taken as the usual 100 per second).
pub fn process_cpu_s(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// Redis's `INFO commandstats` lines for `commands` (calls, µs per call; every command when
/// `commands` is empty), for a note.
pub async fn command_stats(url: &str, commands: &[&str]) -> String {
    info(url, "commandstats")
        .await
        .lines()
        .filter(|l| l.starts_with("cmdstat_"))
        .filter(|l| {
            commands.is_empty()
                || commands
                    .iter()
                    .any(|c| l.starts_with(&format!("cmdstat_{c}:")))
        })
        .map(|l| l.split(",rejected").next().unwrap_or(l).to_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Zeroes Redis's command statistics (`CONFIG RESETSTAT`), so that the next
/// [`command_stats`] counts from now.
pub async fn reset_stats(url: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut connection)
        .await
        .unwrap();
}
