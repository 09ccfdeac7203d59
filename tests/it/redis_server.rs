//! A real redis-server for one test (or benchmark): a free loopback port, a temp dir, AOF on,
//! killed when dropped; `kill` and `restart` inject crashes. Shared by `tests/it` and `benches/`.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free TCP port on loopback (bound and released; good enough for tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn redis_server_binary() -> PathBuf {
    for candidate in [
        "/usr/bin/redis-server",
        "/usr/local/bin/redis-server",
        "/usr/sbin/redis-server",
    ] {
        if std::path::Path::new(candidate).exists() {
            return candidate.into();
        }
    }
    panic!(
        "redis-server is not installed: run ./scripts/test (it installs it) or `apt-get install redis-server`"
    );
}

/// A redis-server owned by one test: killed when dropped.
pub struct RedisServer {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// Settings that replace the defaults below (`--appendfsync everysec`, say).
    extra: Vec<String>,
}

impl RedisServer {
    /// AOF with an fsync per write: nothing acknowledged is lost when it is killed.
    pub fn start() -> Self {
        RedisServer::start_with(&[])
    }

    /// [`RedisServer::start`] with `extra` settings after the defaults (later ones win).
    pub fn start_with(extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut server = RedisServer {
            port: free_port(),
            dir,
            child: None,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        server.launch();
        server
    }

    fn launch(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("redis.log")).unwrap();
        let child = Command::new(redis_server_binary())
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
            ])
            .args([
                "--appendfsync",
                "always",
                "--protected-mode",
                "no",
                "--daemonize",
                "no",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if ping(self.port) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server on port {} did not answer PING", self.port);
    }

    /// Where redis-server keeps its files (the AOF is under `appendonlydir/`).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// A connection of the test's own, to look at or change what askbridge stored.
    pub async fn connection(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// SIGKILL: no shutdown save, like a crash.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and directory (the AOF is reloaded).
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buffer = [0u8; 16];
    matches!(stream.read(&mut buffer), Ok(n) if buffer[..n].starts_with(b"+PONG"))
}
