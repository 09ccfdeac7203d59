//! The environment variables askbridge reads, each named once, and the list `--help` prints.

/// Address of the HTTP API. Default `127.0.0.1:8080`.
pub const HTTP_ADDR: &str = "ASKBRIDGE_HTTP_ADDR";
/// Bearer token every `/api` route requires when set.
pub const API_TOKEN: &str = "ASKBRIDGE_API_TOKEN";
/// Redis URL; when set, Redis is the store.
pub const REDIS_URL: &str = "REDIS_URL";
/// `true` when `REDIS_URL` is one seed node of a Redis Cluster (several comma-separated URLs
/// mean a cluster anyway).
pub const REDIS_CLUSTER: &str = "ASKBRIDGE_REDIS_CLUSTER";
/// On a Redis Cluster, milliseconds a claim or an ask waits for a replica to have it (`WAIT 1`),
/// so that a failover cannot lose it. Default 500; 0 turns the wait off.
pub const REDIS_REPLICA_WAIT: &str = "ASKBRIDGE_REDIS_REPLICA_WAIT_MS";
/// Prefix of askbridge's Redis keys. Default `askbridge`.
pub const REDIS_PREFIX: &str = "ASKBRIDGE_REDIS_PREFIX";
/// Directory of the embedded store (used when `REDIS_URL` is unset).
pub const DATA_DIR: &str = "ASKBRIDGE_DATA_DIR";
/// Timeout of questions that name none, in seconds. Default 1800.
pub const DEFAULT_TIMEOUT: &str = "ASKBRIDGE_DEFAULT_TIMEOUT_S";
/// How long resolved questions are kept, in seconds. Default 604800 (7 days).
pub const RETENTION: &str = "ASKBRIDGE_RETENTION_S";
/// Comma-separated targets for questions asked through the Rust API without targets.
pub const DEFAULT_TARGETS: &str = "ASKBRIDGE_DEFAULT_TARGETS";
/// Log filter (tracing's `EnvFilter` syntax). Default `info`.
pub const LOG: &str = "ASKBRIDGE_LOG";
/// Telegram bot token; Telegram is on when set.
pub const TELEGRAM_BOT_TOKEN: &str = "TELEGRAM_BOT_TOKEN";
/// Telegram Bot API base URL. Default `https://api.telegram.org`.
pub const TELEGRAM_API_URL: &str = "TELEGRAM_API_URL";
/// Public HTTPS URL Telegram should post updates to; webhook mode when set.
pub const TELEGRAM_WEBHOOK_URL: &str = "TELEGRAM_WEBHOOK_URL";
/// Secret Telegram sends with each webhook update (1-256 of `A-Za-z0-9_-`).
pub const TELEGRAM_WEBHOOK_SECRET: &str = "TELEGRAM_WEBHOOK_SECRET";
/// Discord bot token; Discord is on when set.
pub const DISCORD_BOT_TOKEN: &str = "DISCORD_BOT_TOKEN";
/// Discord API base URL (for tests and proxies). Default Discord's own.
pub const DISCORD_API_URL: &str = "DISCORD_API_URL";
/// Discord application public key (hex); enables the HTTP interactions endpoint.
pub const DISCORD_PUBLIC_KEY: &str = "DISCORD_PUBLIC_KEY";

