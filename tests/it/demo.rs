//! `askbridge demo`: the four questions answered by typing (a command, a plain answer) and over
//! HTTP from "another terminal".

use crate::support::{askbridge_binary, free_port, http};
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_runs_end_to_end() {
    let port = free_port();
    let mut child = Command::new(askbridge_binary())
        .args(["demo", "--ephemeral"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ASKBRIDGE_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut transcript = String::new();
    let mut next_question = async |transcript: &mut String| -> String {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .expect("output in time")
                .unwrap()
                .expect("demo still running");
            transcript.push_str(&line);
            transcript.push('\n');
            if let Some(rest) = line.strip_prefix("── question ")
                && rest.contains("(expires")
            {
                return rest.split_whitespace().next().unwrap().to_owned();
            }
        }
    };
    let library = next_question(&mut transcript).await;
    stdin
        .write_all(format!("/answer {library} 2\n").as_bytes())
        .await
        .unwrap();
    let archive = next_question(&mut transcript).await;
    let reply = http()
        .post(format!(
            "http://127.0.0.1:{port}/api/questions/{archive}/reply"
        ))
        .json(&json!({"answer": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    let _features = next_question(&mut transcript).await;
    stdin.write_all(b"1,3\n").await.unwrap();
    let _name = next_question(&mut transcript).await;
    stdin.write_all(b"Aurora\n").await.unwrap();
    // The follow-up run: started by a message, each answer resumes it.
    stdin.write_all(b"/release 2.0\n").await.unwrap();
    let _channel = next_question(&mut transcript).await;
    stdin.write_all(b"2\n").await.unwrap();
    let _notes = next_question(&mut transcript).await;
    stdin.write_all(b"First beta\n").await.unwrap();
    let _publish = next_question(&mut transcript).await;
    stdin.write_all(b"yes\n").await.unwrap();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("output in time")
            .unwrap()
            .expect("still running");
        transcript.push_str(&line);
        transcript.push('\n');
        if line.starts_with("✓ release:") {
            break;
        }
    }
    drop(stdin);
    while let Some(line) = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("output in time")
        .unwrap()
    {
        transcript.push_str(&line);
        transcript.push('\n');
    }
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(status.success(), "{transcript}");
    for expected in [
        "→ library: got date-fns",
        "was resolved on another surface: Answered: yes, by api via api",
        "→ archive: yes",
        "→ features: got dark mode, CSV export",
        "→ release name: got Aurora",
        "The demo function is done.",
        "▶ release started.",
        "✓ release: Published 2.0 on beta at ",
    ] {
        assert!(
            transcript.contains(expected),
            "missing {expected:?} in:\n{transcript}"
        );
    }
}
