//! The chat platforms `serve` and `demo` connect, wired in two steps around the bridge's
//! builder: connected first (their channels go into the builder), then attached to the running
//! bridge (webhook routes, update loops under leader leases).

use super::late::LateChannel;
use anyhow::Context;
use askbridge::bridge::Bridge;
use askbridge::config::{self, Config};
use askbridge::http::AppState;
use askbridge::leader::{self, LeaseBook};
use askbridge_core::error::Chain;
use askbridge_core::{Channel, Inbox};
use askbridge_discord::{Discord, DiscordOptions};
use askbridge_email::{Email, EmailOptions};
use askbridge_slack::{Slack, SlackOptions};
use askbridge_telegram::{Telegram, TelegramOptions, WebhookOptions};
use std::sync::Arc;
use tokio::task::JoinHandle;

/// The configured chat platforms, connected before the bridge is built: their channels go into
/// the builder, and what needs the running bridge (webhook routes, update loops) is attached
/// by [`Chats::attach`] once it runs.
pub(super) struct Chats {
    telegram: Option<TelegramMode>,
    discord: Option<Discord>,
    email: Option<Email>,
    slack: Option<Slack>,
}

enum TelegramMode {
    /// Connected; updates arrive at a webhook route.
    Webhook(Telegram),
    /// Long polling, which needs nothing from the HTTP server: connected in the background, so a
    /// Telegram outage at start-up delays Telegram, not askbridge. Its channel is there from the
    /// start and sends once the connection is made.
    Polling(TelegramOptions, Arc<LateChannel>),
}

impl Chats {
    /// Connects what must be connected before serving (Telegram's webhook mode, Discord).
    pub(super) async fn connect(config: &Config) -> anyhow::Result<Self> {
        let telegram = match &config.telegram {
            None => None,
            Some(settings) => Some(connect_telegram(settings).await?),
        };
        let discord = match &config.discord {
            None => None,
            Some(settings) => {
                let options = DiscordOptions {
                    token: settings.token.expose().to_owned(),
                    api_url: settings.api_url.clone(),
                    public_key: settings.public_key.clone(),
                };
                let discord = Discord::connect(options).await.with_context(|| {
                    format!("cannot start Discord ({})", config::DISCORD_BOT_TOKEN)
                })?;
                Some(discord)
            }
        };
        let email = match &config.email {
            None => None,
            Some(settings) => Some(
                Email::new(EmailOptions {
                    smtp_url: settings.smtp_url.clone(),
                    imap_url: settings.imap_url.clone(),
                    from: settings.from.clone(),
                    reply_address: settings.reply_address.clone(),
                    secret: settings.secret.clone(),
                    require_dmarc: settings.require_dmarc,
                    authserv_id: settings.authserv_id.clone(),
                    public_url: settings.public_url.clone(),
                    notify_resolved: settings.notify_resolved,
                })
                .context("cannot start email")?,
            ),
        };
        let slack = match &config.slack {
            None => None,
            Some(settings) => {
                let options = SlackOptions {
                    bot_token: settings.token.clone(),
                    app_token: settings.app_token.clone(),
                    signing_secret: settings.signing_secret.clone(),
                    api_url: settings.api_url.clone(),
                };
                let slack = Slack::connect(options)
                    .await
                    .with_context(|| format!("cannot start Slack ({})", config::SLACK_BOT_TOKEN))?;
                Some(slack)
            }
        };
        Ok(Chats {
            telegram,
            discord,
            email,
            slack,
        })
    }

    /// The channels, for the bridge's builder.
    pub(super) fn channels(&self) -> Vec<Arc<dyn Channel>> {
        let telegram = self.telegram.as_ref().map(|mode| match mode {
            TelegramMode::Webhook(telegram) => telegram.channel(),
            TelegramMode::Polling(_, late) => Arc::clone(late) as Arc<dyn Channel>,
        });
        let discord = self.discord.as_ref().map(Discord::channel);
        let email = self.email.as_ref().map(Email::channel);
        let slack = self.slack.as_ref().map(Slack::channel);
        let others = discord.into_iter().chain(email).chain(slack);
        telegram.into_iter().chain(others).collect()
    }

