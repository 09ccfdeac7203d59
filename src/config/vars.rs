//! The settings table: every environment variable askbridge reads, declared once with its
//! default, its parser and its help. From each entry come the constant that names the variable
//! in the code, its line in `serve --help` and in the README, and the function that reads it.

use super::ConfigError;
use super::parse;
use super::table::{self, Get, Setting, Shown};
use askbridge_core::secret::Secret;
use askbridge_core::{Identity, Target};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// An entry reads
/// `CONSTANT = "VARIABLE", field: Type = parser, default "text" | unset "words", "help";`
/// - `default "text"`: an unset variable reads as `text` (shown as a value); the field is `Type`.
/// - `unset "words"`: an unset variable is `None` (the words say what that means); the field is
///   `Option<Type>`, spelled out.
///
/// Doc comments on an entry go to its constant, for what a line of help has no room for.
macro_rules! settings {
    ($(
        $(#[$doc:meta])*
        $constant:ident = $name:literal, $field:ident: $type:ty = $parse:path,
        $kind:ident $shown:literal, $help:literal;
    )*) => {
        $(
            #[doc = concat!($help, ".")]
            #[doc = ""]
            #[doc = settings!(@doc $kind $shown)]
            $(#[$doc])*
            pub const $constant: &str = $name;
        )*

        /// Every setting, in the order the listings show them.
        pub static SETTINGS: &[Setting] = &[$(
            Setting { name: $constant, default: settings!(@shown $kind $shown), help: $help },
        )*];

        /// Every setting's value; each field is read by the function of its name.
        pub(super) struct Values {
            $(pub(super) $field: $type,)*
        }

        impl Values {
            /// Reads every setting: the first malformed one, in table order, is the error.
            pub(super) fn read(get: &Get<'_>) -> Result<Self, ConfigError> {
                Ok(Values { $($field: Values::$field(get)?,)* })
            }

            $(
                pub(super) fn $field(get: &Get<'_>) -> Result<$type, ConfigError> {
                    settings!(@read $kind $shown, get, $constant, $parse)
                }
            )*
        }
    };
    (@shown default $text:literal) => { Shown::Value($text) };
    (@shown unset $text:literal) => { Shown::Note($text) };
    (@doc default $text:literal) => { concat!("Default: `", $text, "`.") };
    (@doc unset $text:literal) => { concat!("When unset: ", $text, ".") };
    (@read default $text:literal, $get:ident, $constant:ident, $parse:path) => {
        table::with_default($get, $constant, $text, $parse)
    };
    (@read unset $text:literal, $get:ident, $constant:ident, $parse:path) => {
        table::optional($get, $constant, $parse)
    };
}

settings! {
    HTTP_ADDR = "ASKBRIDGE_HTTP_ADDR",
        http_addr: SocketAddr = parse::address, default "127.0.0.1:8080",
        "HTTP API address";
    API_TOKEN = "ASKBRIDGE_API_TOKEN",
        api_token: Option<Secret> = parse::secret, unset "none",
        "bearer token every `/api` route requires";
    REDIS_URL = "REDIS_URL",
        redis_url: Option<Secret> = parse::redis_url, unset "none",
        "Redis store (else the embedded store); comma-separated seed URLs for a Redis Cluster";
    REDIS_PREFIX = "ASKBRIDGE_REDIS_PREFIX",
        redis_prefix: String = parse::text, default "askbridge",
        "Redis key prefix";
    REDIS_CLUSTER = "ASKBRIDGE_REDIS_CLUSTER",
        redis_cluster: bool = parse::flag, default "false",
        "`REDIS_URL` is one seed of a Redis Cluster (several comma-separated URLs mean a cluster anyway)";
    /// The wait is there so that a failover cannot lose an acknowledged claim or ask.
    REDIS_REPLICA_WAIT = "ASKBRIDGE_REDIS_REPLICA_WAIT_MS",
        redis_replica_wait: Duration = parse::millis, default "500",
        "on a cluster, milliseconds a claim or an ask waits for a replica (`WAIT 1`); 0 turns it off";
    /// Fewer reads of the event streams under load, for a little latency between processes.
    REDIS_EVENTS_GATHER = "ASKBRIDGE_REDIS_EVENTS_GATHER_MS",
        redis_events_gather: Duration = parse::millis, default "1",
        "milliseconds the event reader lets events gather after a read that found some (under load one read then carries many); a waiter in another process hears of an answer up to this much later; 0 reads again at once";
    DATA_DIR = "ASKBRIDGE_DATA_DIR",
        data_dir: Option<PathBuf> = parse::path, unset "`~/.local/share/askbridge`",
        "embedded store directory (used when `REDIS_URL` is unset)";
    DEFAULT_TIMEOUT = "ASKBRIDGE_DEFAULT_TIMEOUT_S",
        default_timeout: Duration = parse::seconds, default "1800",
        "seconds a question stays open when it names no timeout";
    RETENTION = "ASKBRIDGE_RETENTION_S",
        retention: Duration = parse::seconds, default "604800",
        "seconds resolved questions are kept (7 days)";
    DEFAULT_TARGETS = "ASKBRIDGE_DEFAULT_TARGETS",
        default_targets: Option<Vec<Target>> = parse::targets, unset "none",
        "targets of Rust API questions that name none, comma-separated";
    LOG = "ASKBRIDGE_LOG",
        log: Option<String> = parse::text, unset "`RUST_LOG`, else `info`",
        "log filter (`RUST_LOG` syntax)";
    TELEGRAM_BOT_TOKEN = "TELEGRAM_BOT_TOKEN",
        telegram_bot_token: Option<Secret> = parse::secret, unset "none",
        "Telegram bot token; Telegram is on when set";
    TELEGRAM_API_URL = "TELEGRAM_API_URL",
        telegram_api_url: Option<String> = parse::text, unset "Telegram's",
        "Bot API base URL (for a self-hosted Bot API server)";
    TELEGRAM_WEBHOOK_URL = "TELEGRAM_WEBHOOK_URL",
        telegram_webhook_url: Option<String> = parse::text, unset "none",
        "public HTTPS URL Telegram posts updates to (webhook mode; long polling when unset)";
    TELEGRAM_WEBHOOK_SECRET = "TELEGRAM_WEBHOOK_SECRET",
        telegram_webhook_secret: Option<Secret> = parse::webhook_secret, unset "none",
        "secret Telegram sends with each webhook update (1-256 of `A-Za-z0-9_-`)";
    DISCORD_BOT_TOKEN = "DISCORD_BOT_TOKEN",
        discord_bot_token: Option<Secret> = parse::secret, unset "none",
        "Discord bot token; Discord is on when set";
    DISCORD_API_URL = "DISCORD_API_URL",
        discord_api_url: Option<String> = parse::text, unset "Discord's",
        "Discord API base URL (for proxies and tests)";
    DISCORD_PUBLIC_KEY = "DISCORD_PUBLIC_KEY",
        discord_public_key: Option<String> = parse::text, unset "none",
        "Discord application public key (hex); enables the HTTP interactions endpoint";
    EMAIL_SMTP_URL = "EMAIL_SMTP_URL",
        email_smtp_url: Option<Secret> = parse::secret, unset "none",
        "SMTP submission URL (`smtp://user:password@host:587?tls=required`, `smtps://...:465`); email is on when set";
    EMAIL_IMAP_URL = "EMAIL_IMAP_URL",
        email_imap_url: Option<Secret> = parse::secret, unset "replies are not read",
        "IMAP mailbox the replies arrive in (`imaps://user:password@host/INBOX`), watched with IDLE (polled without); replies read are flagged and moved to the folder `?processed=<folder>` names (`Askbridge`), other mail left unseen; nothing is deleted";
    EMAIL_FROM = "EMAIL_FROM",
        email_from: Option<String> = parse::text, unset "`EMAIL_REPLY_ADDRESS`",
        "sender of askbridge's mails (`askbridge <askbridge@example.com>`)";
    EMAIL_REPLY_ADDRESS = "EMAIL_REPLY_ADDRESS",
        email_reply_address: Option<String> = parse::text, unset "none",
        "base of the per-question reply addresses: `askbridge@example.com` gives `askbridge+<id>.<tag>@example.com`";
    EMAIL_SECRET = "EMAIL_SECRET",
        email_secret: Option<Secret> = parse::secret, unset "none",
        "HMAC key of the reply addresses' tags (so a reply address cannot be made up)";
    EMAIL_REQUIRE_DMARC = "EMAIL_REQUIRE_DMARC",
        email_require_dmarc: bool = parse::flag, default "true",
        "count an emailed answer only when our server's `Authentication-Results` says `dmarc=pass` for its From domain";
    EMAIL_NOTIFY_RESOLVED = "EMAIL_NOTIFY_RESOLVED",
        email_notify_resolved: bool = parse::flag, default "false",
        "mail a short \"answered by …\" in a question's thread when it is resolved other than by that recipient's own reply";
    EMAIL_AUTHSERV_ID = "EMAIL_AUTHSERV_ID",
        email_authserv_id: Option<String> = parse::text, unset "none",
        "authserv-id your receiving server writes in `Authentication-Results` (`mx.example.com`); only its results are trusted";
    SLACK_BOT_TOKEN = "SLACK_BOT_TOKEN",
        slack_bot_token: Option<Secret> = parse::secret, unset "none",
        "Slack bot token (`xoxb-...`); Slack is on when set (with `SLACK_APP_TOKEN` or `SLACK_SIGNING_SECRET`)";
    SLACK_APP_TOKEN = "SLACK_APP_TOKEN",
        slack_app_token: Option<Secret> = parse::secret, unset "none",
        "Slack app-level token (`xapp-...`, scope `connections:write`): Socket Mode, no public URL needed";
    SLACK_SIGNING_SECRET = "SLACK_SIGNING_SECRET",
        slack_signing_secret: Option<Secret> = parse::secret, unset "none",
        "Slack app signing secret: HTTP mode, checked on every request to `/slack/*`";
    SLACK_API_URL = "SLACK_API_URL",
        slack_api_url: Option<String> = parse::text, unset "Slack's",
        "Slack Web API base URL (for proxies and tests)";
    FLOWS = "ASKBRIDGE_FLOWS",
        flows: Option<Vec<(String, String)>> = parse::flows, unset "none",
        "HTTP flows, `name=url` pairs, comma-separated";
    FLOW_SECRET = "ASKBRIDGE_FLOW_SECRET",
        flow_secret: Option<Secret> = parse::secret, unset "none",
        "HMAC key signing requests to flows and callback URLs";
    RUN_LEASE = "ASKBRIDGE_RUN_LEASE_S",
        run_lease: Duration = parse::seconds, default "30",
        "seconds a process holds a run it executes (renewed while it runs)";
    /// `askbridge exec` renews its session's lease every third of this; the sweeper looks for
    /// lapsed leases every 5 s, so a killed exec's questions are cancelled within this + 5 s.
    SESSION_LEASE = "ASKBRIDGE_SESSION_LEASE_S",
        session_lease: Duration = parse::seconds, default "30",
        "seconds a session of `askbridge exec` stays open without renewal, after which its pending questions are cancelled";
    EXAMPLE_FLOWS = "ASKBRIDGE_EXAMPLE_FLOWS",
        example_flows: bool = parse::flag, default "false",
        "offer the example flow `/release` in `serve`";
    APPROVERS = "ASKBRIDGE_APPROVERS",
        approvers: Option<Vec<Identity>> = parse::identities, unset "none",
        "identities who approve approvals naming no answerers, and manage rules";
    AUDIT_RETENTION = "ASKBRIDGE_AUDIT_RETENTION_S",
        audit_retention: Duration = parse::seconds, default "7776000",
        "seconds audit records are kept (90 days)";
    FLOW_STARTERS = "ASKBRIDGE_FLOW_STARTERS",
        flow_starters: Option<Vec<Identity>> = parse::identities, unset "anyone",
        "identities who may start flows from a chat";
    PUBLIC_URL = "ASKBRIDGE_PUBLIC_URL",
        public_url: Option<String> = parse::public_url, unset "none",
        "askbridge's public URL (`https://askbridge.example.com`): mails then carry one-click answer links to a confirmation page there; its host passes the Host check";
    ALLOWED_HOSTS = "ASKBRIDGE_ALLOWED_HOSTS",
        allowed_hosts: Option<Vec<String>> = parse::list, unset "addresses, `localhost`",
        "host names the HTTP server answers to (the public name behind a proxy); `*` turns the check off";
    METRICS_PUBLIC = "ASKBRIDGE_METRICS_PUBLIC",
        metrics_public: bool = parse::flag, default "false",
        "serve `/metrics` without the API token";
    CALLBACK_ALLOW = "ASKBRIDGE_CALLBACK_ALLOW",
        callback_allow: Option<Vec<String>> = parse::callback_allow, unset "none",
        "internal hosts, addresses or networks callback URLs may reach";
    MAX_CONNECTIONS = "ASKBRIDGE_MAX_CONNECTIONS",
        max_connections: usize = parse::positive, default "4096",
        "HTTP connections served at once";
    /// A body is read whole before a handler acts on it; a client sending one byte every few
    /// seconds would otherwise hold a connection for ever.
    BODY_TIMEOUT = "ASKBRIDGE_BODY_TIMEOUT_S",
        body_timeout: Duration = parse::seconds, default "30",
        "seconds a client may take to send a request's body (else a JSON 400 and the connection is closed)";
    /// Counted while the client takes no bytes at all, so an event stream read slowly lives on.
    WRITE_TIMEOUT = "ASKBRIDGE_WRITE_TIMEOUT_S",
        write_timeout: Duration = parse::seconds, default "30",
        "seconds a client may leave the server's answer (a response, an event stream) untaken before the connection is closed";
    /// Long polls and event streams being answered never count as waiting on their client.
    SHED_AFTER = "ASKBRIDGE_SHED_AFTER_MS",
        shed_after: Duration = parse::millis, default "1000",
        "at the connection cap, a new connection takes the place of one that has kept the server waiting this long (idle, or slow to send its body or take its answer)";
    /// The kernel alone would take 4 MB and more for a client that never reads, and nothing
    /// would ever be cut: an event stream's socket is sized to this bound.
    EVENT_BACKLOG = "ASKBRIDGE_EVENT_BACKLOG_KB",
        event_backlog_kb: usize = parse::positive, default "1024",
        "KB of events a client of `/api/events` may leave untaken before the connection is cut (a new stream replays at most half of it)";
    MCP_PROGRESS = "ASKBRIDGE_MCP_PROGRESS_S",
        mcp_progress: Duration = parse::seconds, default "15",
        "seconds between MCP progress notifications while a tool call waits";
    MAX_MCP_SESSIONS = "ASKBRIDGE_MAX_MCP_SESSIONS",
        max_mcp_sessions: usize = parse::positive, default "1000",
        "MCP sessions held at once on `/mcp`; past it `initialize` gets a JSON-RPC error (503)";
    MCP_SESSION_IDLE = "ASKBRIDGE_MCP_SESSION_IDLE_S",
        mcp_session_idle: Duration = parse::seconds, default "300",
        "seconds an MCP session on `/mcp` is kept with nothing happening in it";
    /// Where askbridge shares a small machine with Redis, fewer threads switch less: on 2 cores,
    /// one served the most (`scripts/bench`).
    WORKER_THREADS = "ASKBRIDGE_WORKER_THREADS",
        worker_threads: Option<usize> = parse::positive, unset "one per core",
        "threads executing askbridge's work (on 2 cores shared with Redis, 1 served the most; see Benchmarks)";
    /// 60 by default because Telegram allows a bot about 20 messages a minute in a group.
    REMINDER_GAP = "ASKBRIDGE_REMINDER_GAP_S",
        reminder_gap: Duration = parse::seconds, default "60",
        "least seconds between two reminders in one chat, and so the shortest `remind_after_s`";
}
