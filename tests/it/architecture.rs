//! Properties of the code's shape that behaviour tests do not show: a tap reads its question
//! once, a corrupt record ends a run instead of being replayed for ever, and no module imports
//! form a cycle.

use crate::support::{RedisServer, eventually_some, http, redis_store_with};
use crate::telegram::{GROUP, alice, ask_body, setup_over};
use askbridge::BridgeOptions;
use askbridge::FlowsExt;
use askbridge::bridge::Bridge;
use askbridge::http::{AppState, app};
use askbridge::store::memory::MemoryStore;
use askbridge::store::{
    Admin, AuditLog, ClaimOptions, Claimed, Counts, Dedupe, Deliveries, Drafts, Event, Events,
    Inserted, Leases, ListFilter, Outbox, Page, Parked, Questions, Result, Rules, Runs, Saved,
    Shown, StoreOptions, Votes, Work,
};
use askbridge_core::Identity;
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::form::Draft;
use askbridge_core::quorum::Vote;
use askbridge_core::run::{Acquire, Run, RunState};
use askbridge_core::tally::VoteOutcome;
use askbridge_core::{Claim, Millis, NewQuestion, Question, QuestionId, Rule, RuleId, RunId};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

/// A memory store that logs the question reads and claims made through it.
#[derive(Default)]
struct CountingStore {
    inner: MemoryStore,
    log: Mutex<Vec<String>>,
}

impl CountingStore {
    fn note(&self, entry: String) {
        self.log.lock().unwrap().push(entry);
    }

    fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

#[async_trait]
impl Questions for CountingStore {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        self.inner.insert(question).await
    }
    async fn get(&self, id: &QuestionId) -> Result<Option<Question>> {
        self.note(format!("get {id}"));
        self.inner.get(id).await
    }
    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
        options: ClaimOptions<'_>,
    ) -> Result<Option<Claimed>> {
        self.note(format!("claim {}", snapshot.id));
        self.inner.claim(snapshot, claim, options).await
    }
    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        let found = self.inner.list(filter).await?;
        let ids: Vec<String> = found.iter().map(|q| q.id.to_string()).collect();
        self.note(format!("list {}", ids.join(" ")));
        Ok(found)
    }
    async fn counts(&self, since: Millis) -> Result<Counts> {
        self.inner.counts(since).await
    }
}

#[async_trait]
impl Votes for CountingStore {
    async fn vote(
        &self,
        snapshot: &Question,
        vote: &Vote,
        due_if_met: Millis,
    ) -> Result<Option<(VoteOutcome, Question)>> {
        self.note(format!("vote {}", snapshot.id));
        self.inner.vote(snapshot, vote, due_if_met).await
    }
}

#[async_trait]
impl Drafts for CountingStore {
    async fn draft(&self, id: &QuestionId, who: &Identity) -> Result<Option<Draft>> {
        self.inner.draft(id, who).await
    }
    async fn save_draft(
        &self,
        id: &QuestionId,
        who: &Identity,
        draft: &Draft,
        ttl: Duration,
    ) -> Result<()> {
        self.inner.save_draft(id, who, draft, ttl).await
    }
}

#[async_trait]
impl Deliveries for CountingStore {
    async fn record_shown(&self, id: &QuestionId, shown: &Shown) -> Result<()> {
        self.inner.record_shown(id, shown).await
    }
    async fn shown(&self, id: &QuestionId) -> Result<Vec<Shown>> {
        self.inner.shown(id).await
    }
}