    /// Adds the webhook routes to `state` and starts the update loops, which run until the bridge
    /// shuts down. Every replica sends; one holds Telegram's long poll and Discord's gateway.
    pub(super) fn attach(
        self,
        bridge: &Bridge,
        mut state: AppState,
        leases: &Arc<LeaseBook>,
        tasks: &mut Vec<JoinHandle<()>>,
    ) -> AppState {
        let inbox: Arc<dyn Inbox> = Arc::new(bridge.clone());
        match self.telegram {
            Some(TelegramMode::Webhook(telegram)) => {
                state = state.with_routes(telegram.routes(Arc::clone(&inbox)));
                let (inbox, shutdown) = (Arc::clone(&inbox), bridge.shutdown_signal());
                tasks.push(tokio::spawn(async move {
                    if let Err(error) = telegram.run(inbox, shutdown).await {
                        tracing::error!(error = %Chain(&error), "Telegram stopped");
                    }
                }));
            }
            Some(TelegramMode::Polling(options, late)) => {
                let (bridge, inbox, leases) = (bridge.clone(), Arc::clone(&inbox), leases.clone());
                tasks.push(tokio::spawn(run_telegram_when_reachable(
                    options, late, bridge, inbox, leases,
                )));
            }
            None => {}
        }
        if let Some(slack) = self.slack {
            state = state.with_routes(slack.routes(Arc::clone(&inbox)));
            // Every replica connects: Slack spreads envelopes over all of an app's connections.
            if slack.uses_socket_mode() {
                let (inbox, shutdown) = (Arc::clone(&inbox), bridge.shutdown_signal());
                tasks.push(tokio::spawn(async move {
                    if let Err(error) = slack.run_socket(inbox, shutdown).await {
                        tracing::error!(error = %Chain(&error), "Slack's Socket Mode is off until askbridge restarts");
                    }
                }));
            }
        }
        if let Some(page) = self
            .email
            .as_ref()
            .and_then(|e| e.routes(Arc::clone(&inbox)))
        {
            state = state.with_routes(page);
        }
        if let Some(discord) = self.discord {
            state = state.with_routes(discord.routes(Arc::clone(&inbox)));
            let (inbox, holder) = (Arc::clone(&inbox), bridge.clone());
            tasks.push(tokio::spawn(leader::while_leader(
                holder,
                leader::DISCORD_GATEWAY,
                leases.clone(),
                move |stop| {
                    let (discord, inbox) = (discord.clone(), Arc::clone(&inbox));
                    async move {
                        if let Err(error) = discord.run(inbox, stop).await {
                            tracing::error!(error = %Chain(&error), "Discord is off until askbridge restarts");
                        }
                    }
                },
            )));
        }
        if let Some(email) = self.email.filter(Email::polls) {
            let (inbox, holder) = (Arc::clone(&inbox), bridge.clone());
            tasks.push(tokio::spawn(leader::while_leader(
                holder,
                leader::EMAIL_POLL,
                leases.clone(),
                move |stop| {
                    let (email, inbox) = (email.clone(), Arc::clone(&inbox));
                    async move {
                        if let Err(error) = email.run(inbox, stop).await {
                            tracing::error!(error = %Chain(&error), "email polling stopped");
                        }
                    }
                },
            )));
        }
        state
    }
}

/// Telegram in webhook mode connected now; in long-poll mode, its channel to connect later.
async fn connect_telegram(settings: &config::TelegramConfig) -> anyhow::Result<TelegramMode> {
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
        return Ok(TelegramMode::Polling(
            options,
            Arc::new(LateChannel::new("telegram")),
        ));
    }
    let telegram = Telegram::connect(options)
        .await
        .context("cannot start Telegram")?;
    Ok(TelegramMode::Webhook(telegram))
}

/// Connects to Telegram, retrying with backoff (up to a minute apart) while it is unreachable,
/// then receives updates until shutdown. A refused token ends the attempts: retrying cannot fix it.
async fn run_telegram_when_reachable(
    options: TelegramOptions,
    late: Arc<LateChannel>,
    bridge: Bridge,
    inbox: Arc<dyn Inbox>,
    leases: Arc<LeaseBook>,
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
                tracing::warn!(error = %Chain(&error), retry_in_s = delay.as_secs(), "cannot reach Telegram; askbridge serves on and tries again");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    _ = shutdown.wait_for(|stopped| *stopped) => return,
                }
                delay = (delay * 2).min(std::time::Duration::from_secs(60));
            }
        }
    };
    late.arrive(telegram.channel());
    // Every replica sends; one holds the long poll (Telegram answers a second poller 409).
    leader::while_leader(bridge, leader::TELEGRAM_POLL, leases, |stop| {
        let (telegram, inbox) = (telegram.clone(), Arc::clone(&inbox));
        async move {
            if let Err(error) = telegram.run(inbox, stop).await {
                tracing::error!(error = %Chain(&error), "Telegram polling stopped");
            }
        }
    })
    .await;
}
