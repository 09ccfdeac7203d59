//! `askbridge mcp`: the MCP server over stdio, a thin client of a running askbridge, so that many
//! agent sessions share one bot connection. stdout carries the protocol; everything else goes to
//! stderr.

use super::McpArgs;
use super::client::api;
use askbridge::mcp::{AskServer, HttpBackend, McpOptions};
use rmcp::ServiceExt;
use std::sync::Arc;
use std::time::Duration;

/// Serves until the client closes stdin.
pub(crate) async fn mcp(args: McpArgs) -> anyhow::Result<()> {
    let api = api(&args.remote)?;
    let backend = HttpBackend::new(api);
    // Serve anyway: the client then lists the tools, and each call says what is wrong.
    if let Err(why) = backend.reachable().await {
        tell!("askbridge mcp: {why}");
    }
    let mut options = McpOptions::new();
    if let Some(session) = args.session.filter(|s| !s.trim().is_empty()) {
        options.session = session;
    }
    if args.progress_s.is_finite() && args.progress_s > 0.0 {
        options.progress_every = Duration::from_secs_f64(args.progress_s);
    }
    let server = AskServer::new(Arc::new(backend), options)
        .serve(rmcp::transport::stdio())
        .await?;
    server.waiting().await?;
    Ok(())
}
