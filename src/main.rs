//! The `askbridge` command: `demo`, `serve`, `pending`.

use anyhow::{Context, bail};
use askbridge::FlowsExt;
use askbridge::bridge::Bridge;
use askbridge::config::{self, Config, StoreChoice};
use askbridge::console::Console;
use askbridge::flows::http::HttpFlow;
use askbridge::http::{AppState, HostPolicy, app};
use askbridge::store::StoreOptions;
use askbridge::{BridgeOptions, runtime};
use askbridge_core::audit::AuditEntry;
use askbridge_core::{Inbox, Question, Target, render};
use askbridge_discord::{Discord, DiscordOptions};
use askbridge_telegram::{Telegram, TelegramOptions, WebhookOptions};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

const USAGE: &str = "askbridge: ask people questions on the chat channels they already use.

Usage:
  askbridge demo [--ephemeral]     run the demo: HTTP API, console, and an example function
  askbridge serve [--ephemeral]    run the bridge with the configured store and channels
  askbridge pending [--session S] [--json] [--url URL]
                                   list pending questions of a running askbridge
  askbridge audit [--session S] [--since 2h|RFC3339] [--json] [--url URL]
                                   the audit trail: resolutions, refusals, rules
  askbridge help | --help          this text
  askbridge version | --version    the version

--ephemeral keeps questions in memory only (nothing survives a restart).

Settings come from the environment and from a .env file in the current directory:";

#[derive(Debug, Default)]
struct Args {
    command: String,
    ephemeral: bool,
    json: bool,
    session: Option<String>,
    url: Option<String>,
    since: Option<String>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args::default();
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        match word.as_str() {
            "--ephemeral" => args.ephemeral = true,
            "--json" => args.json = true,
            "--session" => args.session = Some(words.next().context("--session needs a value")?),
            "--url" => args.url = Some(words.next().context("--url needs a value")?),
            "--since" => args.since = Some(words.next().context("--since needs a value")?),
            "-h" | "--help" => args.command = "help".into(),
            "-V" | "--version" => args.command = "version".into(),
            flag if flag.starts_with('-') => bail!("unknown option {flag}; see `askbridge --help`"),
            command if args.command.is_empty() => args.command = command.to_owned(),
            extra => bail!("unexpected argument {extra}; see `askbridge --help`"),
        }
    }
    Ok(args)
}

fn print_usage() {
    println!("{USAGE}");
    for (name, what) in config::ALL {
        println!("  {name:<28} {what}");
    }
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // The embedded store reads on blocking threads; a thousand waiters each reading once
        // would otherwise grow the pool to hundreds of threads. Reads queue for a free one.
        .max_blocking_threads(16)
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(run());
    // The console reads stdin on a blocking thread that never returns on its own; do not wait
    // for it once the work is done.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    result
}

