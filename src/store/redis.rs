//! The Redis store: production, shared by any number of askbridge processes.
//!
//! # Keys
//!
//! Everything about one question lives under its id as a hash tag, so a Lua script touching it
//! touches one Cluster slot:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `askbridge:{<id>}:q` | hash | `q` (the question as asked, JSON), `status`, `res` (resolution JSON), `exp` (deadline, ms) |
//! | `askbridge:{<id>}:shown` | hash | target → the channel's message reference |
//! | `askbridge:{<id>}:fx` | set | effects done after resolution |
//!
//! Indexes span questions, so they are keys of their own, updated beside the per-question scripts
//! rather than inside them (a script touching two slots fails on Cluster):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `askbridge:open` | sorted set | open questions, scored by when they are next due (the outbox; see [`super`]) |
//! | `askbridge:all` | sorted set | every question by creation time (listing by status) |
//! | `askbridge:session:<session>` | set | a session's question ids |
//! | `askbridge:target:<target>` | set | pending question ids shown in a target |
//! | `askbridge:seen:<key>` | string | delivery ids already handled (with a TTL) |
//! | `askbridge:events` | stream | events, read by every process |
//!
//! Indexes are written *before* the question on insert, and removed only after its effects are
//! done, so a crash leaves at worst an index entry pointing at nothing, which readers skip and
//! the sweeper removes; never a question no index knows. Readers check every question they load
//! against their filter, so a stale index entry never shows up in a result.
//!
//! # Failures
//!
//! After a Redis restart, the connection manager's next command fails once and then reconnects;
//! every operation here retries connection errors a few times with backoff. Scripts are sent by
//! SHA and re-loaded on NOSCRIPT (Redis forgets them on restart). A retried claim or insert may
//! find its own earlier attempt already applied; that is recognised and reported as success.

use super::{EVENT_BUFFER, Event, ListFilter, Shown, Store, StoreOptions};
use crate::Error;
use askbridge_core::Rule;
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::run::{Acquire, Run, RunState};
use askbridge_core::{
    Claim, ClaimOutcome, Millis, Question, QuestionId, Resolution, Status, Transition,
};
use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::streams::{StreamReadOptions, StreamReadReply};
use redis::{AsyncCommands, Script};
use std::future::Future;
use std::sync::{Arc, LazyLock, Weak};
use std::time::Duration;
use tokio::sync::broadcast;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "askbridge";
/// The event stream keeps about this many entries.
const EVENTS_MAXLEN: usize = 10_000;
/// How long one XREAD waits for new events.
const EVENTS_BLOCK: Duration = Duration::from_secs(2);
/// Attempts for an operation hitting connection errors.
const ATTEMPTS: u32 = 6;

/// Creates a question unless its id exists. KEYS: q. ARGV: question JSON, deadline ms.
static INSERT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
        redis.call('HSET', KEYS[1], 'q', ARGV[1], 'status', 'pending', 'exp', ARGV[2])
        return 1
        ",
    )
});

/// The claim-once state machine of `Question::apply`, on the server.
/// KEYS: q, shown, fx. ARGV: now ms, status if won, resolution JSON if won, expiry resolution JSON,
/// '1' if the claim is itself an expiry, retention ms.
/// Returns {outcome, status, resolution JSON}, or {'missing'}.
static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        local fields = redis.call('HMGET', KEYS[1], 'status', 'exp', 'res')
        local status, exp = fields[1], fields[2]
        if not status then return {'missing'} end
        if status ~= 'pending' then return {'already_resolved', status, fields[3]} end
        local outcome, new_status, res = 'won', ARGV[2], ARGV[3]
        if ARGV[5] ~= '1' and tonumber(ARGV[1]) >= tonumber(exp) then
            outcome, new_status, res = 'expired', 'expired', ARGV[4]
        end
        redis.call('HSET', KEYS[1], 'status', new_status, 'res', res)
        for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[6]) end
        return {outcome, new_status, res}
        ",
    )
});

/// Leases due entries of the open index. KEYS: open. ARGV: now ms, lease-until ms, limit.
static LEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
        for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id) end
        return ids
        ",
    )
});

/// Records where a question was shown, keeping the hash's TTL once it has one.
/// KEYS: shown, q. ARGV: target, reference.
static RECORD_SHOWN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
        local ttl = redis.call('PTTL', KEYS[2])
        if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
        return 1
        ",
    )
});