#[async_trait]
impl Outbox for CountingStore {
    async fn mark_effect(&self, id: &QuestionId, effect: &str) -> Result<bool> {
        self.inner.mark_effect(id, effect).await
    }
    async fn work(&self, id: &QuestionId) -> Result<Work> {
        self.inner.work(id).await
    }
    async fn lease_due(
        &self,
        now: Millis,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QuestionId>> {
        self.inner.lease_due(now, lease, limit).await
    }
    async fn next_due(&self) -> Result<Option<Millis>> {
        self.inner.next_due().await
    }
    async fn open_ids(&self) -> Result<Vec<QuestionId>> {
        self.inner.open_ids().await
    }
    async fn reschedule(&self, id: &QuestionId, at: Millis) -> Result<()> {
        self.inner.reschedule(id, at).await
    }
    async fn finish(
        &self,
        id: &QuestionId,
        question: Option<&Question>,
        done: &[String],
        retry_at: Option<Millis>,
    ) -> Result<()> {
        self.inner.finish(id, question, done, retry_at).await
    }
}

#[async_trait]
impl Dedupe for CountingStore {
    async fn first_sighting(&self, key: &str, ttl: Duration) -> Result<bool> {
        self.inner.first_sighting(key, ttl).await
    }
}

#[async_trait]
impl Runs for CountingStore {
    async fn insert_run(&self, run: &Run) -> Result<Inserted> {
        self.inner.insert_run(run).await
    }
    async fn get_run(&self, id: &RunId) -> Result<Option<Run>> {
        self.inner.get_run(id).await
    }
    async fn acquire_run(
        &self,
        id: &RunId,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>> {
        self.inner
            .acquire_run(id, why, owner, now, lease_until)
            .await
    }
    async fn save_run(&self, run: &Run, owner: &str) -> Result<Saved> {
        self.inner.save_run(run, owner).await
    }
    async fn park_run(&self, run: &Run, owner: &str, question: &Question) -> Result<Parked> {
        self.inner.park_run(run, owner, question).await
    }
    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<RunId>> {
        self.inner.expired_runs(now, limit).await
    }
    async fn abandon_run(&self, id: &RunId, why: &str) -> Result<()> {
        self.inner.abandon_run(id, why).await
    }
}

#[async_trait]
impl Leases for CountingStore {
    async fn hold_lease(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool> {
        self.inner.hold_lease(name, owner, ttl).await
    }
    async fn release_lease(&self, name: &str, owner: &str) -> Result<()> {
        self.inner.release_lease(name, owner).await
    }
}

#[async_trait]
impl Rules for CountingStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        self.inner.put_rule(rule).await
    }
    async fn rules(&self) -> Result<Vec<Rule>> {
        self.inner.rules().await
    }
    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        self.inner.delete_rule(id).await
    }
}

#[async_trait]
impl AuditLog for CountingStore {
    async fn append_audit(&self, entry: &AuditEntry) -> Result<()> {
        self.inner.append_audit(entry).await
    }
    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
        self.inner.audit(filter).await
    }
}

impl Events for CountingStore {
    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.subscribe()
    }
}

#[async_trait]
impl askbridge::store::Listings for CountingStore {
    async fn list_runs(&self, filter: &askbridge::store::RunFilter) -> Result<Page<Run>> {
        self.inner.list_runs(filter).await
    }
    async fn history(&self, filter: &askbridge::store::HistoryFilter) -> Result<Page<Question>> {
        self.inner.history(filter).await
    }
    async fn rules_page(
        &self,
        after: Option<&askbridge::store::Cursor>,
        limit: usize,
    ) -> Result<Page<askbridge_core::Rule>> {
        self.inner.rules_page(after, limit).await
    }
}

#[async_trait]
impl Admin for CountingStore {
    fn describe(&self) -> String {
        "counting memory store".into()
    }
    fn is_durable(&self) -> bool {
        false
    }
    async fn ping(&self) -> Result<()> {
        Ok(())
    }
    async fn purge(&self, now: Millis) -> Result<usize> {
        self.inner.purge(now).await
    }
    async fn topology(&self) -> Result<askbridge::store::Topology> {
        self.inner.topology().await
    }
}

/// A Telegram tap reads its question once (for the toast and the claim alike), then claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telegram_tap_reads_its_question_once_before_claiming() {
    let store = Arc::new(CountingStore::default());
    let s = setup_over(store.clone()).await;
    let q = s
        .ask(ask_body(&[&format!("telegram:{GROUP}")], &["telegram:7"]))
        .await;
    let id = q["id"].as_str().unwrap().to_owned();
    let message = s.shown(GROUP, &id).await;
    // Let the delivery's own bookkeeping finish before counting.
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.take_log();
    s.fake
        .tap(GROUP, message.id, &alice(), &message.payload("3. luxon"));
    s.wait_for_text(
        GROUP,
        message.id,
        "✅ Answered: luxon, by @alice via telegram",
    )
    .await;
    let log = store.take_log();
    let claim = log
        .iter()
        .position(|entry| *entry == format!("claim {id}"))
        .unwrap_or_else(|| panic!("no claim in {log:?}"));
    let reads: Vec<&String> = log[..claim]
        .iter()
        .filter(|entry| entry.contains(&id))
        .collect();
    assert_eq!(
        reads.len(),
        1,
        "reads of the question before its claim: {log:?}"
    );
    assert_eq!(
        log.iter().filter(|e| e.starts_with("claim")).count(),
        1,
        "{log:?}"
    );
}

