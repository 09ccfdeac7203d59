//! The MCP server: tools an AI agent calls to ask the person it works for, on the chat app they
//! are on, and go on with the answer.
//!
//! - `ask_user`, `confirm`, `request_approval` ask and wait. While a call waits, a progress
//!   notification goes out every [`McpOptions::progress_every`] (15 s) when the client sent a
//!   progress token: many clients cut a tool call at 60 s unless progress resets their timer.
//!   With `wait: false` they return at once with the question's id ("pending"), and
//!   `get_answer` waits for or fetches the answer later — for clients that give up early anyway.
//! - `list_pending` lists what is waiting.
//!
//! Results are plain sentences the model can act on, with the outcome explicit: answered (and
//! what), declined (with the person's message), timed out (with the default used, or none),
//! cancelled. The same outcome is in the result's structured content as JSON.
//!
//! Layout: `backend.rs` (where questions go: HTTP or this process's bridge), `words.rs` (outcomes
//! as sentences), this file (the tools).

mod backend;
mod batch;
mod words;

pub use backend::{Backend, BridgeBackend, HttpBackend};

use askbridge_core::error::Chain;
use askbridge_core::quorum::Quorum;
use askbridge_core::{Answer, NewQuestion, Question};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, Implementation, ProgressNotificationParam, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Settings of the MCP server.
#[derive(Clone, Debug)]
pub struct McpOptions {
    /// The session its questions belong to.
    pub session: String,
    /// How often a waiting call reports progress.
    pub progress_every: Duration,
}

impl McpOptions {
    /// A new session of its own (`mcp-<id>`), progress every 15 s.
    pub fn new() -> Self {
        McpOptions {
            session: format!("mcp-{}", askbridge_core::QuestionId::random()),
            progress_every: Duration::from_secs(15),
        }
    }
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions::new()
    }
}

/// The MCP server over a [`Backend`].
#[derive(Clone)]
pub struct AskServer {
    backend: Arc<dyn Backend>,
    options: McpOptions,
    tool_router: ToolRouter<AskServer>,
}

impl std::fmt::Debug for AskServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskServer")
            .field("session", &self.options.session)
            .finish()
    }
}

/// Where and to whom, for every asking tool.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct Audience {
    /// Where to show the question, like `telegram:-100123` or `discord:456` (default: the
    /// server's default targets).
    #[serde(default)]
    pub targets: Vec<String>,
    /// Who may answer, like `telegram:42` (default: anyone who sees it; approvals: the server's
    /// approvers).
    #[serde(default)]
    pub answerers: Vec<String>,
    /// Seconds to wait for an answer (default: the server's, 30 minutes).
    pub timeout_s: Option<f64>,
    /// More context shown under the question.
    pub detail: Option<String>,
    /// false: return at once with the question's id, and call `get_answer` later.
    pub wait: Option<bool>,
    /// Seconds before a reminder is sent if nobody has answered (default: none).
    pub remind_after_s: Option<f64>,
    /// How many reminders at most, each `remind_after_s` after the last (default 1).
    pub reminders: Option<u32>,
    /// How many of `answerers` must agree before the answer counts, like 2 for "two of
    /// three" (default: the first answer decides).
    pub quorum: Option<u32>,
}

/// `ask_user`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AskParams {
    /// The question, as the person should read it.
    pub prompt: String,
    /// Choices shown as buttons (none: free text).
    #[serde(default)]
    pub options: Vec<String>,
    /// Several choices may be picked.
    #[serde(default)]
    pub multi: bool,
    /// Free text is accepted besides the options.
    #[serde(default)]
    pub allow_custom: bool,
    /// The answer used when nobody answers in time (a choice, or a list of them with `multi`).
    pub default: Option<Value>,
    #[serde(flatten)]
    pub audience: Audience,
}

/// `confirm`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ConfirmParams {
    /// The yes-or-no question.
    pub prompt: String,
    /// The answer used when nobody answers in time.
    pub default: Option<bool>,
    #[serde(flatten)]
    pub audience: Audience,
}

