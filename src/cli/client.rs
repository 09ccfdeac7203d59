//! Talking to a running askbridge over its HTTP API: the client the `pending`, `audit`, `ask`,
//! `confirm`, `approve` and `exec` commands share, and the first two of them.
//!
//! It reads only `ASKBRIDGE_URL` (else `http://` + `ASKBRIDGE_HTTP_ADDR`, else
//! `http://127.0.0.1:8080`) and `ASKBRIDGE_API_TOKEN`: a script on another machine needs
//! nothing of the server's configuration.

use super::{AuditArgs, PendingArgs, Remote};
use anyhow::{Context, bail};
use askbridge::client::ApiClient;
use askbridge::config;
use askbridge_core::audit::AuditEntry;
use askbridge_core::{Question, render};

/// The running askbridge named by `remote` and the environment (`ASKBRIDGE_URL`, else
/// `http://` + `ASKBRIDGE_HTTP_ADDR`, else `http://127.0.0.1:8080`; `ASKBRIDGE_API_TOKEN`).
pub(crate) fn api(remote: &Remote) -> anyhow::Result<ApiClient> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let base = match &remote.url {
        Some(url) => url.clone(),
        None => format!(
            "http://{}",
            env(config::HTTP_ADDR).unwrap_or_else(|| "127.0.0.1:8080".into())
        ),
    };
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("--url `{base}` is not an http:// or https:// URL");
    }
    Ok(ApiClient::new(&base, env(config::API_TOKEN)))
}

/// `askbridge pending`.
pub(crate) async fn pending(args: PendingArgs) -> anyhow::Result<()> {
    let query = [("session_id", args.session.clone().unwrap_or_default())];
    let body = api(&args.remote)?.get("/api/questions", &query).await?;
    let questions: Vec<Question> =
        serde_json::from_value(body["questions"].clone()).context("unexpected answer shape")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&questions)?);
        return Ok(());
    }
    print!(
        "{}",
        askbridge_core::text::printable(&pending_table(&questions))
    );
    Ok(())
}

/// `askbridge audit`.
pub(crate) async fn audit(args: AuditArgs) -> anyhow::Result<()> {
    let since = match &args.since {
        Some(text) => since_param(text)?,
        None => String::new(),
    };
    let query = [
        ("session_id", args.session.clone().unwrap_or_default()),
        ("since", since),
    ];
    let body = api(&args.remote)?.get("/api/audit", &query).await?;
    let entries: Vec<AuditEntry> =
        serde_json::from_value(body["entries"].clone()).context("unexpected answer shape")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(());
    }
    if entries.is_empty() {
        say!("No audit records.");
    }
    for entry in entries {
        let value = entry.value.map(|v| format!(" {v}")).unwrap_or_default();
        let status = entry.status.map(|s| format!(" {s}")).unwrap_or_default();
        let rule = entry
            .rule_id
            .map(|r| format!(" rule={r}"))
            .unwrap_or_default();
        let message = entry.message.map(|m| format!(" — {m}")).unwrap_or_default();
        say!(
            "{}  {:<12} {:<10} by {} via {}{status}{value}{rule}{message}",
            entry.at,
            serde_json::to_value(entry.event)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            entry.question_id.unwrap_or_default(),
            entry.by,
            entry.via,
        );
    }
    Ok(())
}

/// `--since`: an RFC 3339 time, or a span back from now (`30m`, `2h`, `7d`), checked here so a
/// typo is reported before any request.
fn since_param(text: &str) -> anyhow::Result<String> {
    askbridge_core::Millis::parse_since(text, askbridge_core::Millis::now())
        .map(|at| at.to_rfc3339())
        .with_context(|| {
            format!("--since `{text}` is neither an RFC 3339 time nor a span like 30m, 2h or 7d")
        })
}

fn pending_table(questions: &[Question]) -> String {
    if questions.is_empty() {
        return "No pending questions.\n".to_owned();
    }
    let now = askbridge_core::Millis::now();
    let mut out = format!(
        "{:<10}  {:<8}  {:<16}  {:<10}  {:<24}  {}\n",
        "ID", "KIND", "SESSION", "EXPIRES", "TARGETS", "PROMPT"
    );
    for q in questions {
        out.push_str(&format!(
            "{:<10}  {:<8}  {:<16}  {:<10}  {:<24}  {}\n",
            q.id,
            format!("{:?}", q.kind).to_lowercase(),
            render::shorten(&q.session_id, 16),
            render::time_left(q, now),
            render::shorten(&q.targets.join(","), 24),
            render::shorten(&q.prompt, 60),
        ));
    }
    out
}
