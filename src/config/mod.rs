//! Configuration, read once at start-up from the environment (and a `.env` file, which the
//! binary loads first without overriding what the environment already sets).
//!
//! Every variable is declared once, in the table of `vars.rs` (name, default, parser, help),
//! from which come its constant here, `serve --help`'s list and the README's table; the
//! integration tests hold the README and `.env.example` to the table. A malformed value is an
//! error naming the variable and saying what would be accepted; an absent one takes the default
//! shown. Secrets are kept in [`Secret`], whose `Debug` prints `***`, so a logged config never
//! shows a token.

pub use askbridge_core::secret::Secret;
use askbridge_core::{Identity, Target};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

mod assemble;
mod parse;
mod table;
mod vars;

pub use table::{Setting, Shown};
pub use vars::*;

/// Which store to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreChoice {
    /// Redis at this URL (a secret: it may carry a password).
    Redis {
        /// The URL (for a cluster, seed URLs separated by commas).
        url: Secret,
        /// Key prefix.
        prefix: String,
        /// A Redis Cluster (several seeds, or [`REDIS_CLUSTER`]).
        cluster: bool,
        /// See [`REDIS_REPLICA_WAIT`].
        replica_wait: Duration,
        /// See [`REDIS_EVENTS_GATHER`].
        events_gather: Duration,
    },
    /// The embedded store in this directory.
    Embedded {
        /// The directory.
        dir: PathBuf,
    },
    /// Memory only (`--ephemeral`).
    Memory,
}

/// A setting that is missing or malformed: the variable, and what would be accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {reason}")]
pub struct ConfigError {
    /// The environment variable.
    pub variable: &'static str,
    /// What is wrong and how to fix it.
    pub reason: String,
}

/// Telegram settings.
#[derive(Clone, Debug)]
pub struct TelegramConfig {
    /// The bot token.
    pub token: Secret,
    /// Bot API base URL, if not Telegram's.
    pub api_url: Option<String>,
    /// Webhook URL; long polling when absent.
    pub webhook_url: Option<String>,
    /// Webhook secret token.
    pub webhook_secret: Option<Secret>,
}

/// Discord settings.
#[derive(Clone, Debug)]
pub struct DiscordConfig {
    /// The bot token.
    pub token: Secret,
    /// API base URL, if not Discord's.
    pub api_url: Option<String>,
    /// Application public key, for the HTTP interactions endpoint.
    pub public_key: Option<String>,
}

/// Email settings.
#[derive(Clone, Debug)]
pub struct EmailConfig {
    /// See [`EMAIL_SMTP_URL`].
    pub smtp_url: Secret,
    /// See [`EMAIL_IMAP_URL`].
    pub imap_url: Option<Secret>,
    /// See [`EMAIL_FROM`].
    pub from: Option<String>,
    /// See [`EMAIL_REPLY_ADDRESS`].
    pub reply_address: String,
    /// See [`EMAIL_SECRET`].
    pub secret: Secret,
    /// See [`EMAIL_REQUIRE_DMARC`].
    pub require_dmarc: bool,
    /// See [`EMAIL_AUTHSERV_ID`].
    pub authserv_id: Option<String>,
    /// See [`PUBLIC_URL`]: one-click links when set.
    pub public_url: Option<String>,
    /// See [`EMAIL_NOTIFY_RESOLVED`].
    pub notify_resolved: bool,
}

/// Slack settings.
#[derive(Clone, Debug)]
pub struct SlackConfig {
    /// The bot token.
    pub token: Secret,
    /// The app-level token: Socket Mode.
    pub app_token: Option<Secret>,
    /// The app's signing secret: HTTP mode.
    pub signing_secret: Option<Secret>,
    /// Web API base URL, if not Slack's.
    pub api_url: Option<String>,
}

