//! The MCP server as an agent client drives it: `askbridge mcp` over stdio (JSON-RPC lines), and
//! `/mcp` over streamable HTTP. (The official Python SDK drives both in `scripts/mcp-check`.)

use crate::support::{askbridge_binary, eventually_some, http, memory_bridge, serve};
use askbridge::http::{AppState, app};
use askbridge_core::Secret;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const WITHIN: Duration = Duration::from_secs(15);

/// A client speaking MCP's stdio transport to `askbridge mcp`.
struct Client {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Notifications read while waiting for a response.
    notes: Vec<Value>,
}

impl Client {
    fn spawn(base: &str, session: &str) -> Self {
        let mut child = Command::new(askbridge_binary())
            .args(["mcp", "--progress-s", "0.3"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ASKBRIDGE_URL", base)
            .env("ASKBRIDGE_SESSION", session)
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Client {
            _child: child,
            stdin,
            lines,
            notes: Vec::new(),
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// The response to request `id`, keeping the notifications that come first.
    async fn response(&mut self, id: u64) -> Value {
        loop {
            let line = tokio::time::timeout(WITHIN, self.lines.next_line())
                .await
                .expect("an MCP message in time")
                .unwrap()
                .expect("the server is still there");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
            self.notes.push(message);
        }
    }

    async fn initialize(&mut self, version: &str) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "askbridge-test", "version": "0"}}}),
        )
        .await;
        let response = self.response(1).await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        response
    }

    async fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": {"progressToken": format!("p{id}")}}}),
        )
        .await;
        self.response(id).await["result"].clone()
    }
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn pending_in(base: &str, session: &str) -> Value {
    let (base, session) = (base.to_owned(), session.to_owned());
    eventually_some(WITHIN, "the question asked", move || {
        let (base, session) = (base.clone(), session.clone());
        async move {
            let list: Value = http()
                .get(format!("{base}/api/questions?session_id={session}"))
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            list["questions"].as_array()?.first().cloned()
        }
    })
    .await
}

async fn reply(base: &str, id: &str, body: Value) {
    let status = http()
        .post(format!(
            "{base}/api/questions/{id}/{}",
            if body.get("answer").is_some() {
                "reply"
            } else {
                "reject"
            }
        ))
        .json(&body)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_asks_waits_with_progress_and_gets_the_answer() {
    let (bridge, _) = memory_bridge().await;
    let base = serve(app(AppState::new(bridge, None))).await;
    let mut client = Client::spawn(&base, "agent-1");
    let init = client.initialize("2025-06-18").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "askbridge");
    client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let tools = client.response(2).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in askbridge::mcp::TOOLS {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }

    // A blocking ask: progress while nobody answers, then the answer in words.
    client
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "ask_user", "arguments": {"prompt": "Which date library?", "options": ["dayjs", "luxon"]},
            "_meta": {"progressToken": "wait-1"}}}))
        .await;
    let q = pending_in(&base, "agent-1").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    reply(&base, q["id"].as_str().unwrap(), json!({"answer": "luxon"})).await;
    let result = client.response(3).await["result"].clone();
    assert_eq!(
        text(&result),
        "The person answered: luxon (by api via api)."
    );
    assert_eq!(result["structuredContent"]["status"], "answered");
    let progress: Vec<&Value> = client
        .notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(
        !progress.is_empty(),
        "no progress while waiting: {:?}",
        client.notes
    );
    assert_eq!(progress[0]["params"]["progressToken"], "wait-1");

    // The non-blocking form: pending at once, the answer later.
    let result = client
        .call(4, "confirm", json!({"prompt": "Ship it?", "wait": false}))
        .await;
    let said = text(&result);
    let id = result["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        said.starts_with(&format!("Pending: question {id}")),
        "{said}"
    );
    let result = client
        .call(5, "get_answer", json!({"id": id, "wait_s": 0}))
        .await;
    assert!(text(&result).starts_with("Pending"), "{}", text(&result));
    reply(&base, &id, json!({"answer": true})).await;
    let result = client.call(6, "get_answer", json!({"id": id})).await;
    assert_eq!(text(&result), "The person answered: yes (by api via api).");

    // Declined, with the person's words; timed out, with and without a default.
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "ask_user", "arguments": {"prompt": "Rename the table?"}}}),
        )
        .await;
    let q = pending_in(&base, "agent-1").await;
    reply(
        &base,
        q["id"].as_str().unwrap(),
        json!({"message": "not during the freeze"}),
    )
    .await;
    let result = client.response(7).await["result"].clone();
    assert_eq!(
        text(&result),
        "The person declined to answer: not during the freeze."
    );
    let result = client
        .call(
            8,
            "ask_user",
            json!({"prompt": "Size?", "options": ["S", "M"], "timeout_s": 0.5, "default": "M"}),
        )
        .await;
    assert_eq!(
        text(&result),
        "Nobody answered in time; the default was used: M."
    );
    let result = client
        .call(
            9,
            "ask_user",
            json!({"prompt": "Anyone?", "timeout_s": 0.5}),
        )
        .await;
    assert_eq!(
        text(&result),
        "Nobody answered in time, and there is no default."
    );

    // An approval, bound to its action.
    client
        .send(json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
            "name": "request_approval",
            "arguments": {"tool": "shell", "args": {"command": "rm -rf build"}, "answerers": ["api"]}}}))
        .await;
    let q = pending_in(&base, "agent-1").await;
    assert_eq!(q["action"]["args"]["command"], "rm -rf build");
    reply(
        &base,
        q["id"].as_str().unwrap(),
        json!({"answer": "reject", "message": "keep the cache"}),
    )
    .await;
    let result = client.response(10).await["result"].clone();
    assert_eq!(
        text(&result),
        "Rejected by api: keep the cache. Do not run the action."
    );
}

#[tokio::test]
async fn newer_protocol_versions_are_served_and_an_absent_server_is_named() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut client = Client::spawn(&base, "agent-2");
    let init = client.initialize("2025-11-25").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let result = client
        .call(2, "ask_user", json!({"prompt": "Hello?"}))
        .await;
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains(&base), "{}", text(&result));
}

#[tokio::test]
async fn mcp_over_http_needs_the_token() {
    let (bridge, _) = memory_bridge().await;
    let token = Secret::new("t0k");
    let base = serve(app(AppState::new(bridge, Some(&token)))).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "askbridge-test", "version": "0"}}});
    let request = || {
        http()
            .post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
    };
    assert_eq!(request().send().await.unwrap().status(), 401);
    let response = request().bearer_auth("t0k").send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("mcp-session-id"));
    let body = response.text().await.unwrap();
    assert!(
        body.contains("\"protocolVersion\":\"2025-06-18\""),
        "{body}"
    );
}
