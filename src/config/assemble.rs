//! `Config`'s shape from the values read (`vars.rs`) once their rules hold (`check_pairs`): the
//! store chosen, each chat's settings grouped, lists empty when unset. Apart from the reading, so
//! that the table and the shape each read in one place; one function per group, so that a group
//! is read whole.

use super::parse::default_data_dir;
use super::table::Get;
use super::{Config, DiscordConfig, EmailConfig, SlackConfig, StoreChoice, TelegramConfig, Values};

/// The chats configured, each with its settings.
struct Chats {
    telegram: Option<TelegramConfig>,
    discord: Option<DiscordConfig>,
    email: Option<EmailConfig>,
    slack: Option<SlackConfig>,
}

impl Config {
    /// `Config`'s shape from the values. A setting added to the table and used nowhere here is a
    /// dead field, which fails the build.
    pub(super) fn assemble(
        mut v: Values,
        get: &Get<'_>,
        lookup: &impl Fn(&str) -> Option<String>,
    ) -> Self {
        // Read by `worker_threads` before the runtime this config is read on, and read again by
        // `Values::read` only so that a malformed value stops start-up wherever it comes from.
        let _ = v.worker_threads;
        let store = store(&mut v, lookup);
        let chats = chats(&mut v);
        let allowed_hosts = allowed_hosts(&mut v, chats.telegram.as_ref());
        Config {
            http_addr: v.http_addr,
            api_token: v.api_token,
            store,
            default_timeout: v.default_timeout,
            retention: v.retention,
            default_targets: v.default_targets.unwrap_or_default(),
            log: v
                .log
                .or_else(|| get("RUST_LOG"))
                .unwrap_or_else(|| "info".into()),
            telegram: chats.telegram,
            discord: chats.discord,
            email: chats.email,
            slack: chats.slack,
            http_flows: v.flows.unwrap_or_default(),
            flow_secret: v.flow_secret,
            run_lease: v.run_lease,
            example_flows: v.example_flows,
            approvers: v.approvers.unwrap_or_default(),
            audit_retention: v.audit_retention,
            flow_starters: v.flow_starters.unwrap_or_default(),
            allowed_hosts,
            metrics_public: v.metrics_public,
            callback_allow: v.callback_allow.unwrap_or_default(),
            max_connections: v.max_connections,
            body_timeout: v.body_timeout,
            write_timeout: v.write_timeout,
            shed_after: v.shed_after,
            event_backlog_kb: v.event_backlog_kb,
            mcp_progress: v.mcp_progress,
            max_mcp_sessions: v.max_mcp_sessions,
            mcp_session_idle: v.mcp_session_idle,
            reminder_gap: v.reminder_gap,
            session_lease: v.session_lease,
        }
    }
}

/// Redis when a URL is set (a cluster when asked, or when the URL lists several nodes), else the
/// embedded store in its directory.
fn store(v: &mut Values, lookup: &impl Fn(&str) -> Option<String>) -> StoreChoice {
    match v.redis_url.take() {
        Some(url) => StoreChoice::Redis {
            cluster: v.redis_cluster || url.expose().contains(','),
            url,
            prefix: std::mem::take(&mut v.redis_prefix),
            replica_wait: v.redis_replica_wait,
            events_gather: v.redis_events_gather,
        },
        None => StoreChoice::Embedded {
            dir: v
                .data_dir
                .take()
                .unwrap_or_else(|| default_data_dir(lookup)),
        },
    }
}

/// Each chat whose token (or SMTP URL) is set.
fn chats(v: &mut Values) -> Chats {
    let telegram = v.telegram_bot_token.take().map(|token| TelegramConfig {
        token,
        api_url: v.telegram_api_url.take(),
        webhook_url: v.telegram_webhook_url.take(),
        webhook_secret: v.telegram_webhook_secret.take(),
    });
    let discord = v.discord_bot_token.take().map(|token| DiscordConfig {
        token,
        api_url: v.discord_api_url.take(),
        public_key: v.discord_public_key.take(),
    });
    // `check_pairs` made sure the reply address and the secret come with the SMTP URL.
    let email = match (
        v.email_smtp_url.take(),
        v.email_reply_address.take(),
        v.email_secret.take(),
    ) {
        (Some(smtp_url), Some(reply_address), Some(secret)) => Some(EmailConfig {
            smtp_url,
            imap_url: v.email_imap_url.take(),
            from: std::mem::take(&mut v.email_from),
            reply_address,
            secret,
            require_dmarc: v.email_require_dmarc,
            authserv_id: v.email_authserv_id.take(),
            public_url: v.public_url.clone(),
            notify_resolved: v.email_notify_resolved,
        }),
        _ => None,
    };
    // check_pairs has made sure an app token or a signing secret comes with the token.
    let slack = v.slack_bot_token.take().map(|token| SlackConfig {
        token,
        app_token: v.slack_app_token.take(),
        signing_secret: v.slack_signing_secret.take(),
        api_url: v.slack_api_url.take(),
    });
    Chats {
        telegram,
        discord,
        email,
        slack,
    }
}

/// The Host names served: those set, and the names of the URLs askbridge is reached at (Telegram
/// posts its webhook to one; people open answer links under the public URL).
fn allowed_hosts(v: &mut Values, telegram: Option<&TelegramConfig>) -> Vec<String> {
    let mut allowed = v.allowed_hosts.take().unwrap_or_default();
    let host_of = |url: &str| reqwest::Url::parse(url).ok()?.host_str().map(str::to_owned);
    let named = telegram.and_then(|t| t.webhook_url.as_deref());
    allowed.extend(
        named
            .into_iter()
            .chain(v.public_url.as_deref())
            .filter_map(host_of),
    );
    allowed
}
