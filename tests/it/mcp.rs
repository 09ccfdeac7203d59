//! The MCP server as an agent client drives it: `askbridge mcp` over stdio (JSON-RPC lines), and
//! `/mcp` over streamable HTTP. (The official Python SDK drives both in `scripts/mcp-check`.)

use crate::support::{
    askbridge_binary, eventually, eventually_some, get_json, http, memory_bridge,
    pending_in_session, serve, serve_api, serve_api_with,
};
use askbridge::http::{AppState, app};
use askbridge_core::Secret;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const WITHIN: Duration = Duration::from_secs(15);

/// A client speaking MCP's stdio transport to `askbridge mcp`.
pub(crate) struct Client {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Notifications read while waiting for a response.
    notes: Vec<Value>,
}

impl Client {
    pub(crate) fn spawn(base: &str, session: &str) -> Self {
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

    pub(crate) async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// The response to request `id`, keeping the notifications that come first.
    pub(crate) async fn response(&mut self, id: u64) -> Value {
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

    pub(crate) async fn initialize(&mut self, version: &str) -> Value {
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

    pub(crate) async fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": {"progressToken": format!("p{id}")}}}),
        )
        .await;
        self.response(id).await["result"].clone()
    }
}

pub(crate) fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
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
    let base = serve_api(bridge).await;
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
    let q = pending_in_session(&base, "agent-1").await;
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
    let q = pending_in_session(&base, "agent-1").await;
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
    let q = pending_in_session(&base, "agent-1").await;
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

/// `ask_user` takes reminders and a quorum of its answerers, as the HTTP API does; a quorum the
/// answerers cannot reach is refused with the reason, and nothing is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_asks_with_reminders_and_a_quorum() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    let mut client = Client::spawn(&base, "agent-q");
    client.initialize("2025-06-18").await;
    let refused = client
        .call(
            2,
            "ask_user",
            json!({"prompt": "Ship?", "answerers": ["api"], "quorum": 2, "wait": false}),
        )
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("quorum"), "{}", text(&refused));
    let result = client
        .call(
            3,
            "ask_user",
            json!({"prompt": "Ship?", "answerers": ["api", "telegram:1"], "quorum": 2,
                   "remind_after_s": 60, "reminders": 2, "wait": false}),
        )
        .await;
    assert!(text(&result).starts_with("Pending"), "{}", text(&result));
    let q = pending_in_session(&base, "agent-q").await;
    let listed = get_json(&base, "/api/questions?session_id=agent-q").await;
    assert_eq!(
        listed["questions"].as_array().unwrap().len(),
        1,
        "the refused ask stored nothing"
    );
    assert_eq!(
        q["quorum"],
        json!({"needs": 2, "of": ["api", "telegram:1"]})
    );
    assert_eq!(q["reminders"], json!({"after_s": 60.0, "times": 2}));
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
    let base = serve_api_with(bridge, Some(&token)).await;
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

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "askbridge-test", "version": "0"}}})
}

fn to_mcp(base: &str) -> reqwest::RequestBuilder {
    http()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
}