async fn run() -> anyhow::Result<()> {
    let args = parse_args()?;
    if let Err(error) = dotenvy::dotenv() {
        if !error.not_found() {
            bail!("cannot read .env: {error}");
        }
    }
    match args.command.as_str() {
        "demo" => demo(args).await,
        "serve" => serve(args).await,
        "pending" => pending(args).await,
        "audit" => audit(args).await,
        "help" | "" => {
            print_usage();
            Ok(())
        }
        "version" => {
            println!("askbridge {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        other => bail!("unknown command `{other}`; see `askbridge --help`"),
    }
}

fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}

fn load_config(args: &Args) -> anyhow::Result<Config> {
    let mut config = Config::from_env()?;
    if args.ephemeral {
        config.store = StoreChoice::Memory;
    }
    Ok(config)
}

/// Opens the store and builds the bridge (not started yet: channels come first, so that
/// recovery can show pending questions on them).
async fn open_bridge(config: &Config, default_targets: Vec<Target>) -> anyhow::Result<Bridge> {
    let store = runtime::open_store(
        &config.store,
        StoreOptions {
            retention: config.retention,
            audit_retention: config.audit_retention,
        },
    )
    .await
    .with_context(|| format!("cannot open the store ({})", store_variable(&config.store)))?;
    if store.is_durable() {
        tracing::info!(store = %store.describe(), "store opened");
    } else {
        tracing::warn!(store = %store.describe(), "store opened");
    }
    let options = BridgeOptions {
        default_timeout: config.default_timeout,
        default_targets,
        run_lease: config.run_lease,
        signing_secret: config.flow_secret.clone(),
        approvers: config.approvers.clone(),
        flow_starters: config.flow_starters.clone(),
        callback_egress: askbridge::egress::Egress::public_only()
            .allow(&config.callback_allow)
            .map_err(anyhow::Error::msg)?,
    };
    Ok(Bridge::new(store, options))
}

/// Registers the HTTP flows of `ASKBRIDGE_FLOWS`, and the example flows when asked.
fn register_flows(config: &Config, bridge: &Bridge, examples: bool) -> anyhow::Result<()> {
    if examples {
        askbridge::demo::register_example_flows(bridge)?;
    }
    if let Some(secret) = &config.flow_secret {
        for (name, url) in &config.http_flows {
            let flow = HttpFlow::new(name, url, secret.clone());
            bridge
                .register_flow(name, Arc::new(flow))
                .with_context(|| format!("in {}", config::FLOWS))?;
        }
    }
    Ok(())
}

/// Connects the configured chat platforms: their channels join the bridge, their webhook routes
/// join the HTTP app, and their update loops run until shutdown.
async fn start_chat_adapters(
    config: &Config,
    bridge: &Bridge,
    mut state: AppState,
    tasks: &mut Vec<JoinHandle<()>>,
) -> anyhow::Result<AppState> {
    let inbox: Arc<dyn Inbox> = Arc::new(bridge.clone());
    if let Some(settings) = &config.telegram {
        let webhook = settings
            .webhook_url
            .clone()
            .zip(settings.webhook_secret.as_ref())
            .map(|(url, secret)| WebhookOptions {
                url,
                secret: secret.expose().to_owned(),
            });
        let options = TelegramOptions {
            token: settings.token.expose().to_owned(),
            api_url: settings.api_url.clone(),
            webhook,
        };
        if options.webhook.is_none() {
            // Long polling needs nothing from the HTTP server: connect in the background, so a
            // Telegram outage at start-up delays Telegram, not askbridge.
            let (bridge, inbox) = (bridge.clone(), Arc::clone(&inbox));
            tasks.push(tokio::spawn(run_telegram_when_reachable(
                options, bridge, inbox,
            )));
        } else {
            let telegram = Telegram::connect(options)
                .await
                .context("cannot start Telegram")?;
            bridge.add_channel(telegram.channel());
            state = state.with_routes(telegram.routes(Arc::clone(&inbox)));
            let (inbox, shutdown) = (Arc::clone(&inbox), bridge.shutdown_signal());
            tasks.push(tokio::spawn(async move {
                if let Err(error) = telegram.run(inbox, shutdown).await {
                    tracing::error!(%error, "Telegram stopped");
                }
            }));
        }
    }
    if let Some(settings) = &config.discord {
        let options = DiscordOptions {
            token: settings.token.expose().to_owned(),
            api_url: settings.api_url.clone(),
            public_key: settings.public_key.clone(),
        };
        let discord = Discord::connect(options)
            .await
            .with_context(|| format!("cannot start Discord ({})", config::DISCORD_BOT_TOKEN))?;
        bridge.add_channel(discord.channel());
        state = state.with_routes(discord.routes(Arc::clone(&inbox)));
        let (inbox, shutdown) = (Arc::clone(&inbox), bridge.shutdown_signal());
        tasks.push(tokio::spawn(async move {
            if let Err(error) = discord.run(inbox, shutdown).await {
                tracing::error!(%error, "Discord is off until askbridge restarts");
            }
        }));
    }
    Ok(state)
}

/// Connects to Telegram, retrying with backoff (up to a minute apart) while it is unreachable,
/// then receives updates until shutdown. A refused token ends the attempts: retrying cannot fix it.
async fn run_telegram_when_reachable(
    options: TelegramOptions,
    bridge: Bridge,
    inbox: Arc<dyn Inbox>,
) {
    let mut shutdown = bridge.shutdown_signal();
    let mut delay = std::time::Duration::from_secs(5);
    let telegram = loop {
        match Telegram::connect(options.clone()).await {
            Ok(telegram) => break telegram,
            Err(askbridge_telegram::Error::Unauthorized(error)) => {
                tracing::error!(%error, "Telegram refused the bot token ({}); Telegram is off", config::TELEGRAM_BOT_TOKEN);
                return;
            }
            Err(error) => {
                tracing::warn!(%error, retry_in_s = delay.as_secs(), "cannot reach Telegram; askbridge serves on and tries again");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    _ = shutdown.wait_for(|stopped| *stopped) => return,
                }
                delay = (delay * 2).min(std::time::Duration::from_secs(60));
            }
        }
    };
    bridge.add_channel(telegram.channel());
    if let Err(error) = telegram.run(inbox, shutdown).await {
        tracing::error!(%error, "Telegram stopped");
    }
}