/// Everything askbridge reads from the environment.
#[derive(Clone, Debug)]
pub struct Config {
    /// See [`HTTP_ADDR`].
    pub http_addr: SocketAddr,
    /// See [`API_TOKEN`].
    pub api_token: Option<Secret>,
    /// See [`REDIS_URL`] and [`DATA_DIR`].
    pub store: StoreChoice,
    /// See [`DEFAULT_TIMEOUT`].
    pub default_timeout: Duration,
    /// See [`RETENTION`].
    pub retention: Duration,
    /// See [`DEFAULT_TARGETS`].
    pub default_targets: Vec<Target>,
    /// See [`LOG`].
    pub log: String,
    /// Telegram, when [`TELEGRAM_BOT_TOKEN`] is set.
    pub telegram: Option<TelegramConfig>,
    /// Discord, when [`DISCORD_BOT_TOKEN`] is set.
    pub discord: Option<DiscordConfig>,
    /// Email, when [`EMAIL_SMTP_URL`] is set.
    pub email: Option<EmailConfig>,
    /// Slack, when [`SLACK_BOT_TOKEN`] is set.
    pub slack: Option<SlackConfig>,
    /// See [`FLOWS`]: (name, URL) pairs.
    pub http_flows: Vec<(String, String)>,
    /// See [`FLOW_SECRET`].
    pub flow_secret: Option<Secret>,
    /// See [`RUN_LEASE`].
    pub run_lease: Duration,
    /// See [`EXAMPLE_FLOWS`].
    pub example_flows: bool,
    /// See [`APPROVERS`].
    pub approvers: Vec<Identity>,
    /// See [`AUDIT_RETENTION`].
    pub audit_retention: Duration,
    /// See [`FLOW_STARTERS`].
    pub flow_starters: Vec<Identity>,
    /// See [`ALLOWED_HOSTS`] (with the hosts of [`TELEGRAM_WEBHOOK_URL`] and [`PUBLIC_URL`]).
    pub allowed_hosts: Vec<String>,
    /// See [`METRICS_PUBLIC`].
    pub metrics_public: bool,
    /// See [`CALLBACK_ALLOW`].
    pub callback_allow: Vec<String>,
    /// See [`MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// See [`BODY_TIMEOUT`].
    pub body_timeout: Duration,
    /// See [`WRITE_TIMEOUT`].
    pub write_timeout: Duration,
    /// See [`SHED_AFTER`].
    pub shed_after: Duration,
    /// See [`EVENT_BACKLOG`].
    pub event_backlog_kb: usize,
    /// See [`MCP_PROGRESS`].
    pub mcp_progress: Duration,
    /// See [`MAX_MCP_SESSIONS`].
    pub max_mcp_sessions: usize,
    /// See [`MCP_SESSION_IDLE`].
    pub mcp_session_idle: Duration,
    /// See [`REMINDER_GAP`].
    pub reminder_gap: Duration,
    /// See [`SESSION_LEASE`].
    pub session_lease: Duration,
}

/// The README's table of settings, one row per entry of [`SETTINGS`] (a test holds README.md to
/// it).
pub fn markdown_table() -> String {
    let mut table = String::from("| variable | default | meaning |\n|---|---|---|\n");
    for setting in SETTINGS {
        table.push_str(&setting.markdown_row());
    }
    table
}

