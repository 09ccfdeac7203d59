//! `serve` and `demo`: askbridge itself, wired from its configuration.

use super::ServeArgs;
use anyhow::Context;
use askbridge::FlowsExt;
use askbridge::bridge::Bridge;
use askbridge::config::{self, Config, StoreChoice};
use askbridge::console::Console;
use askbridge::flows::http::HttpFlow;
use askbridge::http::{AppState, HostPolicy, app};
use askbridge::store::StoreOptions;
use askbridge::{BridgeOptions, leader, runtime};
use askbridge_core::{Inbox, Target};
use askbridge_discord::{Discord, DiscordOptions};
use askbridge_telegram::{Telegram, TelegramOptions, WebhookOptions};
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
    let options = BridgeOptions {
        default_timeout: config.default_timeout,
        default_targets,
        run_lease: config.run_lease,
        signing_secret: config.flow_secret.clone(),
        approvers: config.approvers.clone(),
        flow_starters: config.flow_starters.clone(),
        reminder_gap: config.reminder_gap,
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
        // Every replica sends; one holds the gateway.
        let (inbox, holder) = (Arc::clone(&inbox), bridge.clone());
        tasks.push(tokio::spawn(leader::while_leader(
            holder,
            leader::DISCORD_GATEWAY,
            move |stop| {
                let (discord, inbox) = (discord.clone(), Arc::clone(&inbox));
                async move {
                    if let Err(error) = discord.run(inbox, stop).await {
                        tracing::error!(%error, "Discord is off until askbridge restarts");
                    }
                }
            },
        )));
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
    // Every replica sends; one holds the long poll (Telegram answers a second poller 409).
    let poller = bridge.clone();
    leader::while_leader(poller, leader::TELEGRAM_POLL, |stop| {
        let (telegram, inbox) = (telegram.clone(), Arc::clone(&inbox));
        async move {
            if let Err(error) = telegram.run(inbox, stop).await {
                tracing::error!(%error, "Telegram polling stopped");
            }
        }
    })
    .await;
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
        .with_mcp_progress(config.mcp_progress)
}

/// `askbridge serve`.
pub(crate) async fn serve(args: ServeArgs) -> anyhow::Result<()> {
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

/// `askbridge demo`.
pub(crate) async fn demo(args: ServeArgs) -> anyhow::Result<()> {
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

/// `serve --help`'s list of settings.
pub(crate) static SETTINGS_HELP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let mut text =
        String::from("Settings (environment, or a .env file in the current directory):\n");
    for (name, what) in config::ALL {
        text.push_str(&format!("  {name:<28} {what}\n"));
    }
    text
});