/// HTTP flows: comma-separated `name=url` pairs.
pub const FLOWS: &str = "ASKBRIDGE_FLOWS";
/// Key signing requests to flow endpoints and callback URLs (HMAC-SHA256).
pub const FLOW_SECRET: &str = "ASKBRIDGE_FLOW_SECRET";
/// Seconds a process holds a run it executes (renewed while it runs). Default 30.
pub const RUN_LEASE: &str = "ASKBRIDGE_RUN_LEASE_S";
/// `true` to offer the example flows (`/release`) in `serve`, as the demo does.
pub const EXAMPLE_FLOWS: &str = "ASKBRIDGE_EXAMPLE_FLOWS";
/// Comma-separated identities who may approve approvals that name none, and manage rules.
pub const APPROVERS: &str = "ASKBRIDGE_APPROVERS";
/// Comma-separated identities who may start flows from a chat; anyone when unset.
pub const FLOW_STARTERS: &str = "ASKBRIDGE_FLOW_STARTERS";
/// How long audit records are kept, in seconds. Default 7776000 (90 days).
pub const AUDIT_RETENTION: &str = "ASKBRIDGE_AUDIT_RETENTION_S";
/// Comma-separated host names the HTTP server answers to besides its addresses and `localhost`
/// (the name behind a proxy or load balancer); `*` turns the check off.
pub const ALLOWED_HOSTS: &str = "ASKBRIDGE_ALLOWED_HOSTS";
/// `true` to serve `/metrics` without the API token. Default false.
pub const METRICS_PUBLIC: &str = "ASKBRIDGE_METRICS_PUBLIC";
/// Comma-separated hosts, addresses or networks callback URLs may reach although internal.
pub const CALLBACK_ALLOW: &str = "ASKBRIDGE_CALLBACK_ALLOW";
/// Most HTTP connections served at once. Default 4096.
pub const MAX_CONNECTIONS: &str = "ASKBRIDGE_MAX_CONNECTIONS";
/// Seconds between progress notifications while an MCP tool call waits. Default 15.
pub const MCP_PROGRESS: &str = "ASKBRIDGE_MCP_PROGRESS_S";
/// Threads executing askbridge's work. Default: one per core.
pub const WORKER_THREADS: &str = "ASKBRIDGE_WORKER_THREADS";
/// Least seconds between two reminders in one chat (whichever questions they are about), and so
/// the shortest `remind_after_s`. Default 60, as Telegram limits messages to groups.
pub const REMINDER_GAP: &str = "ASKBRIDGE_REMINDER_GAP_S";

/// Every variable, for `--help`.
pub const ALL: [(&str, &str); 32] = [
    (HTTP_ADDR, "HTTP API address (default 127.0.0.1:8080)"),
    (
        API_TOKEN,
        "bearer token required by /api routes (default: none)",
    ),
    (REDIS_URL, "Redis URL; when set, Redis is the store"),
    (
        REDIS_CLUSTER,
        "true when REDIS_URL is one seed of a Redis Cluster",
    ),
    (
        REDIS_REPLICA_WAIT,
        "cluster: ms a claim waits for a replica (default 500, 0 off)",
    ),
    (REDIS_PREFIX, "prefix of Redis keys (default askbridge)"),
    (
        DATA_DIR,
        "embedded store directory (default ~/.local/share/askbridge)",
    ),
    (
        DEFAULT_TIMEOUT,
        "question timeout in seconds (default 1800)",
    ),
    (
        RETENTION,
        "seconds resolved questions are kept (default 604800)",
    ),
    (
        DEFAULT_TARGETS,
        "comma-separated targets for Rust API questions",
    ),
    (LOG, "log filter (default info)"),
    (TELEGRAM_BOT_TOKEN, "Telegram bot token; enables Telegram"),
    (
        TELEGRAM_API_URL,
        "Telegram Bot API base (default https://api.telegram.org)",
    ),
    (TELEGRAM_WEBHOOK_URL, "public URL for Telegram webhook mode"),
    (TELEGRAM_WEBHOOK_SECRET, "Telegram webhook secret token"),
    (DISCORD_BOT_TOKEN, "Discord bot token; enables Discord"),
    (
        DISCORD_API_URL,
        "Discord API base (default https://discord.com)",
    ),
    (
        DISCORD_PUBLIC_KEY,
        "Discord public key; enables the interactions endpoint",
    ),
    (FLOWS, "HTTP flows as name=url pairs, comma-separated"),
    (FLOW_SECRET, "key signing flow requests and callbacks"),
    (
        RUN_LEASE,
        "seconds a process holds a run it executes (default 30)",
    ),
    (EXAMPLE_FLOWS, "true to offer the example flows in serve"),
    (APPROVERS, "identities who may approve (default: none)"),
    (
        AUDIT_RETENTION,
        "seconds audit records are kept (default 7776000)",
    ),
    (
        FLOW_STARTERS,
        "identities who may start flows from a chat (default: anyone)",
    ),
    (
        ALLOWED_HOSTS,
        "public host names the HTTP server answers to (default: its addresses, localhost)",
    ),
    (METRICS_PUBLIC, "true to serve /metrics without the token"),
    (
        CALLBACK_ALLOW,
        "internal hosts or networks callback URLs may reach (default: none)",
    ),
    (
        MAX_CONNECTIONS,
        "HTTP connections served at once (default 4096)",
    ),
    (
        MCP_PROGRESS,
        "seconds between MCP progress notifications (default 15)",
    ),
    (
        WORKER_THREADS,
        "threads executing askbridge's work (default: one per core)",
    ),
    (
        REMINDER_GAP,
        "least seconds between reminders in one chat (default 60)",
    ),
];