#[tokio::test]
async fn mcp_sessions_are_capped_and_malformed_calls_are_400() {
    let (bridge, _) = memory_bridge().await;
    let state = AppState::new(bridge, None).with_mcp_sessions(3, Duration::from_secs(600));
    let base = serve(app(state)).await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let response = to_mcp(&base).json(&initialize()).send().await.unwrap();
        assert_eq!(response.status(), 200);
        sessions.push(response.headers()["mcp-session-id"].clone());
    }
    let refused = to_mcp(&base).json(&initialize()).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert!(!refused.headers().contains_key("mcp-session-id"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], 1, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ASKBRIDGE_MAX_MCP_SESSIONS"), "{body}");
    // A session ended makes room for another.
    let ended = http()
        .delete(format!("{base}/mcp"))
        .header("mcp-session-id", sessions[0].clone())
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    let response = to_mcp(&base).json(&initialize()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    // What is not JSON-RPC is a 400 with a JSON-RPC error, not a 415.
    for malformed in ["{\"jsonrpc\": ", "[1, 2", "{\"hello\": 1}", "42"] {
        let response = to_mcp(&base)
            .header("content-type", "application/json")
            .body(malformed)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{malformed}");
        let body: Value = response.json().await.unwrap();
        assert!(body["error"]["message"].is_string(), "{malformed}: {body}");
    }
}

#[tokio::test]
async fn expired_mcp_sessions_give_their_place_back() {
    let (bridge, _) = memory_bridge().await;
    let state = AppState::new(bridge, None).with_mcp_sessions(2, Duration::from_secs(1));
    let base = serve(app(state)).await;
    for _ in 0..2 {
        let response = to_mcp(&base).json(&initialize()).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    // Both expire after a second idle; their places come back (rmcp kept expired ones once).
    eventually(
        Duration::from_secs(30),
        "an expired session's place",
        || {
            let base = base.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let response = to_mcp(&base).json(&initialize()).send().await.unwrap();
                response.status() == 200
            }
        },
    )
    .await;
}

/// A tool call in MCP session `session` over HTTP: the result, or the refusal's status and body.
async fn call_in(base: &str, session: Option<&str>, tool: &str, arguments: Value) -> (u16, Value) {
    let mut request = to_mcp(base).header("mcp-protocol-version", "2025-06-18");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    let response = request.json(&call).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

#[tokio::test]
async fn an_mcp_session_over_http_names_its_questions_and_ends_on_delete() {
    let (bridge, _) = memory_bridge().await;
    let base = serve(app(AppState::new(bridge, None))).await;
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let response = to_mcp(&base).json(&initialize()).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        sessions.push(id);
    }
    let (first, second) = (sessions[0].as_str(), sessions[1].as_str());
    assert_ne!(first, second);
    let ask = json!({"prompt": "Ship the first?", "wait": false});
    let (status, asked) = call_in(&base, Some(first), "ask_user", ask).await;
    assert_eq!(status, 200, "{asked}");
    let id = asked["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Each request is served on its own; the session's name ties them together.
    let (_, listed) = call_in(&base, Some(first), "list_pending", json!({})).await;
    assert!(text(&listed["result"]).contains(&id), "{listed}");
    let (_, other) = call_in(&base, Some(second), "list_pending", json!({})).await;
    assert_eq!(
        text(&other["result"]),
        "No questions are waiting.",
        "{other}"
    );
    // A call naming no session, or one never opened, is refused with a JSON-RPC error.
    let (status, refused) = call_in(&base, None, "list_pending", json!({})).await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused["error"]["message"].is_string(), "{refused}");
    let (status, refused) = call_in(&base, Some("nosuchsession"), "list_pending", json!({})).await;
    assert_eq!(status, 404, "{refused}");
    // DELETE ends a session: it is unknown afterwards.
    let end = || {
        http()
            .delete(format!("{base}/mcp"))
            .header("mcp-session-id", first)
            .send()
    };
    assert_eq!(end().await.unwrap().status(), 202);
    assert_eq!(end().await.unwrap().status(), 404);
    let (status, _) = call_in(&base, Some(first), "list_pending", json!({})).await;
    assert_eq!(status, 404);
}

/// The Python interpreter of the venv holding the official MCP SDK (`scripts/test` makes it).
fn python_with_mcp() -> Option<std::path::PathBuf> {
    let python =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp-venv/bin/python");
    let ok = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(python)
}

/// Plays the person: answers each question as the bracket at the end of its prompt says.
async fn person(base: String, fake: crate::fakes::telegram::FakeTelegram) {
    let mut handled = std::collections::HashSet::new();
    loop {
        let list: Value = match http().get(format!("{base}/api/questions")).send().await {
            Ok(response) => response.json().await.unwrap_or_default(),
            Err(_) => Value::Null,
        };
        for q in list["questions"].as_array().cloned().unwrap_or_default() {
            let (id, prompt) = (
                q["id"].as_str().unwrap().to_owned(),
                q["prompt"].as_str().unwrap().to_owned(),
            );
            if !handled.insert(id.clone()) {
                continue;
            }
            let path = |what: &str| format!("{base}/api/questions/{id}/{what}");
            if prompt.ends_with("tap luxon]") {
                // Long enough for progress notifications to go out first.
                tokio::time::sleep(Duration::from_millis(1500)).await;
                let shown = eventually_some(WITHIN, "shown on Telegram", || {
                    let (fake, id) = (fake.clone(), id.clone());
                    async move {
                        fake.sent_in(crate::telegram::GROUP)
                            .into_iter()
                            .find(|m| m.text.contains(&id) && m.markup.is_some())
                    }
                })
                .await;
                fake.tap(
                    crate::telegram::GROUP,
                    shown.id,
                    &crate::telegram::alice(),
                    &shown.payload("2. luxon"),
                );
            } else if prompt.ends_with("reply yes]") {
                http()
                    .post(path("reply"))
                    .json(&json!({"answer": true}))
                    .send()
                    .await
                    .unwrap();
            } else if prompt.ends_with("decline]") {
                http()
                    .post(path("reject"))
                    .json(&json!({"message": "not during the freeze"}))
                    .send()
                    .await
                    .unwrap();
            } else if prompt.ends_with("edit replicas to 3]") {
                let args = json!({"env": "staging", "replicas": 3});
                http()
                    .post(path("reply"))
                    .json(&json!({"decision": "edit", "args": args}))
                    .send()
                    .await
                    .unwrap();
            } else if prompt.ends_with("with digest]") {
                let digest = q["action"]["digest"].clone();
                http()
                    .post(path("reply"))
                    .json(&json!({"answer": "once", "digest": digest}))
                    .send()
                    .await
                    .unwrap();
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdk_drives_both_transports() {
    let Some(python) = python_with_mcp() else {
        assert!(
            std::env::var("ASKBRIDGE_REQUIRE_PYTHON_MCP").is_err(),
            "scripts/test installed the Python MCP SDK, but target/mcp-venv cannot import it"
        );
        eprintln!("skipped: no Python MCP SDK in target/mcp-venv (scripts/test installs it)");
        return;
    };
    let fake = crate::fakes::telegram::FakeTelegram::start();
    let telegram = askbridge_telegram::Telegram::connect(askbridge_telegram::TelegramOptions {
        token: "1:fake".into(),
        api_url: Some(fake.base.clone()),
        webhook: None,
    })
    .await
    .unwrap();
    let (bridge, _) = crate::support::memory_bridge_and(telegram.channel()).await;
    let inbox: std::sync::Arc<dyn askbridge_core::Inbox> = std::sync::Arc::new(bridge.clone());
    let shutdown = bridge.shutdown_signal();
    let polling = inbox.clone();
    tokio::spawn(async move { telegram.run(polling, shutdown).await });
    let state = AppState::new(bridge.clone(), None).with_mcp_progress(Duration::from_millis(500));
    let base = serve(app(state)).await;
    let answering = tokio::spawn(person(base.clone(), fake.clone()));
    for transport in ["stdio", "http"] {
        let mut command = Command::new(&python);
        command
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/agent.py"))
            .arg(transport);
        if transport == "stdio" {
            command.arg(askbridge_binary());
        }
        let output = tokio::time::timeout(Duration::from_secs(60), command.arg(&base).output())
            .await
            .expect("the Python agent finished")
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{transport}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!("--- Python MCP client over {transport} ---\n{stdout}");
        let steps: std::collections::HashMap<String, Value> = stdout
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .map(|v| (v["step"].as_str().unwrap().to_owned(), v))
            .collect();
        assert_eq!(steps["init"]["server"], "askbridge");
        assert_eq!(
            steps["tools"]["names"],
            json!([
                "ask_user",
                "confirm",
                "get_answer",
                "list_pending",
                "request_approval"
            ])
        );
        assert_eq!(
            steps["ask"]["text"],
            "The person answered: luxon (by @alice via telegram)."
        );
        assert!(
            steps["ask"]["progress"].as_u64().unwrap() >= 1,
            "{transport}: no progress notification"
        );
        assert!(
            steps["pending"]["text"]
                .as_str()
                .unwrap()
                .starts_with("Pending: question ")
        );
        assert_eq!(
            steps["get_answer"]["text"],
            "The person answered: yes (by api via api)."
        );
        assert_eq!(
            steps["declined"]["text"],
            "The person declined to answer: not during the freeze."
        );
        assert_eq!(
            steps["timeout"]["text"],
            "Nobody answered in time; the default was used: M."
        );
        assert_eq!(
            steps["approval"]["text"],
            "Approved: api allowed it once (via api). You may run the action, with exactly the arguments you asked about."
        );
        // An edit, read by the SDK: the sentence and the arguments to run with.
        let edited = &steps["edited"];
        assert_eq!(
            edited["text"],
            "Approved with changes: run it with these arguments instead: {\"env\":\"staging\",\"replicas\":3} (api via api). Do not run it with the arguments you proposed.",
            "{edited}"
        );
        assert_eq!(
            edited["structured"]["args"],
            json!({"env": "staging", "replicas": 3})
        );
        assert_eq!(
            edited["structured"]["proposed_args"],
            json!({"env": "staging", "replicas": 2})
        );
    }
    answering.abort();
}