/// `request_approval`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ApprovalParams {
    /// The tool or action to be run, like `terraform` or `shell` (or give `actions`).
    pub tool: Option<String>,
    /// Its arguments; the approval holds for exactly these.
    #[serde(default)]
    pub args: Value,
    /// The question (default: `Allow <tool>?`).
    pub prompt: Option<String>,
    /// The decisions the person may make, among `once`, `always`, `edit` (run it with changed
    /// arguments), `reject` and `respond` (their text is the tool's result). Default: once,
    /// always, reject.
    pub allowed: Option<Vec<String>>,
    /// A JSON Schema of the arguments, which edited arguments must fit.
    pub args_schema: Option<Value>,
    /// Several actions proposed together (1 to 20), instead of `tool`: the person decides each,
    /// and the result lists each decision in order with the arguments to run it with.
    pub actions: Option<Vec<batch::ActionParams>>,
    #[serde(flatten)]
    pub audience: Audience,
}

/// `get_answer`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GetAnswerParams {
    /// The question's id, as a pending result gave it.
    pub id: String,
    /// Seconds to wait for the answer before returning "still pending" (default 45, at most
    /// 600; 0 only looks).
    pub wait_s: Option<f64>,
}

/// `list_pending`'s arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct ListParams {
    /// Every session's pending questions, not only this agent session's.
    #[serde(default)]
    pub all_sessions: bool,
}

#[tool_router]
impl AskServer {
    /// A server asking through `backend`.
    pub fn new(backend: Arc<dyn Backend>, options: McpOptions) -> Self {
        // The tools' table (names, descriptions, JSON schemas) is the same for every server: one
        // per MCP session made it each time, a good part of a session's cost.
        static TOOLS: std::sync::LazyLock<ToolRouter<AskServer>> =
            std::sync::LazyLock::new(AskServer::tool_router);
        AskServer {
            backend,
            options,
            tool_router: TOOLS.clone(),
        }
    }

    #[tool(
        description = "Ask the user a question on their chat app (Telegram, Discord, ...) and wait for the answer. Give options for a one-tap answer. The result says whether they answered (and what), declined (with their message) or did not answer in time. If your client gives up on long calls, pass wait=false and call get_answer later."
    )]
    async fn ask_user(
        &self,
        Parameters(params): Parameters<AskParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut request = NewQuestion::ask(params.prompt);
        request.options = params.options;
        request.multi = params.multi;
        request.allow_custom = params.allow_custom;
        request.default = match params.default {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(Answer::List(
                items
                    .iter()
                    .map(|v| v.as_str().unwrap_or_default().to_owned())
                    .collect(),
            )),
            Some(Value::Bool(yes)) => Some(Answer::Bool(yes)),
            Some(other) => Some(Answer::Text(
                other
                    .as_str()
                    .map_or_else(|| other.to_string(), str::to_owned),
            )),
        };
        self.ask_and_wait(request, params.audience, ctx).await
    }

    #[tool(
        description = "Ask the user a yes-or-no question on their chat app and wait. The result says yes, no, declined or timed out."
    )]
    async fn confirm(
        &self,
        Parameters(params): Parameters<ConfirmParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut request = NewQuestion::confirm(params.prompt);
        request.default = params.default.map(Answer::Bool);
        self.ask_and_wait(request, params.audience, ctx).await
    }

    #[tool(
        description = "Ask the user to approve an action before you run it (a command, a deploy, a payment). They can allow it once, allow it always (a rule for this action), or reject it with feedback; where you allow it, edit the arguments or respond in the tool's place. Run the action only if the result says it is allowed, and with the arguments the result gives. Several actions proposed together go in one call as actions: [{tool, args}, ...]; the result then gives a decision per action, in order."
    )]
    async fn request_approval(
        &self,
        Parameters(params): Parameters<ApprovalParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = match batch::approval_request(
            params.tool,
            params.args,
            params.prompt,
            params.allowed,
            params.args_schema,
            params.actions,
        ) {
            Ok(request) => request,
            Err(why) => return Ok(words::failure(&why)),
        };
        self.ask_and_wait(request, params.audience, ctx).await
    }

    #[tool(
        description = "Wait for (or look up) the answer to a question asked with wait=false, by its id. Returns the outcome, or says it is still pending."
    )]
    async fn get_answer(
        &self,
        Parameters(params): Parameters<GetAnswerParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let wait = params.wait_s.unwrap_or(45.0).clamp(0.0, 600.0);
        let deadline = Instant::now() + Duration::from_secs_f64(wait);
        match self.wait_until(&params.id, Some(deadline), &ctx).await {
            Ok(question) => Ok(words::result(&question)),
            Err(why) => Ok(words::failure(&why)),
        }
    }

    #[tool(
        description = "List the questions still waiting for an answer (this session's, or all)."
    )]
    async fn list_pending(
        &self,
        Parameters(params): Parameters<ListParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let session = self.session(&ctx);
        let session = (!params.all_sessions).then_some(session.as_str());
        match self.backend.pending(session).await {
            Ok(questions) => Ok(words::listing(&questions)),
            Err(why) => Ok(words::failure(&why)),
        }
    }
}

