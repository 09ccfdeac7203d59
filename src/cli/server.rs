//! `serve` and `demo`: askbridge itself, wired from its configuration.

use super::ServeArgs;
use super::chats::Chats;
use anyhow::Context;
use askbridge::bridge::Bridge;
use askbridge::config::{self, Config, StoreChoice};
use askbridge::console::Console;
use askbridge::flows::http::HttpFlow;
use askbridge::http::{AppState, HostPolicy, app};
use askbridge::leader::LeaseBook;
use askbridge::store::{Store, StoreOptions};
use askbridge::{BridgeOptions, Flows, runtime};
use askbridge_core::{Channel, Target};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub(crate) fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}

fn load_config(args: &ServeArgs) -> anyhow::Result<Config> {
    let mut config = Config::from_env()?;
    if args.ephemeral {
        config.store = StoreChoice::Memory;
    }
    Ok(config)
}

/// Opens the configured store, logging its shape.
async fn open_store(config: &Config) -> anyhow::Result<Arc<dyn Store>> {
    let store = runtime::open_store(
        &config.store,
        StoreOptions {
            retention: config.retention,
            audit_retention: config.audit_retention,
        },
    )
    .await
    .with_context(|| format!("cannot open the store ({})", store_variable(&config.store)))?;
    // Its shape, so that a log says at once whether a cluster is whole: nodes, masters, failing.
    let shape = match store.topology().await {
        Ok(t) if t.nodes == 1 => t.kind.to_owned(),
        Ok(t) => format!(
            "{}: {} node(s), {} serving, {} failing{}",
            t.kind,
            t.nodes,
            t.masters,
            t.failing,
            if t.ok { "" } else { ", cluster_state:fail" }
        ),
        Err(error) => format!("unknown ({})", askbridge_core::error::Chain(&error)),
    };
    if store.is_durable() {
        tracing::info!(store = %store.describe(), %shape, "store opened");
    } else {
        tracing::warn!(store = %store.describe(), %shape, "store opened");
    }
    Ok(store)
}

/// The bridge's settings as configured.
fn bridge_options(config: &Config, default_targets: Vec<Target>) -> anyhow::Result<BridgeOptions> {
    Ok(BridgeOptions {
        default_timeout: config.default_timeout,
        default_targets,
        run_lease: config.run_lease,
        signing_secret: config.flow_secret.clone(),
        approvers: config.approvers.clone(),
        flow_starters: config.flow_starters.clone(),
        reminder_gap: config.reminder_gap,
        session_lease: config.session_lease,
        callback_egress: askbridge::egress::Egress::public_only()
            .allow(&config.callback_allow)
            .map_err(anyhow::Error::msg)?,
    })
}

/// The HTTP flows of `ASKBRIDGE_FLOWS`, and the example flows when asked.
fn flows(config: &Config, examples: bool) -> anyhow::Result<Flows> {
    let mut flows = Flows::new();
    if examples {
        flows = askbridge::demo::with_example_flows(flows)?;
    }
    if let Some(secret) = &config.flow_secret {
        for (name, url) in &config.http_flows {
            let flow = HttpFlow::new(name, url, secret.clone());
            flows = flows
                .register(name, Arc::new(flow))
                .with_context(|| format!("in {}", config::FLOWS))?;
        }
    }
    Ok(flows)
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
        body_timeout: config.body_timeout,
        write_timeout: config.write_timeout,
        shed_after: config.shed_after,
        event_backlog: config.event_backlog_kb.saturating_mul(1024),
        ..Default::default()
    }
}

/// The HTTP application's state as configured.
fn app_state(config: &Config, bridge: &Bridge, leases: &Arc<LeaseBook>) -> AppState {
    AppState::new(bridge.clone(), config.api_token.as_ref())
        .with_hosts(HostPolicy::local().allow(&config.allowed_hosts))
        .with_public_metrics(config.metrics_public)
        .with_mcp_progress(config.mcp_progress)
        .with_mcp_sessions(config.max_mcp_sessions, config.mcp_session_idle)
        .with_leases(leases.clone())
}

/// A running askbridge: the bridge, the HTTP app's state and the tasks to await at the end.
struct Wired {
    bridge: Bridge,
    state: AppState,
    tasks: Vec<JoinHandle<()>>,
}

/// Wires everything before anything runs: the store, the chat platforms, the flows and the
/// bridge over them; then attaches the platforms' routes and update loops to the running bridge.
/// `console` joins as a channel when given (`askbridge demo`).
async fn wire(
    config: &Config,
    default_targets: Vec<Target>,
    examples: bool,
    console: Option<Arc<dyn Channel>>,
) -> anyhow::Result<Wired> {
    let store = open_store(config).await?;
    let chats = Chats::connect(config).await?;
    let mut builder = Bridge::builder(store)
        .options(bridge_options(config, default_targets)?)
        .runner(Arc::new(flows(config, examples)?));
    for channel in chats.channels().into_iter().chain(console) {
        builder = builder.channel(channel);
    }
    let bridge = builder.start().await?;
    let leases = Arc::new(LeaseBook::default());
    let mut tasks = Vec::new();
    let state = app_state(config, &bridge, &leases);
    let state = chats.attach(&bridge, state, &leases, &mut tasks);
    Ok(Wired {
        bridge,
        state,
        tasks,
    })
}

/// `askbridge serve`.
pub(crate) async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = load_config(&args)?;
    init_logging(&config.log);
    let examples = config.example_flows;
    let Wired {
        bridge,
        state,
        tasks,
    } = wire(&config, config.default_targets.clone(), examples, None).await?;
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
    bridge.stopped().await;
    for task in tasks {
        let _ = task.await;
    }
    tracing::info!("askbridge stopped");
    Ok(())
}

/// `askbridge demo`.
pub(crate) async fn demo(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = load_config(&args)?;
    if std::env::var(config::LOG).is_err() && std::env::var("RUST_LOG").is_err() {
        config.log = "warn".into();
    }
    init_logging(&config.log);
    let console = Console::stdout();
    let Wired {
        bridge,
        state,
        tasks,
    } = wire(
        &config,
        vec![Target::console()],
        true,
        Some(Arc::new(console.clone())),
    )
    .await?;
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
    bridge.stopped().await;
    for task in tasks {
        let _ = task.await;
    }
    Ok(())
}

/// `serve --help`'s list of settings, from the settings table. Laid out as clap lays out a long
/// option (the name, then its help indented below), so that a help wrapped by a narrow terminal
/// stays under its name.
pub(crate) static SETTINGS_HELP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let mut text =
        String::from("Settings (environment, or a .env file in the current directory):\n");
    for setting in config::SETTINGS {
        text.push_str(&format!(
            "  {} [default: {}]\n          {}\n",
            setting.name,
            setting.default_text(),
            setting.help_text()
        ));
    }
    text
});