/// Marks an effect done, giving the effects set the question's TTL (the set is created after
/// the claim set that TTL, so it must copy it). KEYS: fx, q. ARGV: effect. Returns 1 if new.
static MARK_EFFECT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        local added = redis.call('SADD', KEYS[1], ARGV[1])
        local ttl = redis.call('PTTL', KEYS[2])
        if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
        return added
        ",
    )
});

/// Creates a run unless its id exists. KEYS: run. ARGV: data, state, waiting_on, owner,
/// lease_until, reported, updated_at.
static INSERT_RUN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
        redis.call('HSET', KEYS[1], 'data', ARGV[1], 'state', ARGV[2], 'waiting_on', ARGV[3],
            'owner', ARGV[4], 'lease_until', ARGV[5], 'reported', ARGV[6], 'updated_at', ARGV[7])
        return 1
        ",
    )
});

/// `Run::acquire` on the server. KEYS: run. ARGV: 'answer' or 'recovery', question id, owner, now,
/// lease_until. Returns the run's data when taken, nil otherwise.
static ACQUIRE_RUN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        local f = redis.call('HMGET', KEYS[1], 'state', 'waiting_on', 'lease_until', 'reported')
        local state, waiting_on, lease, reported = f[1], f[2], tonumber(f[3]) or 0, f[4]
        if not state then return false end
        local allowed
        if ARGV[1] == 'answer' then
            allowed = state == 'waiting' and waiting_on == ARGV[2]
        else
            local unfinished = state == 'running' or ((state == 'done' or state == 'failed') and reported ~= '1')
            allowed = unfinished and lease <= tonumber(ARGV[4])
        end
        if not allowed then return false end
        if state == 'waiting' then state = 'running' end
        redis.call('HSET', KEYS[1], 'state', state, 'owner', ARGV[3], 'lease_until', ARGV[5], 'updated_at', ARGV[4])
        return redis.call('HGET', KEYS[1], 'data')
        ",
    )
});

/// Writes a run if `owner` holds it. KEYS: run. ARGV: owner, then the fields as for INSERT_RUN,
/// then a TTL in ms (0 for none).
static SAVE_RUN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
        redis.call('HSET', KEYS[1], 'data', ARGV[2], 'state', ARGV[3], 'waiting_on', ARGV[4],
            'owner', ARGV[5], 'lease_until', ARGV[6], 'reported', ARGV[7], 'updated_at', ARGV[8])
        if ARGV[9] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[9]) end
        return 1
        ",
    )
});

/// A run's mutable fields, as the run hash holds them beside its JSON.
struct RunFields {
    data: String,
    state: &'static str,
    waiting_on: String,
    owner: String,
    lease_until: String,
    reported: &'static str,
    updated_at: String,
}

impl RunFields {
    fn of(run: &Run) -> Self {
        RunFields {
            data: serde_json::to_string(run).expect("a run always serialises"),
            state: run.state.as_str(),
            waiting_on: run
                .waiting_on
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            owner: run.owner.clone().unwrap_or_default(),
            lease_until: run.lease_until.map(|m| m.0.to_string()).unwrap_or_default(),
            reported: if run.reported { "1" } else { "0" },
            updated_at: run.updated_at.0.to_string(),
        }
    }

    fn push(&self, invocation: &mut redis::ScriptInvocation<'_>) {
        invocation
            .arg(&self.data)
            .arg(self.state)
            .arg(&self.waiting_on)
            .arg(&self.owner)
            .arg(&self.lease_until)
            .arg(self.reported)
            .arg(&self.updated_at);
    }
}

/// Rebuilds a run from its hash: the JSON, overridden by the fields scripts change.
fn assemble_run(fields: &std::collections::HashMap<String, String>) -> Result<Option<Run>, Error> {
    let Some(data) = fields.get("data") else {
        return Ok(None);
    };
    let mut run: Run = serde_json::from_str(data).map_err(corrupt)?;
    let field = |name: &str| fields.get(name).map(String::as_str).unwrap_or_default();
    run.state = match field("state") {
        "running" => RunState::Running,
        "waiting" => RunState::Waiting,
        "done" => RunState::Done,
        "failed" => RunState::Failed,
        other => return Err(corrupt(format!("run state {other}"))),
    };
    run.waiting_on = QuestionId::parse(field("waiting_on")).ok();
    run.owner = Some(field("owner").to_owned()).filter(|o| !o.is_empty());
    run.lease_until = field("lease_until").parse().ok().map(Millis);
    run.reported = field("reported") == "1";
    if let Ok(updated) = field("updated_at").parse() {
        run.updated_at = Millis(updated);
    }
    Ok(Some(run))
}