/// How many threads execute askbridge's work ([`WORKER_THREADS`]); `None` for one per core.
/// Read on its own, before the rest: the runtime that reads the rest is built with it.
pub fn worker_threads(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<usize>, ConfigError> {
    Values::worker_threads(&trimmed(&lookup))
}

/// `lookup` as settings are read: a value trimmed, a blank one as unset.
fn trimmed(lookup: &impl Fn(&str) -> Option<String>) -> impl Fn(&str) -> Option<String> + '_ {
    |name| {
        lookup(name)
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup` (tests pass a map): every variable of the table, then
    /// the rules between them.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = trimmed(&lookup);
        let values = Values::read(&get)?;
        values.check_pairs()?;
        Ok(Config::assemble(values, &get, &lookup))
    }
}

impl Values {
    /// The settings that need another, each saying why.
    fn check_pairs(&self) -> Result<(), ConfigError> {
        let telegram_webhook =
            self.telegram_bot_token.is_some() && self.telegram_webhook_url.is_some();
        if telegram_webhook && self.telegram_webhook_secret.is_none() {
            return Err(ConfigError {
                variable: TELEGRAM_WEBHOOK_SECRET,
                reason: format!(
                    "is required with {TELEGRAM_WEBHOOK_URL}, so that forged updates are refused"
                ),
            });
        }
        let discord_endpoint =
            self.discord_bot_token.is_some() && self.discord_public_key.is_some();
        let slack_receives = self.slack_app_token.is_some() || self.slack_signing_secret.is_some();
        if self.slack_bot_token.is_some() && !slack_receives {
            return Err(ConfigError {
                variable: SLACK_APP_TOKEN,
                reason: format!(
                    "is required with {SLACK_BOT_TOKEN}: Slack reaches askbridge over Socket Mode with the \
                     app-level token (xapp-...), or set {SLACK_SIGNING_SECRET} for HTTP mode"
                ),
            });
        }
        let public_endpoint = if telegram_webhook {
            Some(TELEGRAM_WEBHOOK_URL)
        } else if discord_endpoint {
            Some(DISCORD_PUBLIC_KEY)
        } else if self.slack_bot_token.is_some() && self.slack_signing_secret.is_some() {
            Some(SLACK_SIGNING_SECRET)
        } else {
            None
        };
        if let (Some(variable), None) = (public_endpoint, &self.api_token) {
            return Err(ConfigError {
                variable: API_TOKEN,
                reason: format!(
                    "is required with {variable}: a webhook puts askbridge's HTTP server where the internet \
                     reaches it, and /api must not be open there"
                ),
            });
        }
        if self.email_smtp_url.is_some() {
            for (variable, set) in [
                (EMAIL_REPLY_ADDRESS, self.email_reply_address.is_some()),
                (EMAIL_SECRET, self.email_secret.is_some()),
            ] {
                if !set {
                    return Err(ConfigError {
                        variable,
                        reason: format!(
                            "is required with {EMAIL_SMTP_URL}: replies are matched to questions by signed reply addresses"
                        ),
                    });
                }
            }
            if self.email_imap_url.is_some()
                && self.email_require_dmarc
                && self.email_authserv_id.is_none()
            {
                return Err(ConfigError {
                    variable: EMAIL_AUTHSERV_ID,
                    reason: format!(
                        "is required with {EMAIL_IMAP_URL} while {EMAIL_REQUIRE_DMARC} is true: only your own server's \
                         DMARC results are trusted (or set {EMAIL_REQUIRE_DMARC}=false)"
                    ),
                });
            }
        }
        let has_flows = self.flows.as_ref().is_some_and(|flows| !flows.is_empty());
        if has_flows && self.flow_secret.is_none() {
            return Err(ConfigError {
                variable: FLOW_SECRET,
                reason: format!(
                    "is required with {FLOWS}, so that flow endpoints can check who calls them"
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults() {
        let config = config(&[("HOME", "/home/a")]).unwrap();
        assert_eq!(config.http_addr.to_string(), "127.0.0.1:8080");
        assert_eq!(config.default_timeout, Duration::from_secs(1800));
        assert_eq!(
            config.store,
            StoreChoice::Embedded {
                dir: PathBuf::from("/home/a/.local/share/askbridge")
            }
        );
        assert!(
            config.telegram.is_none() && config.discord.is_none() && config.api_token.is_none()
        );
    }

    #[test]
    fn errors_name_the_variable() {
        for (variable, value) in [
            (HTTP_ADDR, "localhost"),
            (REDIS_URL, "http://x"),
            (DEFAULT_TIMEOUT, "-1"),
            (RETENTION, "soon"),
            (DEFAULT_TARGETS, "nowhere"),
            (FLOWS, "deploy"),
            (RUN_LEASE, "0"),
            (EXAMPLE_FLOWS, "maybe"),
            (APPROVERS, "alice"),
            (AUDIT_RETENTION, "forever"),
            (CALLBACK_ALLOW, "10.0.0.0/99"),
            (METRICS_PUBLIC, "sometimes"),
            (MAX_CONNECTIONS, "0"),
            (REMINDER_GAP, "often"),
        ] {
            match config(&[(variable, value)]) {
                Err(ConfigError {
                    variable: named, ..
                }) => assert_eq!(named, variable),
                other => panic!("{variable}={value}: expected an error, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_malformed_value_is_an_error_even_where_it_is_not_used() {
        // Without REDIS_URL or a Telegram token these are not used; a typo still stops start-up
        // rather than waiting for the day they are.
        for (variable, value) in [
            (REDIS_CLUSTER, "maybe"),
            (REDIS_REPLICA_WAIT, "soon"),
            (REDIS_EVENTS_GATHER, "-1"),
            (TELEGRAM_WEBHOOK_SECRET, "has space"),
            (WORKER_THREADS, "0"),
        ] {
            assert_eq!(config(&[(variable, value)]).unwrap_err().variable, variable);
        }
    }

    #[test]
    fn redis_defaults_are_the_stores() {
        let config = config(&[(REDIS_URL, "redis://localhost")]).unwrap();
        let StoreChoice::Redis {
            prefix,
            replica_wait,
            events_gather,
            cluster,
            ..
        } = config.store
        else {
            panic!("REDIS_URL is set: {:?}", config.store);
        };
        assert_eq!(prefix, crate::store::redis::DEFAULT_PREFIX);
        assert_eq!(replica_wait, crate::store::redis::DEFAULT_REPLICA_WAIT);
        assert_eq!(events_gather, crate::store::redis::DEFAULT_EVENTS_GATHER);
        assert!(!cluster);
    }

    #[test]
    fn worker_threads_are_a_positive_number_or_one_per_core() {
        let threads = |value: &str| {
            let value = value.to_owned();
            worker_threads(move |name| (name == WORKER_THREADS).then(|| value.clone()))
        };
        assert_eq!(threads("").unwrap(), None);
        assert_eq!(threads(" 1 ").unwrap(), Some(1));
        for bad in ["0", "-2", "many"] {
            assert_eq!(threads(bad).unwrap_err().variable, WORKER_THREADS);
        }
    }

    #[test]
    fn http_flows_need_a_secret() {
        let flows = [(
            FLOWS,
            "deploy=https://flows.example/deploy, report=http://127.0.0.1:9/r",
        )];
        assert!(matches!(
            config(&flows),
            Err(ConfigError {
                variable: FLOW_SECRET,
                ..
            })
        ));
        let config = config(&[flows[0], (FLOW_SECRET, "k")]).unwrap();
        assert_eq!(
            config.http_flows[1],
            ("report".to_owned(), "http://127.0.0.1:9/r".to_owned())
        );
    }

    #[test]
    fn slack_needs_an_app_token_or_its_signing_secret_and_then_the_api_token() {
        let token = (SLACK_BOT_TOKEN, "xoxb-1");
        let missing = config(&[token]).unwrap_err();
        assert_eq!(missing.variable, SLACK_APP_TOKEN);
        assert!(
            missing.reason.contains(SLACK_SIGNING_SECRET),
            "{}",
            missing.reason
        );
        let with_secret = [token, (SLACK_SIGNING_SECRET, "s")];
        assert_eq!(config(&with_secret).unwrap_err().variable, API_TOKEN);
        let http = config(&[with_secret[0], with_secret[1], (API_TOKEN, "t")]).unwrap();
        let slack = http.slack.unwrap();
        assert_eq!(slack.signing_secret.unwrap().expose(), "s");
        assert!(slack.app_token.is_none());
        assert_eq!(slack.api_url, None);
        // Socket Mode opens no endpoint: no API token needed.
        let socket = config(&[token, (SLACK_APP_TOKEN, "xapp-1")]).unwrap();
        let slack = socket.slack.unwrap();
        assert_eq!(slack.app_token.unwrap().expose(), "xapp-1");
        assert!(slack.signing_secret.is_none());
    }

    #[test]
    fn webhook_mode_requires_a_well_formed_secret() {
        let base = [
            (TELEGRAM_BOT_TOKEN, "1:abc"),
            (TELEGRAM_WEBHOOK_URL, "https://x/tg"),
        ];
        assert!(matches!(
            config(&base),
            Err(ConfigError {
                variable: TELEGRAM_WEBHOOK_SECRET,
                ..
            })
        ));
        let bad = [base[0], base[1], (TELEGRAM_WEBHOOK_SECRET, "has space")];
        assert!(config(&bad).is_err());
        let good = [base[0], base[1], (TELEGRAM_WEBHOOK_SECRET, "s3cret_-")];
        assert!(
            matches!(
                config(&good),
                Err(ConfigError {
                    variable: API_TOKEN,
                    ..
                })
            ),
            "a public webhook needs the API closed"
        );
        let good = [base[0], base[1], good[2], (API_TOKEN, "t")];
        assert!(config(&good).is_ok());
    }

    #[test]
    fn secrets_never_print() {
        let config = config(&[
            (API_TOKEN, "tok-123"),
            (TELEGRAM_BOT_TOKEN, "42:telegram-secret"),
            (DISCORD_BOT_TOKEN, "discord-secret"),
            (REDIS_URL, "redis://:pw@localhost"),
            (FLOW_SECRET, "flow-secret-value"),
            (EMAIL_SMTP_URL, "smtp://bot:smtp-password@localhost:587"),
            (EMAIL_IMAP_URL, "imaps://bot:imap-password@localhost"),
            (EMAIL_REPLY_ADDRESS, "askbridge@example.com"),
            (EMAIL_SECRET, "email-hmac-secret"),
            (EMAIL_AUTHSERV_ID, "mx.example.com"),
        ])
        .unwrap();
        let printed = format!("{config:?}");
        for secret in [
            "tok-123",
            "telegram-secret",
            "discord-secret",
            ":pw@",
            "flow-secret-value",
            "smtp-password",
            "imap-password",
            "email-hmac-secret",
        ] {
            assert!(!printed.contains(secret), "{secret} leaked: {printed}");
        }
    }

    #[test]
    fn email_needs_its_reply_address_secret_and_authserv_id() {
        let smtp = (EMAIL_SMTP_URL, "smtp://localhost:25");
        let error = config(&[smtp]).unwrap_err();
        assert_eq!(error.variable, EMAIL_REPLY_ADDRESS);
        let error = config(&[smtp, (EMAIL_REPLY_ADDRESS, "a@example.com")]).unwrap_err();
        assert_eq!(error.variable, EMAIL_SECRET);
        let base = [
            smtp,
            (EMAIL_REPLY_ADDRESS, "a@example.com"),
            (EMAIL_SECRET, "s"),
            (EMAIL_IMAP_URL, "imap://u:p@localhost"),
        ];
        assert_eq!(config(&base).unwrap_err().variable, EMAIL_AUTHSERV_ID);
        let mut lax = base.to_vec();
        lax.push((EMAIL_REQUIRE_DMARC, "false"));
        let email = config(&lax).unwrap().email.unwrap();
        assert!(!email.require_dmarc && email.authserv_id.is_none());
        assert!(config(&[]).unwrap().email.is_none());
    }
}