impl AskServer {
    /// The askbridge session this call's questions belong to: over HTTP, the MCP session the
    /// call names (each request is served by a server of its own, see `http/mcp_sessions.rs`);
    /// over stdio, this server's.
    fn session(&self, ctx: &RequestContext<RoleServer>) -> String {
        ctx.extensions
            .get::<axum::http::request::Parts>()
            .and_then(|request| request.headers.get("mcp-session-id"))
            .and_then(|id| id.to_str().ok())
            .map_or_else(|| self.options.session.clone(), |id| format!("mcp-{id}"))
    }

    async fn ask_and_wait(
        &self,
        mut request: NewQuestion,
        audience: Audience,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        request.session_id = self.session(&ctx);
        request.targets = audience.targets.into_iter().map(Into::into).collect();
        request.answerers = audience.answerers.into_iter().map(Into::into).collect();
        request.timeout_s = audience.timeout_s;
        request.detail = audience.detail;
        request.remind_after_s = audience.remind_after_s;
        request.reminders = audience.reminders;
        // The answerers are the voters; a quorum they cannot reach is refused when asked.
        request.quorum = audience.quorum.map(|needs| Quorum {
            needs,
            of: request.answerers.clone(),
        });
        let question = match self.backend.ask(request).await {
            Ok(question) => question,
            Err(why) => return Ok(words::failure(&why)),
        };
        if audience.wait == Some(false) && question.is_pending() {
            return Ok(words::result(&question));
        }
        match self.wait_until(question.id.as_str(), None, &ctx).await {
            Ok(question) => Ok(words::result(&question)),
            Err(why) => Ok(words::failure(&why)),
        }
    }

    /// Waits until the question is resolved, `deadline` passes or the client cancels the call,
    /// reporting progress meanwhile when the client asked for it.
    async fn wait_until(
        &self,
        id: &str,
        deadline: Option<Instant>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Question, String> {
        let started = Instant::now();
        let token = ctx.meta.get_progress_token();
        loop {
            let mut step = self.options.progress_every;
            if let Some(deadline) = deadline {
                step = step.min(deadline.saturating_duration_since(Instant::now()));
            }
            let question = tokio::select! {
                waited = self.backend.wait(id, step) => waited?,
                () = ctx.ct.cancelled() => return Err(format!(
                    "The call was cancelled; question {id} is still waiting. Call get_answer with id \"{id}\" to fetch its answer."
                )),
            };
            let done = !question.is_pending();
            let out_of_time = deadline.is_some_and(|d| Instant::now() >= d);
            if done || out_of_time {
                return Ok(question);
            }
            if let Some(token) = &token {
                let waited = started.elapsed().as_secs();
                let note = ProgressNotificationParam::new(token.clone(), waited as f64)
                    .with_message(format!(
                        "Still waiting for the person to answer ({waited} s)"
                    ));
                if let Err(error) = ctx.peer.notify_progress(note).await {
                    tracing::debug!(error = %Chain(&error), "cannot send a progress notification");
                }
            }
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for AskServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("askbridge", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "askbridge asks the person you work for on their chat app and returns their answer. Use ask_user for questions, confirm for yes/no, request_approval before risky actions. Answers can take minutes or hours.",
            )
    }
}

/// The tools, by name.
pub const TOOLS: [&str; 5] = [
    "ask_user",
    "confirm",
    "request_approval",
    "get_answer",
    "list_pending",
];