/// Connection settings.
#[derive(Clone, Debug)]
pub struct RedisOptions {
    /// `redis://[user:password@]host:port/db`.
    pub url: String,
    /// Prefix of every key; lets several deployments (or tests) share one Redis.
    pub prefix: String,
    /// Shared store settings.
    pub store: StoreOptions,
}

/// See the module documentation.
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    keys: Keys,
    described: String,
    events: broadcast::Sender<Event>,
    options: StoreOptions,
    /// The event reader stops when the last clone of the store is dropped.
    _alive: Arc<()>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("at", &self.described)
            .finish()
    }
}

#[derive(Clone, Debug)]
struct Keys {
    prefix: String,
}

impl Keys {
    fn question(&self, id: &str) -> String {
        format!("{}:{{{id}}}:q", self.prefix)
    }
    fn shown(&self, id: &str) -> String {
        format!("{}:{{{id}}}:shown", self.prefix)
    }
    fn effects(&self, id: &str) -> String {
        format!("{}:{{{id}}}:fx", self.prefix)
    }
    fn open(&self) -> String {
        format!("{}:open", self.prefix)
    }
    fn all(&self) -> String {
        format!("{}:all", self.prefix)
    }
    fn session(&self, session: &str) -> String {
        format!("{}:session:{session}", self.prefix)
    }
    fn target(&self, target: &str) -> String {
        format!("{}:target:{target}", self.prefix)
    }
    fn run(&self, id: &str) -> String {
        format!("{}:{{{id}}}:run", self.prefix)
    }
    fn run_leases(&self) -> String {
        format!("{}:runs:leases", self.prefix)
    }
    fn rules(&self) -> String {
        format!("{}:rules", self.prefix)
    }
    fn audit(&self) -> String {
        format!("{}:audit", self.prefix)
    }
    fn seen(&self, key: &str) -> String {
        format!("{}:seen:{key}", self.prefix)
    }
    fn events(&self) -> String {
        format!("{}:events", self.prefix)
    }
}

/// `redis://user:secret@host` without the secret, for logs.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://***@{}", &url[..scheme_end], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

fn is_transient(error: &redis::RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_timeout()
}

