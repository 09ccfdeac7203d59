//! A minimal HTTP/1.1 client for the load loops: one keep-alive connection per simulated client,
//! each request written with one syscall and its response read by its `Content-Length`.
//!
//! Why not reqwest: on this 2-core machine the client shares the cores with askbridge and
//! redis-server, so what the client spends is taken from what it measures. reqwest (built for
//! size here, with its pool, URL parsing and header maps) spent ~80 µs per run resume of the
//! ~400 µs the three processes spent together. A load generator should cost next to nothing, as
//! `wrk` and `redis-benchmark` do; this one speaks just enough HTTP for askbridge's JSON routes.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The benchmark's question: a 40-character prompt, three short options, no target.
pub fn ask_body(session: &str) -> Value {
    json!({
        "session_id": session,
        "prompt": "Which library for date formatting, please?",
        "options": ["dayjs", "luxon", "date-fns"],
        "targets": [],
    })
}

/// One keep-alive connection to an askbridge.
pub struct Connection {
    stream: TcpStream,
    host: String,
    /// Bytes read past the last response (none with one request in flight, kept to be exact).
    buffer: Vec<u8>,
}

impl Connection {
    /// Connects to `base` (`http://127.0.0.1:PORT`).
    pub async fn open(base: &str) -> Self {
        let host = base.trim_start_matches("http://").trim_end_matches('/');
        let stream = TcpStream::connect(host)
            .await
            .expect("connect to askbridge");
        stream.set_nodelay(true).unwrap();
        Connection {
            stream,
            host: host.to_owned(),
            buffer: Vec::with_capacity(8192),
        }
    }

    /// `POST path` with a JSON body: the status and the JSON response.
    pub async fn post(&mut self, path: &str, body: &Value) -> (u16, Value) {
        self.post_as(path, body).await
    }

    /// `POST path` with a JSON body: the status and the response read as a `T` (only the
    /// fields a load loop looks at, as a client would, rather than a tree of every value).
    pub async fn post_as<T: serde::de::DeserializeOwned>(
        &mut self,
        path: &str,
        body: &Value,
    ) -> (u16, T) {
        let body = serde_json::to_vec(body).unwrap();
        let (status, response) = self.request("POST", path, &body).await;
        (status, parse(&response))
    }

    /// `GET path`: the status and the JSON response.
    pub async fn get(&mut self, path: &str) -> (u16, Value) {
        let (status, response) = self.request("GET", path, &[]).await;
        (status, parse(&response))
    }

    /// `POST /api/questions` with the benchmark's question in `session`: its id.
    pub async fn ask(&mut self, session: &str) -> String {
        let (status, created) = self.post("/api/questions", &ask_body(session)).await;
        assert_eq!(status, 201, "{created}");
        created["id"].as_str().unwrap().to_owned()
    }

    /// `POST /api/questions/{id}/reply` with `answer`, which must be taken.
    pub async fn reply(&mut self, id: &str, answer: Value) {
        let body = json!({ "answer": answer });
        let (status, replied) = self
            .post(&format!("/api/questions/{id}/reply"), &body)
            .await;
        assert_eq!(status, 200, "{replied}");
    }

    async fn request(&mut self, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            self.host,
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        self.stream.write_all(&request).await.unwrap();
        // The head: up to the blank line.
        let head_end = loop {
            if let Some(at) = find(&self.buffer, b"\r\n\r\n") {
                break at + 4;
            }
            self.fill().await;
        };
        let head = std::str::from_utf8(&self.buffer[..head_end]).expect("an ASCII head");
        let status: u16 = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status in {head:?}"));
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap_or_else(|| panic!("no content-length in {head:?}"));
        while self.buffer.len() < head_end + length {
            self.fill().await;
        }
        let response = self.buffer[head_end..head_end + length].to_vec();
        self.buffer.drain(..head_end + length);
        (status, response)
    }

    async fn fill(&mut self) {
        let read = self.stream.read_buf(&mut self.buffer).await.unwrap();
        assert!(read > 0, "askbridge closed the connection mid-response");
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> T {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}