fn store_variable(choice: &StoreChoice) -> &'static str {
    match choice {
        StoreChoice::Redis { .. } => config::REDIS_URL,
        StoreChoice::Embedded { .. } => config::DATA_DIR,
        StoreChoice::Memory => "--ephemeral",
    }
}

async fn bind(config: &Config) -> anyhow::Result<TcpListener> {
    TcpListener::bind(config.http_addr).await.with_context(|| {
        format!(
            "cannot listen on {} (set {} to another address)",
            config.http_addr,
            config::HTTP_ADDR
        )
    })
}

fn warn_if_exposed(config: &Config) {
    if config.api_token.is_none() && !config.http_addr.ip().is_loopback() {
        tracing::warn!(addr = %config.http_addr, "the HTTP API listens beyond loopback without {}; anyone who reaches it can answer", config::API_TOKEN);
    }
}

/// The HTTP server's limits as configured.
fn serve_options(config: &Config) -> askbridge::server::ServeOptions {
    askbridge::server::ServeOptions {
        max_connections: config.max_connections,
        ..Default::default()
    }
}

/// The HTTP application's state as configured.
fn app_state(config: &Config, bridge: &Bridge) -> AppState {
    AppState::new(bridge.clone(), config.api_token.as_ref())
        .with_hosts(HostPolicy::local().allow(&config.allowed_hosts))
        .with_public_metrics(config.metrics_public)
}

async fn serve(args: Args) -> anyhow::Result<()> {
    let config = load_config(&args)?;
    init_logging(&config.log);
    let bridge = open_bridge(&config, config.default_targets.clone()).await?;
    register_flows(&config, &bridge, config.example_flows)?;
    let mut tasks = Vec::new();
    let state = app_state(&config, &bridge);
    let state = start_chat_adapters(&config, &bridge, state, &mut tasks).await?;
    tasks.extend(bridge.start().await?);
    let listener = bind(&config).await?;
    warn_if_exposed(&config);
    tracing::info!(addr = %listener.local_addr()?, surfaces = ?bridge.surfaces(), "askbridge serving");
    let shutdown_bridge = bridge.clone();
    runtime::serve(
        listener,
        app(state),
        async move {
            runtime::termination().await;
            shutdown_bridge.shutdown();
        },
        serve_options(&config),
    )
    .await?;
    bridge.shutdown();
    for task in tasks {
        let _ = task.await;
    }
    tracing::info!("askbridge stopped");
    Ok(())
}