/// Runs `operation` again on connection errors, backing off from 50 ms to 1 s.
async fn retrying<T, F, Fut>(what: &str, mut operation: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = redis::RedisResult<T>>,
{
    let mut delay = Duration::from_millis(50);
    for attempt in 1..=ATTEMPTS {
        match operation().await {
            Ok(value) => return Ok(value),
            Err(error) if is_transient(&error) && attempt < ATTEMPTS => {
                tracing::debug!(%error, attempt, "redis {what} failed; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(1));
            }
            Err(error) => return Err(Error::Redis(error)),
        }
    }
    unreachable!("the last attempt returns")
}

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::Embedded(format!("corrupt record in Redis: {what}"))
}

/// Rebuilds a question from its hash fields.
fn assemble(json: &str, status: &str, resolution: Option<&str>) -> Result<Question, Error> {
    let mut question: Question = serde_json::from_str(json).map_err(corrupt)?;
    question.status = Status::parse(status).ok_or_else(|| corrupt(format!("status {status}")))?;
    question.resolution = match resolution.filter(|r| !r.is_empty()) {
        Some(json) => Some(serde_json::from_str::<Resolution>(json).map_err(corrupt)?),
        None => None,
    };
    Ok(question)
}

impl RedisStore {
    /// Connects, checks the server answers, and starts the event reader.
    pub async fn connect(options: RedisOptions) -> Result<Self, Error> {
        let client = redis::Client::open(options.url.as_str())?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(5)))
            .set_number_of_retries(3)
            .set_max_delay(Duration::from_millis(500));
        let connection = client.get_connection_manager_with_config(config).await?;
        let keys = Keys {
            prefix: options.prefix.clone(),
        };
        let events = broadcast::channel(EVENT_BUFFER).0;
        let alive = Arc::new(());
        let store = RedisStore {
            connection,
            keys,
            described: format!("redis ({})", redact_url(&options.url)),
            events,
            options: options.store,
            _alive: Arc::clone(&alive),
        };
        store.ping().await?;
        let reader_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(EVENTS_BLOCK + Duration::from_secs(5)))
            .set_max_delay(Duration::from_millis(500));
        let reader = client
            .get_connection_manager_with_config(reader_config)
            .await?;
        let start = store.last_event_id().await?;
        tokio::spawn(read_events(
            reader,
            store.keys.events(),
            start,
            store.events.clone(),
            Arc::downgrade(&alive),
        ));
        Ok(store)
    }

    fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    async fn last_event_id(&self) -> Result<String, Error> {
        let key = self.keys.events();
        let reply: redis::streams::StreamRangeReply = retrying("xrevrange", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.xrevrange_count(key, "+", "-", 1).await }
        })
        .await?;
        Ok(reply
            .ids
            .first()
            .map_or_else(|| "0-0".to_owned(), |entry| entry.id.clone()))
    }

    /// Loads several questions by id, skipping ids whose question is gone.
    async fn load_many(&self, ids: &[String]) -> Result<Vec<Question>, Error> {
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HMGET")
                .arg(self.keys.question(id))
                .arg("q")
                .arg("status")
                .arg("res");
        }
        let rows: Vec<(Option<String>, Option<String>, Option<String>)> = retrying("load", || {
            let mut connection = self.connection();
            let pipe = pipe.clone();
            async move { pipe.query_async(&mut connection).await }
        })
        .await?;
        rows.into_iter()
            .filter_map(|row| match row {
                (Some(json), Some(status), res) => Some(assemble(&json, &status, res.as_deref())),
                _ => None,
            })
            .collect()
    }

    async fn run_fields(
        &self,
        id: &str,
    ) -> Result<std::collections::HashMap<String, String>, Error> {
        let key = self.keys.run(id);
        retrying("hgetall", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.hgetall(key).await }
        })
        .await
    }

    /// Puts a run in the lease index (when it needs an executor) or takes it out. The index is
    /// a hint for recovery: entries are added before the run changes and checked when read.
    async fn index_run(&self, id: &str, lease_until: Option<Millis>) -> Result<(), Error> {
        let key = self.keys.run_leases();
        retrying("index run", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move {
                match lease_until {
                    Some(until) => connection.zadd::<_, _, _, ()>(key, id, until.0).await,
                    None => connection.zrem::<_, _, ()>(key, id).await,
                }
            }
        })
        .await
    }

    async fn members(&self, key: String) -> Result<Vec<String>, Error> {
        retrying("smembers", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.smembers(key).await }
        })
        .await
    }
}

