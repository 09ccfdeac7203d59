//! Configuration, read once at start-up from the environment (and a `.env` file, which the
//! binary loads first without overriding what the environment already sets).
//!
//! Every variable is named by a constant here and listed in `.env.example`. A malformed value is
//! an error naming the variable and saying what would be accepted; an absent one takes the
//! documented default. Secrets are kept in [`Secret`], whose `Debug` prints `***`, so a logged
//! config never shows a token.

pub use askbridge_core::secret::Secret;
use askbridge_core::{Identity, Target};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

mod parse;
mod vars;

use parse::{default_data_dir, flag, identities, list, parse_flows, seconds};
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
    /// See [`ALLOWED_HOSTS`] (with the host of [`TELEGRAM_WEBHOOK_URL`]).
    pub allowed_hosts: Vec<String>,
    /// See [`METRICS_PUBLIC`].
    pub metrics_public: bool,
    /// See [`CALLBACK_ALLOW`].
    pub callback_allow: Vec<String>,
    /// See [`MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// See [`MCP_PROGRESS`].
    pub mcp_progress: Duration,
    /// See [`REMINDER_GAP`].
    pub reminder_gap: Duration,
}

/// How many threads execute askbridge's work ([`WORKER_THREADS`]); `None` for one per core.
/// Read on its own, before the rest: the runtime that reads the rest is built with it.
pub fn worker_threads(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<usize>, ConfigError> {
    parse::positive(&lookup, WORKER_THREADS)
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let http_addr = match get(HTTP_ADDR) {
            Some(text) => text.parse().map_err(|_| ConfigError {
                variable: HTTP_ADDR,
                reason: format!("`{text}` is not an address like 127.0.0.1:8080"),
            })?,
            None => SocketAddr::from(([127, 0, 0, 1], 8080)),
        };
        let store = match get(REDIS_URL) {
            Some(url) => {
                let seeds: Vec<&str> = url.split(',').map(str::trim).collect();
                let well_formed = |u: &&str| {
                    u.starts_with("redis://")
                        || u.starts_with("rediss://")
                        || u.starts_with("unix://")
                };
                if !seeds.iter().all(well_formed) {
                    return Err(ConfigError {
                        variable: REDIS_URL,
                        reason: "must start with redis://, rediss:// or unix:// (for a cluster, seed URLs separated by commas)".into(),
                    });
                }
                let cluster = seeds.len() > 1 || flag(&get, REDIS_CLUSTER, false)?;
                StoreChoice::Redis {
                    url: Secret::new(url),
                    prefix: get(REDIS_PREFIX)
                        .unwrap_or_else(|| crate::store::redis::DEFAULT_PREFIX.into()),
                    cluster,
                    replica_wait: match get(REDIS_REPLICA_WAIT) {
                        None => crate::store::redis::DEFAULT_REPLICA_WAIT,
                        Some(text) => Duration::from_millis(text.parse().map_err(|_| ConfigError {
                            variable: REDIS_REPLICA_WAIT,
                            reason: format!("`{text}` is not a number of milliseconds (0 turns the wait off)"),
                        })?),
                    },
                }
            }
            None => StoreChoice::Embedded {
                dir: get(DATA_DIR)
                    .map(PathBuf::from)
                    .unwrap_or_else(|| default_data_dir(&lookup)),
            },
        };
        let telegram = get(TELEGRAM_BOT_TOKEN).map(|token| TelegramConfig {
            token: Secret::new(token),
            api_url: get(TELEGRAM_API_URL),
            webhook_url: get(TELEGRAM_WEBHOOK_URL),
            webhook_secret: get(TELEGRAM_WEBHOOK_SECRET).map(Secret::new),
        });
        if let Some(secret) = telegram.as_ref().and_then(|t| t.webhook_secret.as_ref()) {
            let text = secret.expose();
            let ok = (1..=256).contains(&text.len())
                && text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return Err(ConfigError {
                    variable: TELEGRAM_WEBHOOK_SECRET,
                    reason: "must be 1-256 characters of A-Z, a-z, 0-9, _ and -".into(),
                });
            }
        }
        if telegram
            .as_ref()
            .is_some_and(|t| t.webhook_url.is_some() && t.webhook_secret.is_none())
        {
            return Err(ConfigError {
                variable: TELEGRAM_WEBHOOK_SECRET,
                reason: format!(
                    "is required with {TELEGRAM_WEBHOOK_URL}, so that forged updates are refused"
                ),
            });
        }
        let discord = get(DISCORD_BOT_TOKEN).map(|token| DiscordConfig {
            token: Secret::new(token),
            api_url: get(DISCORD_API_URL),
            public_key: get(DISCORD_PUBLIC_KEY),
        });
        let approvers = identities(&get, APPROVERS)?;
        let default_targets: Vec<String> = get(DEFAULT_TARGETS)
            .map(|list| {
                list.split(',')
                    .map(|t| t.trim().to_owned())
                    .filter(|t| !t.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(bad) = default_targets
            .iter()
            .find(|t| !askbridge_core::identity::is_well_formed(t))
        {
            return Err(ConfigError {
                variable: DEFAULT_TARGETS,
                reason: format!(
                    "`{bad}` is not a target like telegram:<chat id>, discord:<channel id> or console"
                ),
            });
        }
        let api_token = get(API_TOKEN).map(Secret::new);
        let public_endpoint = if telegram.as_ref().is_some_and(|t| t.webhook_url.is_some()) {
            Some(TELEGRAM_WEBHOOK_URL)
        } else if discord.as_ref().is_some_and(|d| d.public_key.is_some()) {
            Some(DISCORD_PUBLIC_KEY)
        } else {
            None
        };
        if let (Some(variable), None) = (public_endpoint, &api_token) {
            return Err(ConfigError {
                variable: API_TOKEN,
                reason: format!(
                    "is required with {variable}: a webhook puts askbridge's HTTP server where the internet \
                     reaches it, and /api must not be open there"
                ),
            });
        }
        let http_flows = parse_flows(get(FLOWS).as_deref())?;
        let flow_secret = get(FLOW_SECRET).map(Secret::new);
        if !http_flows.is_empty() && flow_secret.is_none() {
            return Err(ConfigError {
                variable: FLOW_SECRET,
                reason: format!(
                    "is required with {FLOWS}, so that flow endpoints can check who calls them"
                ),
            });
        }
        let example_flows = flag(&get, EXAMPLE_FLOWS, false)?;
        let callback_allow = list(&get, CALLBACK_ALLOW);
        crate::egress::Egress::public_only()
            .allow(&callback_allow)
            .map_err(|reason| ConfigError {
                variable: CALLBACK_ALLOW,
                reason,
            })?;
        let mut allowed_hosts = list(&get, ALLOWED_HOSTS);
        // Telegram posts its webhook to this name.
        if let Some(host) = telegram
            .as_ref()
            .and_then(|t| t.webhook_url.as_deref())
            .and_then(|url| reqwest::Url::parse(url).ok())
            .and_then(|url| url.host_str().map(str::to_owned))
        {
            allowed_hosts.push(host);
        }
        let max_connections = parse::positive(&get, MAX_CONNECTIONS)?.unwrap_or(4096);
        Ok(Config {
            http_addr,
            api_token,
            store,
            default_timeout: seconds(&get, DEFAULT_TIMEOUT, 1800)?,
            retention: seconds(&get, RETENTION, 7 * 24 * 3600)?,
            default_targets: default_targets.into_iter().map(Target::new).collect(),
            log: get(LOG)
                .or_else(|| get("RUST_LOG"))
                .unwrap_or_else(|| "info".into()),
            telegram,
            discord,
            http_flows,
            flow_secret,
            run_lease: seconds(&get, RUN_LEASE, 30)?,
            example_flows,
            approvers: approvers.into_iter().map(Identity::new).collect(),
            audit_retention: seconds(&get, AUDIT_RETENTION, 90 * 24 * 3600)?,
            flow_starters: identities(&get, FLOW_STARTERS)?
                .into_iter()
                .map(Identity::new)
                .collect(),
            allowed_hosts,
            metrics_public: flag(&get, METRICS_PUBLIC, false)?,
            callback_allow,
            max_connections,
            mcp_progress: seconds(&get, MCP_PROGRESS, 15)?,
            reminder_gap: seconds(&get, REMINDER_GAP, 60)?,
        })
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
        ])
        .unwrap();
        let printed = format!("{config:?}");
        for secret in [
            "tok-123",
            "telegram-secret",
            "discord-secret",
            ":pw@",
            "flow-secret-value",
        ] {
            assert!(!printed.contains(secret), "{secret} leaked: {printed}");
        }
    }
}