async fn demo(args: Args) -> anyhow::Result<()> {
    let mut config = load_config(&args)?;
    if std::env::var(config::LOG).is_err() && std::env::var("RUST_LOG").is_err() {
        config.log = "warn".into();
    }
    init_logging(&config.log);
    let bridge = open_bridge(&config, vec![Target::console()]).await?;
    register_flows(&config, &bridge, true)?;
    let console = Console::stdout();
    bridge.add_channel(Arc::new(console.clone()));
    let mut tasks = Vec::new();
    let state = app_state(&config, &bridge);
    let state = start_chat_adapters(&config, &bridge, state, &mut tasks).await?;
    tasks.extend(bridge.start().await?);
    let listener = bind(&config).await?;
    let addr = listener.local_addr()?;
    let server_bridge = bridge.clone();
    let server = tokio::spawn(runtime::serve(
        listener,
        app(state),
        async move {
            let mut signal = server_bridge.shutdown_signal();
            let _ = signal.wait_for(|stopped| *stopped).await;
        },
        serve_options(&config),
    ));
    console.print(&format!(
        "askbridge demo: the HTTP API is on http://{addr} (store: {}).\n\
         A function will now ask four questions. Answer each by typing the command shown, or just\n\
         the answer (a number, a name, yes/no), or from another terminal:\n  \
         curl -s http://{addr}/api/questions\n  \
         curl -s -X POST http://{addr}/api/questions/<id>/reply -H 'content-type: application/json' -d '{{\"answer\": \"dayjs\"}}'",
        bridge.store().describe()
    ));
    let input = tokio::io::BufReader::new(tokio::io::stdin());
    let console_task = {
        let console = console.clone();
        let inbox: Arc<dyn askbridge_core::Inbox> = Arc::new(bridge.clone());
        tokio::spawn(async move { console.run(inbox, input).await })
    };
    let session = bridge.session(format!("demo-{}", askbridge_core::QuestionId::random()));
    let mut console_task = console_task;
    let demo = async {
        askbridge::demo::run(&session, &console).await;
        console.print(
            "\nNow a follow-up run: type /release 2.0 and answer its three questions (a command, or just\n\
             the answer). The run holds nothing while it waits; each answer resumes it. /help lists\n\
             the commands; Ctrl-D quits.",
        );
        let _ = (&mut console_task).await;
    };
    tokio::select! {
        _ = demo => {}
        _ = runtime::termination() => {
            let cancelled = session.stop().await.unwrap_or(0);
            console.print(&format!("Stopped; {cancelled} pending question(s) cancelled."));
        }
    }
    bridge.shutdown();
    console_task.abort();
    let _ = server.await;
    for task in tasks {
        let _ = task.await;
    }
    Ok(())
}

/// GETs `path` from a running askbridge's API (with the configured token) and returns the JSON.
async fn api_get(
    args: &Args,
    path: &str,
    query: &[(&str, String)],
) -> anyhow::Result<serde_json::Value> {
    let config = Config::from_env()?;
    let base = args
        .url
        .clone()
        .unwrap_or_else(|| format!("http://{}", config.http_addr));
    let mut request = reqwest::Client::new()
        .get(format!("{}{path}", base.trim_end_matches('/')))
        .query(query);
    if let Some(token) = &config.api_token {
        request = request.bearer_auth(token.expose());
    }
    let response = request.send().await.with_context(|| {
        format!(
            "cannot reach askbridge at {base} (is `askbridge serve` running? set --url or {})",
            config::HTTP_ADDR
        )
    })?;
    let status = response.status();
    let body: serde_json::Value = response
        .json()
        .await
        .context("askbridge answered something that is not JSON")?;
    if !status.is_success() {
        bail!(
            "askbridge answered {status}: {}",
            body["error"].as_str().unwrap_or("no detail")
        );
    }
    Ok(body)
}

async fn pending(args: Args) -> anyhow::Result<()> {
    let query = [("session_id", args.session.clone().unwrap_or_default())];
    let body = api_get(&args, "/api/questions", &query).await?;
    let questions: Vec<Question> =
        serde_json::from_value(body["questions"].clone()).context("unexpected answer shape")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&questions)?);
        return Ok(());
    }
    print!("{}", pending_table(&questions));
    Ok(())
}

async fn audit(args: Args) -> anyhow::Result<()> {
    let since = match &args.since {
        Some(text) => since_param(text)?,
        None => String::new(),
    };
    let query = [
        ("session_id", args.session.clone().unwrap_or_default()),
        ("since", since),
    ];
    let body = api_get(&args, "/api/audit", &query).await?;
    let entries: Vec<AuditEntry> =
        serde_json::from_value(body["entries"].clone()).context("unexpected answer shape")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(());
    }
    if entries.is_empty() {
        println!("No audit records.");
    }
    for entry in entries {
        let value = entry.value.map(|v| format!(" {v}")).unwrap_or_default();
        let status = entry.status.map(|s| format!(" {s}")).unwrap_or_default();
        let rule = entry
            .rule_id
            .map(|r| format!(" rule={r}"))
            .unwrap_or_default();
        let message = entry.message.map(|m| format!(" — {m}")).unwrap_or_default();
        println!(
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