/// Copies the shared event stream into this process's broadcast channel until the store is gone.
async fn read_events(
    mut connection: ConnectionManager,
    key: String,
    mut last_id: String,
    events: broadcast::Sender<Event>,
    alive: Weak<()>,
) {
    let options = StreamReadOptions::default()
        .block(EVENTS_BLOCK.as_millis() as usize)
        .count(256);
    let mut failures = 0u32;
    while alive.strong_count() > 0 {
        let reply: redis::RedisResult<Option<StreamReadReply>> = connection
            .xread_options(&[key.as_str()], &[last_id.as_str()], &options)
            .await;
        match reply {
            Ok(reply) => {
                failures = 0;
                for entry in reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids) {
                    last_id = entry.id.clone();
                    let Some(data) = entry.get::<String>("data") else {
                        continue;
                    };
                    match serde_json::from_str::<Event>(&data) {
                        Ok(event) => {
                            let _ = events.send(event);
                        }
                        Err(error) => {
                            tracing::warn!(%error, id = %entry.id, "skipping an unreadable event")
                        }
                    }
                }
            }
            Err(error) => {
                failures += 1;
                if failures == 1 || failures % 30 == 0 {
                    tracing::warn!(%error, "cannot read events from Redis; retrying");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

#[async_trait]
impl Store for RedisStore {
    fn describe(&self) -> String {
        self.described.clone()
    }

    fn is_durable(&self) -> bool {
        true
    }

    async fn ping(&self) -> Result<(), Error> {
        retrying("ping", || {
            let mut connection = self.connection();
            async move {
                redis::cmd("PING")
                    .query_async::<String>(&mut connection)
                    .await
            }
        })
        .await
        .map(drop)
    }

    async fn insert(&self, question: &Question) -> Result<(), Error> {
        let id = question.id.as_str();
        let json = serde_json::to_string(question).expect("a question always serialises");
        let mut indexes = redis::pipe();
        // NX: an existing question's entries must not be replaced by a colliding newcomer's.
        for (key, score) in [
            (self.keys.open(), question.expires_at),
            (self.keys.all(), question.created_at),
        ] {
            indexes
                .cmd("ZADD")
                .arg(key)
                .arg("NX")
                .arg(score.0)
                .arg(id)
                .ignore();
        }
        // A session's set lives as long as its newest question can, and then some.
        let session_ttl = self.options.retention + askbridge_core::question::MAX_TIMEOUT;
        indexes
            .sadd(self.keys.session(&question.session_id), id)
            .ignore()
            .pexpire(
                self.keys.session(&question.session_id),
                session_ttl.as_millis() as i64,
            )
            .ignore();
        for target in &question.targets {
            indexes.sadd(self.keys.target(target), id).ignore();
        }
        retrying("index", || {
            let mut connection = self.connection();
            let indexes = indexes.clone();
            async move { indexes.query_async::<()>(&mut connection).await }
        })
        .await?;
        let key = self.keys.question(id);
        let created: i64 = retrying("insert", || {
            let mut connection = self.connection();
            let mut invocation = INSERT.key(&key);
            invocation.arg(&json).arg(question.expires_at.0);
            async move { invocation.invoke_async(&mut connection).await }
        })
        .await?;
        if created == 1 {
            return Ok(());
        }
        // Our own earlier attempt may have landed before a connection error hid its reply.
        let stored: Option<String> = retrying("hget", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.hget(key, "q").await }
        })
        .await?;
        if stored.as_deref() == Some(json.as_str()) {
            Ok(())
        } else {
            Err(Error::IdTaken)
        }
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<Question>, Error> {
        Ok(self.load_many(&[id.to_string()]).await?.pop())
    }

    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
    ) -> Result<Option<(ClaimOutcome, Question)>, Error> {
        let id = snapshot.id.as_str();
        let (status, resolution) = snapshot.resolution_for(claim);
        let resolution_json = serde_json::to_string(&resolution).expect("resolutions serialise");
        let (_, expiry) = snapshot.expiry_resolution(claim.at);
        let expiry_json = serde_json::to_string(&expiry).expect("resolutions serialise");
        let is_expiry = if claim.transition == Transition::Expire {
            "1"
        } else {
            "0"
        };
        let keys = [
            self.keys.question(id),
            self.keys.shown(id),
            self.keys.effects(id),
        ];
        let retention = self.options.retention.as_millis() as u64;
        let reply: Vec<String> = retrying("claim", || {
            let mut connection = self.connection();
            let mut invocation = CLAIM.key(&keys[0]);
            invocation
                .key(&keys[1])
                .key(&keys[2])
                .arg(claim.at.0)
                .arg(status.as_str())
                .arg(&resolution_json)
                .arg(&expiry_json)
                .arg(is_expiry)
                .arg(retention);
            async move { invocation.invoke_async(&mut connection).await }
        })
        .await?;
        let (outcome, status, stored) = match reply.as_slice() {
            [missing] if missing == "missing" => return Ok(None),
            [outcome, status, stored] => (outcome.as_str(), status.as_str(), stored.as_str()),
            other => return Err(corrupt(format!("claim reply {other:?}"))),
        };
        let outcome = match outcome {
            "won" => ClaimOutcome::Won,
            "expired" => ClaimOutcome::Expired,
            // A retry that finds its own earlier attempt's resolution won all along.
            _ if stored == resolution_json => ClaimOutcome::Won,
            _ if stored == expiry_json => ClaimOutcome::Expired,
            _ => ClaimOutcome::AlreadyResolved,
        };
        let json = serde_json::to_string(&Question {
            status: Status::Pending,
            resolution: None,
            ..snapshot.clone()
        })
        .expect("a question always serialises");
        Ok(Some((outcome, assemble(&json, status, Some(stored))?)))
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>, Error> {
        let pending = filter.status.unwrap_or(Status::Pending) == Status::Pending;
        let limit = filter.effective_limit();
        let ids: Vec<String> = match (&filter.target, &filter.session_id) {
            (Some(target), _) if pending => self.members(self.keys.target(target)).await?,
            (_, Some(session)) => self.members(self.keys.session(session)).await?,
            (None, None) if pending => {
                let key = self.keys.open();
                retrying("zrange", || {
                    let mut connection = self.connection();
                    let key = key.clone();
                    async move { connection.zrange(key, 0, -1).await }
                })
                .await?
            }
            _ => {
                // Newest first, looking at a bounded window of recent questions.
                let key = self.keys.all();
                let window = (limit.saturating_mul(20)).min(100_000) as isize;
                retrying("zrevrange", || {
                    let mut connection = self.connection();
                    let key = key.clone();
                    async move { connection.zrevrange(key, 0, window - 1).await }
                })
                .await?
            }
        };
        let mut found = Vec::new();
        for chunk in ids.chunks(500) {
            found.extend(
                self.load_many(chunk)
                    .await?
                    .into_iter()
                    .filter(|q| filter.accepts(q)),
            );
        }
        found.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        found.truncate(limit);
        Ok(found)
    }

    async fn count_pending(&self) -> Result<usize, Error> {
        // The open index's size: O(1) however many questions wait. It also counts questions
        // resolved in the last moments whose effects are still running, a handful at most.
        let key = self.keys.open();
        retrying("zcard", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.zcard(key).await }
        })
        .await
    }

    async fn record_shown(&self, id: &QuestionId, shown: &Shown) -> Result<(), Error> {
        let keys = [
            self.keys.shown(id.as_str()),
            self.keys.question(id.as_str()),
        ];
        retrying("record_shown", || {
            let mut connection = self.connection();
            let mut invocation = RECORD_SHOWN.key(&keys[0]);
            invocation
                .key(&keys[1])
                .arg(&shown.target)
                .arg(&shown.reference);
            async move { invocation.invoke_async::<i64>(&mut connection).await }
        })
        .await
        .map(drop)
    }

    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>, Error> {
        let key = self.keys.shown(id.as_str());
        let map: Vec<(String, String)> = retrying("hgetall", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.hgetall(key).await }
        })
        .await?;
        Ok(map
            .into_iter()
            .map(|(target, reference)| Shown { target, reference })
            .collect())
    }

    async fn mark_effect(&self, id: &QuestionId, effect: &str) -> Result<bool, Error> {
        let keys = [
            self.keys.effects(id.as_str()),
            self.keys.question(id.as_str()),
        ];
        let added: i64 = retrying("mark effect", || {
            let mut connection = self.connection();
            let mut invocation = MARK_EFFECT.key(&keys[0]);
            invocation.key(&keys[1]).arg(effect);
            async move { invocation.invoke_async(&mut connection).await }
        })
        .await?;
        Ok(added == 1)
    }

    async fn effects_done(&self, id: &QuestionId) -> Result<Vec<String>, Error> {
        self.members(self.keys.effects(id.as_str())).await
    }

    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>, Error> {
        let key = self.keys.open();
        let ids: Vec<String> = retrying("lease", || {
            let mut connection = self.connection();
            let mut invocation = LEASE.key(&key);
            invocation.arg(now.0).arg(now.after(lease).0).arg(limit);
            async move { invocation.invoke_async(&mut connection).await }
        })
        .await?;
        Ok(ids
            .iter()
            .filter_map(|id| QuestionId::parse(id).ok())
            .collect())
    }

    async fn open_ids(&self) -> Result<Vec<QuestionId>, Error> {
        let key = self.keys.open();
        let ids: Vec<String> = retrying("zrange", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.zrange(key, 0, -1).await }
        })
        .await?;
        Ok(ids
            .iter()
            .filter_map(|id| QuestionId::parse(id).ok())
            .collect())
    }

    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<(), Error> {
        let key = self.keys.open();
        retrying("reschedule", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move {
                redis::cmd("ZADD")
                    .arg(key)
                    .arg(at.0)
                    .arg(id.as_str())
                    .query_async::<i64>(&mut connection)
                    .await
            }
        })
        .await
        .map(drop)
    }

    async fn settle(&self, id: &QuestionId, question: Option<&Question>) -> Result<(), Error> {
        let mut pipe = redis::pipe();
        pipe.zrem(self.keys.open(), id.as_str()).ignore();
        for target in question.map(|q| q.targets.as_slice()).unwrap_or_default() {
            pipe.srem(self.keys.target(target), id.as_str()).ignore();
        }
        if question.is_none() {
            pipe.zrem(self.keys.all(), id.as_str()).ignore();
        }
        retrying("settle", || {
            let mut connection = self.connection();
            let pipe = pipe.clone();
            async move { pipe.query_async::<()>(&mut connection).await }
        })
        .await
    }

    async fn first_sighting(&self, key: &str, ttl: Duration) -> Result<bool, Error> {
        let key = self.keys.seen(key);
        let set: Option<String> = retrying("set nx", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move {
                redis::cmd("SET")
                    .arg(key)
                    .arg(1)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl.as_millis() as u64)
                    .query_async(&mut connection)
                    .await
            }
        })
        .await?;
        Ok(set.is_some())
    }

    async fn purge(&self, now: Millis) -> Result<usize, Error> {
        // Question keys expire by themselves (PEXPIRE at resolution); trim the indexes that
        // point at them. Session sets expire after their newest question could have; readers
        // skip ids whose question is gone meanwhile.
        let cutoff = now
            .0
            .saturating_sub(self.options.retention.as_millis() as u64);
        let key = self.keys.all();
        let removed: usize = retrying("purge", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.zrembyscore(key, 0, cutoff).await }
        })
        .await?;
        Ok(removed)
    }

    async fn insert_run(&self, run: &Run) -> Result<(), Error> {
        if run.needs_executor() {
            self.index_run(&run.id, Some(run.lease_until.unwrap_or_default()))
                .await?;
        }
        let key = self.keys.run(&run.id);
        let fields = RunFields::of(run);
        let created: i64 = retrying("insert run", || {
            let mut connection = self.connection();
            let mut invocation = INSERT_RUN.key(&key);
            fields.push(&mut invocation);
            async move { invocation.invoke_async(&mut connection).await }
        })
        .await?;
        if created == 1 {
            return Ok(());
        }
        // As for questions: our own earlier attempt may have landed.
        match self.get_run(&run.id).await? {
            Some(stored) if stored.created_at == run.created_at && stored.flow == run.flow => {
                Ok(())
            }
            _ => Err(Error::IdTaken),
        }
    }

    async fn get_run(&self, id: &str) -> Result<Option<Run>, Error> {
        assemble_run(&self.run_fields(id).await?)
    }

    async fn acquire_run(
        &self,
        id: &str,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>, Error> {
        // Index first: a crash right after taking the run must leave it where recovery looks.
        self.index_run(id, Some(lease_until)).await?;
        let key = self.keys.run(id);
        let (kind, question) = match why {
            Acquire::Answer(question) => ("answer", question.to_string()),
            Acquire::Recovery => ("recovery", String::new()),
        };
        let taken: Option<String> = retrying("acquire run", || {
            let mut connection = self.connection();
            let mut invocation = ACQUIRE_RUN.key(&key);
            invocation
                .arg(kind)
                .arg(&question)
                .arg(owner)
                .arg(now.0)
                .arg(lease_until.0);
            async move { invocation.invoke_async(&mut connection).await }
        })
        .await?;
        if taken.is_some() {
            return self.get_run(id).await;
        }
        // Not ours: make the index tell the truth about this run again.
        match self.get_run(id).await? {
            Some(run) if run.needs_executor() => self.index_run(id, run.lease_until).await?,
            _ => self.index_run(id, None).await?,
        }
        Ok(None)
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<bool, Error> {
        if run.needs_executor() {
            self.index_run(&run.id, run.lease_until).await?;
        }
        let key = self.keys.run(&run.id);
        let fields = RunFields::of(run);
        let ttl = if run.state.is_final() && run.reported {
            self.options.retention.as_millis() as u64
        } else {
            0
        };
        let saved: i64 = retrying("save run", || {
            let mut connection = self.connection();
            let mut invocation = SAVE_RUN.key(&key);
            invocation.arg(owner);
            fields.push(&mut invocation);
            invocation.arg(ttl);
            async move { invocation.invoke_async(&mut connection).await }
        })
        .await?;
        if saved == 1 && !run.needs_executor() {
            self.index_run(&run.id, None).await?;
        }
        Ok(saved == 1)
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<String>, Error> {
        let key = self.keys.run_leases();
        retrying("expired runs", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move {
                connection
                    .zrangebyscore_limit(key, 0, now.0, 0, limit as isize)
                    .await
            }
        })
        .await
    }

    async fn put_rule(&self, rule: &Rule) -> Result<(), Error> {
        let (key, json) = (
            self.keys.rules(),
            serde_json::to_string(rule).expect("a rule serialises"),
        );
        retrying("put rule", || {
            let mut connection = self.connection();
            let (key, json) = (key.clone(), json.clone());
            async move { connection.hset::<_, _, _, ()>(key, &rule.id, json).await }
        })
        .await
    }

    async fn rules(&self) -> Result<Vec<Rule>, Error> {
        let key = self.keys.rules();
        let stored: Vec<String> = retrying("rules", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.hvals(key).await }
        })
        .await?;
        stored
            .iter()
            .map(|json| serde_json::from_str(json).map_err(corrupt))
            .collect()
    }

    async fn delete_rule(&self, id: &str) -> Result<bool, Error> {
        let key = self.keys.rules();
        let removed: i64 = retrying("delete rule", || {
            let mut connection = self.connection();
            let key = key.clone();
            async move { connection.hdel(key, id).await }
        })
        .await?;
        Ok(removed == 1)
    }

    async fn append_audit(&self, entry: &AuditEntry) -> Result<(), Error> {
        let key = self.keys.audit();
        let json = serde_json::to_string(entry).expect("an audit record serialises");
        // Stream ids are milliseconds: MINID trims what is older than the retention.
        let oldest = Millis::now()
            .0
            .saturating_sub(self.options.audit_retention.as_millis() as u64);
        retrying("audit", || {
            let mut connection = self.connection();
            let (key, json) = (key.clone(), json.clone());
            async move {
                redis::cmd("XADD")
                    .arg(key)
                    .arg("MINID")
                    .arg("~")
                    .arg(oldest)
                    .arg("*")
                    .arg("data")
                    .arg(json)
                    .query_async::<String>(&mut connection)
                    .await
            }
        })
        .await
        .map(drop)
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>, Error> {
        let key = self.keys.audit();
        let mut start = filter
            .since
            .map_or_else(|| "-".to_owned(), |m| m.0.to_string());
        let mut found = Vec::new();
        // Read in pages until the limit is met or the stream ends.
        loop {
            let page: redis::streams::StreamRangeReply = retrying("xrange", || {
                let mut connection = self.connection();
                let (key, start) = (key.clone(), start.clone());
                async move { connection.xrange_count(key, start, "+", 500).await }
            })
            .await?;
            let Some(last) = page.ids.last().map(|entry| entry.id.clone()) else {
                return Ok(found);
            };
            for entry in &page.ids {
                let Some(data) = entry.get::<String>("data") else {
                    continue;
                };
                let record: AuditEntry = serde_json::from_str(&data).map_err(corrupt)?;
                if filter.accepts(&record) {
                    found.push(record);
                    if found.len() == filter.effective_limit() {
                        return Ok(found);
                    }
                }
            }
            if page.ids.len() < 500 {
                return Ok(found);
            }
            start = format!("({last}");
        }
    }

    async fn publish(&self, event: &Event) -> Result<(), Error> {
        let data = serde_json::to_string(event).expect("events serialise");
        let key = self.keys.events();
        retrying("xadd", || {
            let mut connection = self.connection();
            let key = key.clone();
            let data = data.clone();
            async move {
                redis::cmd("XADD")
                    .arg(key)
                    .arg("MAXLEN")
                    .arg("~")
                    .arg(EVENTS_MAXLEN)
                    .arg("*")
                    .arg("data")
                    .arg(data)
                    .query_async::<String>(&mut connection)
                    .await
            }
        })
        .await
        .map(drop)
    }

    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_one_question_share_a_hash_tag() {
        let keys = Keys {
            prefix: DEFAULT_PREFIX.into(),
        };
        assert_eq!(keys.question("k3f9x2m8qa"), "askbridge:{k3f9x2m8qa}:q");
        assert_eq!(keys.shown("k3f9x2m8qa"), "askbridge:{k3f9x2m8qa}:shown");
        assert_eq!(keys.effects("k3f9x2m8qa"), "askbridge:{k3f9x2m8qa}:fx");
    }

    #[test]
    fn urls_lose_their_passwords_in_logs() {
        assert_eq!(
            redact_url("redis://:hunter2@db:6379/0"),
            "redis://***@db:6379/0"
        );
        assert_eq!(
            redact_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
    }
}