/// A corrupt record met inside a flow ends its run with a message, instead of the run being
/// replayed after every lease for ever (as a store outage is).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_record_met_by_a_flow_fails_its_run_with_a_message() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    let store = fixture.store.clone();
    let bridge = Bridge::new(
        store.clone(),
        BridgeOptions {
            run_lease: Duration::from_millis(300),
            ..BridgeOptions::default()
        },
    );
    bridge
        .flow("ask", "asks one thing", |ctx| async move {
            let answer = ctx.ask(NewQuestion::ask("Go on?")).await?;
            Ok(format!("got {answer}"))
        })
        .unwrap();
    // A run whose process died after creating its first question and before parking: the
    // replay meets that question again, and its record is corrupt.
    let origin = crate::support::api_origin();
    let run = Run::new("ask", "", origin, "dead-process", Millis(1), Millis(2));
    assert_eq!(store.insert_run(&run).await.unwrap(), Inserted::Created);
    plant_corrupt_question(&fixture.server, &run.question_id(0)).await;
    bridge.start().await.unwrap();
    let failed = eventually_some(Duration::from_secs(10), "the run to fail", || {
        let (store, id) = (store.clone(), run.id.clone());
        async move {
            let run = store.get_run(&id).await.unwrap()?;
            (run.state == RunState::Failed).then_some(run)
        }
    })
    .await;
    let message = failed.result.unwrap();
    assert!(message.starts_with("corrupt record:"), "{message}");
    assert!(failed.reported, "a run without a chat is reported at once");
    bridge.shutdown();
    // And the HTTP API says so for the record itself.
    let base = crate::support::serve(app(AppState::new(bridge.clone(), None))).await;
    let response = http()
        .get(format!("{base}/api/questions/{}", run.question_id(0)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("corrupt record:"),
        "{body}"
    );
}

async fn plant_corrupt_question(server: &RedisServer, id: &QuestionId) {
    let mut connection = server.connection().await;
    let key = askbridge::store::redis::question_key("askbridge", id);
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg("q")
        .arg("{not json")
        .arg("status")
        .arg("pending")
        .arg("exp")
        .arg(u64::MAX / 2)
        .query_async(&mut connection)
        .await
        .unwrap();
}

/// The modules of each crate, and which of their siblings each one imports (`use crate::…`,
/// `super::…` and paths in code). Children of one parent must form no cycle; a parent and its
/// own children are not compared (a `mod.rs` re-exporting its children is not a cycle).
fn module_graph(src: &Path) -> BTreeMap<String, Vec<String>> {
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let module_of = |path: &Path| -> Vec<String> {
        let relative = path.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = relative
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        parts
    };
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let path_re = regex::Regex::new(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)").unwrap();
    let group_re =
        regex::Regex::new(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)*)::\{([^{}]*)\}").unwrap();
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_of(f)).collect();
    for file in &files {
        let module = module_of(file);
        let text = std::fs::read_to_string(file).unwrap();
        // Test modules may use anything; comments (doc links included) import nothing.
        let text: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let text = text.as_str();
        let mut paths: Vec<(String, String)> = path_re
            .captures_iter(text)
            .map(|c| (c[1].to_owned(), c[2].to_owned()))
            .collect();
        for capture in group_re.captures_iter(text) {
            for item in capture[3].split(',') {
                let item = item.trim();
                if item.starts_with(|c: char| c.is_ascii_lowercase()) {
                    let first = item.split("::").next().unwrap_or_default();
                    paths.push((capture[1].to_owned(), format!("{}::{first}", &capture[2])));
                }
            }
        }
        for (anchor, rest) in paths {
            let mut target: Vec<String> = if anchor == "crate" {
                Vec::new()
            } else {
                // `super` in `a/b.rs` and in `a/b/mod.rs` is `a`.
                module[..module.len().saturating_sub(1)].to_vec()
            };
            target.extend(
                rest.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            );
            // The sibling level: the first component where the two paths part.
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common >= module.len() || common >= target.len() {
                continue; // a module and its own descendants, or an ancestor's item
            }
            let (from, to) = (&module[common], &target[common]);
            let known = modules
                .iter()
                .any(|m| m.len() > common && m[..common] == module[..common] && m[common] == *to);
            if from != to && known {
                let parent = module[..common].join("::");
                edges
                    .entry(format!("{parent}::{from}"))
                    .or_default()
                    .push(format!("{parent}::{to}"));
            }
        }
    }
    for targets in edges.values_mut() {
        targets.sort();
        targets.dedup();
    }
    edges
}

fn find_cycle(edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in [
        "src",
        "core/src",
        "adapters/telegram/src",
        "adapters/discord/src",
    ] {
        let edges = module_graph(&root.join(src));
        assert!(
            !edges.is_empty() || src.starts_with("adapters"),
            "{src}: no edges found"
        );
        if let Some(cycle) = find_cycle(&edges) {
            panic!("{src}: import cycle {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut edges = BTreeMap::new();
    edges.insert("::a".to_owned(), vec!["::b".to_owned()]);
    edges.insert("::b".to_owned(), vec!["::a".to_owned()]);
    assert!(find_cycle(&edges).is_some());
    edges.insert("::b".to_owned(), vec!["::c".to_owned()]);
    assert!(find_cycle(&edges).is_none());
}
