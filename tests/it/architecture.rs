//! Properties of the code's shape that behaviour tests do not show: a tap reads its question
//! once, a corrupt record ends a run instead of being replayed for ever, no module imports form a
//! cycle, `src/` imports only down its layers ([`LAYERS`], the Layout section of `src/lib.rs`),
//! and core and the adapters depend on no other crate of the workspace.

use crate::support::{RedisServer, eventually_some, http, redis_store_with, serve_api};
use crate::telegram::{GROUP, alice, ask_body, setup_over};
use askbridge::BridgeOptions;
use askbridge::Flows;
use askbridge::bridge::Bridge;
use askbridge::store::memory::MemoryStore;
use askbridge::store::{
    ClaimOptions, Claimed, Counts, Inserted, ListFilter, Questions, Result, Runs, StoreOptions,
};
use askbridge_core::run::{Run, RunState};
use askbridge_core::{Claim, Millis, NewQuestion, Question, QuestionId};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The questions role of a memory store, logging the question reads and claims made through it
/// (given to the bridge with `BridgeBuilder::questions`; the other roles stay the store's).
struct CountingQuestions {
    inner: Arc<MemoryStore>,
    log: Mutex<Vec<String>>,
}

impl CountingQuestions {
    fn note(&self, entry: String) {
        self.log.lock().unwrap().push(entry);
    }

    fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

#[async_trait]
impl Questions for CountingQuestions {
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
    fn claims_ahead(&self) -> bool {
        self.inner.claims_ahead()
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

/// A Telegram tap reads its question once (for the toast and the claim alike), then claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telegram_tap_reads_its_question_once_before_claiming() {
    let memory = Arc::new(MemoryStore::default());
    let store = Arc::new(CountingQuestions {
        inner: memory.clone(),
        log: Mutex::default(),
    });
    let s = setup_over(memory, store.clone()).await;
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
    let flows = Flows::new()
        .flow("ask", "asks one thing", |ctx| async move {
            let answer = ctx.ask(NewQuestion::ask("Go on?")).await?;
            Ok(format!("got {answer}"))
        })
        .unwrap();
    let builder = Bridge::builder(store.clone())
        .options(BridgeOptions {
            run_lease: Duration::from_millis(300),
            ..BridgeOptions::default()
        })
        .runner(Arc::new(flows));
    // A run whose process died after creating its first question and before parking: the
    // replay meets that question again, and its record is corrupt.
    let origin = crate::support::api_origin();
    let run = Run::new("ask", "", origin, "dead-process", Millis(1), Millis(2));
    assert_eq!(store.insert_run(&run).await.unwrap(), Inserted::Created);
    plant_corrupt_question(&fixture.server, &run.question_id(0)).await;
    let bridge = builder.start().await.unwrap();
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
    let base = serve_api(bridge.clone()).await;
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

/// The parts of `src/`, bottom-up, as the Layout section of `src/lib.rs` lists them. A part
/// may import every part of the layers below its own, the other parts of its own layer only
/// where `peers` says so, and nothing above. `core` is the `askbridge-core` crate (re-exported
/// as `crate::core`); `cli` is the `askbridge` command's own crate (with `main.rs`).
const LAYERS: &[Layer] = &[
    Layer {
        name: "core",
        peers: false,
        parts: &["core"],
    },
    Layer {
        name: "store",
        peers: false,
        parts: &["store"],
    },
    Layer {
        name: "leaves",
        peers: false,
        parts: &["egress", "signing", "metrics", "error"],
    },
    Layer {
        name: "bridge",
        peers: false,
        parts: &["bridge"],
    },
    Layer {
        name: "flows",
        peers: false,
        parts: &["flows"],
    },
    Layer {
        name: "leader",
        peers: false,
        parts: &["leader"],
    },
    Layer {
        name: "surfaces",
        peers: true,
        parts: &["http", "mcp", "client", "console", "demo"],
    },
    Layer {
        name: "binary",
        peers: true,
        parts: &["config", "runtime", "server", "cli"],
    },
];

/// One layer of [`LAYERS`].
struct Layer {
    name: &'static str,
    /// May its parts import one another (the cycle check still holds them)?
    peers: bool,
    parts: &'static [&'static str],
}

/// Why `from` may not import `to` (top-level parts of `src/`), if it may not.
fn refusal(from: &str, to: &str) -> Option<String> {
    let layer_of = |part: &str| LAYERS.iter().position(|l| l.parts.contains(&part));
    let (a, b) = (layer_of(from)?, layer_of(to)?);
    if from == to || b < a || (a == b && LAYERS[a].peers) {
        return None;
    }
    Some(if a == b {
        format!(
            "{from} imports {to}: the parts of layer `{}` do not import one another",
            LAYERS[a].name
        )
    } else {
        format!(
            "{from} (layer `{}`) imports {to}, which is above it (layer `{}`)",
            LAYERS[a].name, LAYERS[b].name
        )
    })
}

/// The `.rs` files under `src` with their modules (`a/b.rs` and `a/b/mod.rs` are `a::b`;
/// `lib.rs` and `main.rs` are the root, `[]`).
fn source_files(src: &Path) -> Vec<(PathBuf, Vec<String>)> {
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
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Vec<String> = relative
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            (path, module)
        })
        .collect()
}

/// One path into the crate found in a source file (`use crate::…`, `super::…`, in `use` groups,
/// nested ones included, and in code).
#[derive(Debug)]
struct Import {
    /// Where it is written: `src/x.rs:12`.
    at: String,
    /// The importing module, from the crate root.
    from: Vec<String>,
    /// The imported path from the crate root, as far as it is written (modules, then an item,
    /// perhaps its function). An item the root re-exports (`crate::Error`) counts as its
    /// module's (`error`).
    to: Vec<String>,
}

/// Every path into the crate written in the files under `src`. Test modules (from
/// `#[cfg(test)]` on) may use anything; comments (doc links included) import nothing.
fn imports(src: &Path) -> Vec<Import> {
    let reexports = root_reexports(&src.join("lib.rs"));
    let anchor = regex::Regex::new(r"\b(crate|super)::").unwrap();
    let mut found = Vec::new();
    for (file, module) in source_files(src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let text: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .map(|line| {
                if line.trim_start().starts_with("//") {
                    ""
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let shown = file.strip_prefix(src.parent().unwrap()).unwrap_or(&file);
        for capture in anchor.captures_iter(&text) {
            let whole = capture.get(0).unwrap();
            if text[..whole.start()].ends_with("::") {
                continue; // `super::super::`: read from the first `super`
            }
            let line = text[..whole.start()].matches('\n').count() + 1;
            let mut paths = Vec::new();
            use_tree(text.as_bytes(), whole.end(), Vec::new(), &mut paths);
            for path in paths {
                let mut to = if &capture[1] == "crate" {
                    Vec::new()
                } else {
                    // `super` in `a/b.rs` and in `a/b/mod.rs` is `a`.
                    module[..module.len().saturating_sub(1)].to_vec()
                };
                let mut segments = path.into_iter().peekable();
                while segments.next_if(|s| s == "super").is_some() {
                    to.pop();
                }
                to.extend(segments);
                if let Some(first) = to.first_mut()
                    && let Some(owner) = reexports.get(first.as_str())
                {
                    *first = owner.clone();
                }
                found.push(Import {
                    at: format!("{}:{line}", shown.display()),
                    from: module.clone(),
                    to,
                });
            }
        }
    }
    found
}

/// Reads the use tree (or path) at `text[at..]`, just after `crate::` or `super::`, into
/// `paths` (each prefixed with `prefix`): `a::{b, c::{D, e as f}, g::*}` gives `a::b`,
/// `a::c::D`, `a::c::e` and `a::g`. Returns where it stopped.
fn use_tree(
    text: &[u8],
    mut at: usize,
    mut prefix: Vec<String>,
    paths: &mut Vec<Vec<String>>,
) -> usize {
    let skip_space = |mut i: usize| {
        while text.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    loop {
        at = skip_space(at);
        if text.get(at) == Some(&b'{') {
            at += 1;
            loop {
                at = skip_space(at);
                match text.get(at) {
                    None => return at,
                    Some(b'}') => return at + 1,
                    Some(b',') => at += 1,
                    Some(_) => {
                        at = use_tree(text, at, prefix.clone(), paths);
                        // Past what follows an item (` as name`) to the next one.
                        while text.get(at).is_some_and(|c| !b",}".contains(c)) {
                            at += 1;
                        }
                    }
                }
            }
        }
        let start = at;
        while text
            .get(at)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            at += 1;
        }
        if at > start {
            let segment = String::from_utf8_lossy(&text[start..at]).into_owned();
            if segment != "self" {
                prefix.push(segment);
            }
            let next = skip_space(at);
            if text[next..].starts_with(b"::") {
                at = next + 2;
                continue;
            }
        }
        paths.push(prefix);
        return at;
    }
}

/// What the crate root re-exports by name (`pub use bridge::{Bridge, Session};`): item ->
/// module.
fn root_reexports(lib: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(lib).unwrap();
    let mut owners = BTreeMap::new();
    for statement in text.split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let mut paths = Vec::new();
        use_tree(rest.as_bytes(), 0, Vec::new(), &mut paths);
        for path in paths {
            if let [module, .., item] = path.as_slice() {
                owners.insert(item.clone(), module.clone());
            }
        }
    }
    owners
}

/// The modules of a crate, and which of their siblings each one imports. Children of one
/// parent must form no cycle; a parent and its own children are not compared (a `mod.rs`
/// re-exporting its children is not a cycle).
fn module_graph(src: &Path) -> BTreeMap<String, Vec<String>> {
    let modules: Vec<Vec<String>> = source_files(src).into_iter().map(|(_, m)| m).collect();
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for Import { from, to, .. } in imports(src) {
        // The sibling level: the first component where the two paths part.
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if common >= from.len() || common >= to.len() {
            continue; // a module and its own descendants, or an ancestor's item
        }
        let (part, target) = (&from[common], &to[common]);
        let known = modules
            .iter()
            .any(|m| m.len() > common && m[..common] == from[..common] && m[common] == *target);
        if part != target && known {
            let parent = from[..common].join("::");
            edges
                .entry(format!("{parent}::{part}"))
                .or_default()
                .push(format!("{parent}::{target}"));
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
        "adapters/email/src",
        "adapters/slack/src",
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

/// The imports in `src` that go up [`LAYERS`] (or sideways where a layer's parts may not
/// import one another), each with where it is written; and the modules `LAYERS` does not place.
fn layering_violations(src: &Path) -> Vec<String> {
    let mut violations = Vec::new();
    let parts: std::collections::BTreeSet<String> = source_files(src)
        .into_iter()
        .filter_map(|(_, module)| module.into_iter().next())
        .collect();
    for part in &parts {
        if !LAYERS.iter().any(|l| l.parts.contains(&part.as_str())) {
            violations.push(format!("{part}: a part of src/ that LAYERS does not place"));
        }
    }
    for import in imports(src) {
        let (Some(from), Some(to)) = (import.from.first(), import.to.first()) else {
            continue; // the crate roots re-export and wire; they are no part
        };
        if let Some(why) = refusal(from, to) {
            violations.push(format!("{}: {why}", import.at));
        }
    }
    violations
}

#[test]
fn src_imports_only_down_its_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let violations = layering_violations(&root.join("src"));
    assert!(
        violations.is_empty(),
        "imports against the layers (LAYERS here, the Layout section of src/lib.rs):\n{}",
        violations.join("\n")
    );
    let parts: Vec<&str> = LAYERS
        .iter()
        .flat_map(|l| l.parts.iter().copied())
        .collect();
    for part in parts.iter().filter(|p| !["core", "cli"].contains(p)) {
        assert!(
            root.join(format!("src/{part}.rs")).exists()
                || root.join(format!("src/{part}")).is_dir(),
            "LAYERS names `{part}`, which src/ does not hold"
        );
    }
}

#[test]
fn the_layering_check_refuses_an_import_that_goes_up() {
    assert!(refusal("store", "bridge").is_some());
    assert!(refusal("bridge", "flows").is_some());
    assert!(refusal("bridge", "leader").is_some());
    assert!(refusal("metrics", "http").is_some());
    assert!(
        refusal("egress", "signing").is_some(),
        "leaves import no leaf"
    );
    assert!(refusal("bridge", "metrics").is_none());
    assert!(refusal("flows", "signing").is_none());
    assert!(refusal("http", "leader").is_none());
    assert!(
        refusal("http", "mcp").is_none(),
        "surfaces may use one another"
    );
    // And through a whole (made-up) tree: a store module importing the bridge from a group.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("store")).unwrap();
    std::fs::create_dir_all(src.join("bridge")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod bridge;\npub mod store;\n").unwrap();
    std::fs::write(src.join("bridge/mod.rs"), "use crate::store::Store;\n").unwrap();
    std::fs::write(
        src.join("store/mod.rs"),
        "// use crate::bridge::Bridge; (a comment)\nmod x;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("store/x.rs"),
        "use crate::{core::Millis, store::{Page,\n    Result}};\nuse super::super::{bridge::{Bridge as B}};\n",
    )
    .unwrap();
    let violations = layering_violations(&src);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].starts_with("src/store/x.rs:3: store (layer `store`) imports bridge"),
        "{violations:?}"
    );
}

#[test]
fn the_use_tree_reader_finds_every_path() {
    let mut paths = Vec::new();
    let text = "a::{b, c::{D, e as f}, self, g::*} + 1";
    let end = use_tree(text.as_bytes(), 0, Vec::new(), &mut paths);
    assert_eq!(&text[end..], " + 1");
    let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(paths, ["a::b", "a::c::D", "a::c::e", "a", "a::g"]);
}

/// The Layout section of `src/lib.rs` lists the layers of [`LAYERS`] in order, as numbered
/// items whose name is in bold, each naming its parts in backquotes.
#[test]
fn the_layout_doc_lists_the_layers_of_the_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let doc: Vec<&str> = lib
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(str::trim)
        .skip_while(|line| *line != "# Layout")
        .skip(1)
        .take_while(|line| !line.starts_with('#'))
        .collect();
    let item = regex::Regex::new(r"^\d+\. \*\*([a-z]+)\*\*").unwrap();
    let mut layers: Vec<(String, String)> = Vec::new();
    for line in doc {
        if let Some(capture) = item.captures(line) {
            layers.push((capture[1].to_owned(), line.to_owned()));
        } else if let Some((_, text)) = layers.last_mut()
            && !line.is_empty()
        {
            text.push(' ');
            text.push_str(line);
        }
    }
    let names: Vec<&str> = layers.iter().map(|(name, _)| name.as_str()).collect();
    let expected: Vec<&str> = LAYERS.iter().map(|l| l.name).collect();
    assert_eq!(
        names, expected,
        "the layers of src/lib.rs's Layout, bottom-up"
    );
    for ((_, text), layer) in layers.iter().zip(LAYERS) {
        for part in layer.parts {
            assert!(
                text.contains(&format!("`{part}`")),
                "src/lib.rs's Layout: layer `{}` does not name `{part}`",
                layer.name
            );
        }
        let says_peers = text.contains("import one another");
        assert_eq!(
            says_peers && !text.contains("not import one another"),
            layer.peers,
            "src/lib.rs's Layout: layer `{}` should say whether its parts import one another",
            layer.name
        );
    }
}

/// `askbridge-core` depends on no crate of the workspace; every adapter on `askbridge-core`
/// alone (dev-dependencies included): the adapters speak core's traits, never the server's.
#[test]
fn core_and_the_adapters_depend_on_no_other_workspace_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let members: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let mut adapters = 0;
    for package in packages {
        let name = package["name"].as_str().unwrap();
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let mut uses: Vec<&str> = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["path"].is_string() || members.contains(&d["name"].as_str().unwrap()))
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        uses.sort();
        uses.dedup();
        if name == "askbridge-core" {
            assert!(uses.is_empty(), "askbridge-core depends on {uses:?}");
        } else if manifest.starts_with(root.join("adapters")) {
            adapters += 1;
            assert_eq!(uses, ["askbridge-core"], "{name} depends on {uses:?}");
        }
    }
    let dirs = std::fs::read_dir(root.join("adapters")).unwrap().count();
    assert_eq!(adapters, dirs, "an adapter outside the workspace?");
}

/// Which part of the bridge each file belongs to: the part struct it implements (see
/// `src/bridge/mod.rs`). `None`: the file implements no part. A part's store roles are private
/// fields of its struct (`src/bridge/roles.rs`), so the compiler keeps every other file off them;
/// this table keeps each file to its own part, and the facade to one place.
const BRIDGE_PARTS: &[(&str, Option<&str>)] = &[
    ("approvals.rs", Some("Approvals")),
    ("builder.rs", None),
    ("effects/mod.rs", Some("Effects")),
    ("effects/nudges.rs", Some("Effects")),
    ("effects/sweeper.rs", Some("Effects")),
    ("facade.rs", None),
    ("idempotent.rs", Some("Idempotent")),
    ("inbox/commands.rs", None),
    ("inbox/forms.rs", None),
    ("inbox/mod.rs", Some("Messages")),
    ("inbox/plain.rs", None),
    ("leased.rs", Some("ExecSessions")),
    ("recent.rs", None),
    ("refusals.rs", None),
    ("registry.rs", Some("Registry")),
    ("resolve/attempt.rs", None),
    ("resolve/mod.rs", Some("Resolver")),
    ("resolve/votes.rs", Some("Resolver")),
    ("runner.rs", None),
    ("runs.rs", Some("Runs")),
    ("session.rs", None),
    ("waiters.rs", None),
];

/// The parts' structs.
const PART_STRUCTS: &[&str] = &[
    "Approvals",
    "Effects",
    "ExecSessions",
    "Idempotent",
    "Messages",
    "Registry",
    "Resolver",
    "Runs",
];

/// Where a bridge file steps out of its part: it reaches the whole store, implements another
/// part, or adds to `Bridge` outside the facade (`mod.rs`, `facade.rs`).
fn part_violations(bridge: &Path) -> Vec<String> {
    let implemented = regex::Regex::new(r"(?m)^impl(?:<[^>]*>)?\s+([A-Za-z]+)\s*\{").unwrap();
    let mut found = Vec::new();
    for (file, part) in BRIDGE_PARTS {
        let text = std::fs::read_to_string(bridge.join(file)).unwrap();
        let line_of = |at: usize| text[..at].matches('\n').count() + 1;
        for (n, line) in text.lines().enumerate() {
            if line.contains(".store()") || line.contains("inner.store") {
                found.push(format!("{file}:{}: the whole store", n + 1));
            }
        }
        for name in implemented.captures_iter(&text) {
            let at = line_of(name.get(1).unwrap().start());
            let name = &name[1];
            if name == "Bridge" && !["facade.rs"].contains(file) {
                found.push(format!("{file}:{at}: `impl Bridge` outside the facade"));
            } else if PART_STRUCTS.contains(&name) && Some(name) != *part {
                found.push(format!("{file}:{at}: implements {name}, another part"));
            }
        }
    }
    found
}

#[test]
fn each_file_of_the_bridge_keeps_to_its_part_and_the_facade_to_one_place() {
    let bridge = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bridge");
    let mut listed: Vec<&str> = BRIDGE_PARTS.iter().map(|(file, _)| *file).collect();
    listed.sort_unstable();
    let mut files = Vec::new();
    for (path, _) in source_files(&bridge) {
        let relative = path
            .strip_prefix(&bridge)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !["mod.rs", "roles.rs"].contains(&relative.as_str()) {
            files.push(relative);
        }
    }
    files.sort();
    assert_eq!(
        files, listed,
        "every file of src/bridge has a part in BRIDGE_PARTS"
    );
    let violations = part_violations(&bridge);
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn the_part_check_finds_a_file_stepping_out_of_its_part() {
    let dir = tempfile::tempdir().unwrap();
    for (file, part) in BRIDGE_PARTS {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let body = part.map_or(String::new(), |part| format!("impl {part} {{\n}}\n"));
        std::fs::write(path, body).unwrap();
    }
    std::fs::write(
        dir.path().join("runs.rs"),
        "impl Runs {\n    fn b(&self) { self.store().get(id); }\n}\nimpl Effects {\n}\nimpl Bridge {\n}\n",
    )
    .unwrap();
    let found = part_violations(dir.path());
    assert_eq!(
        found,
        [
            "runs.rs:2: the whole store",
            "runs.rs:4: implements Effects, another part",
            "runs.rs:6: `impl Bridge` outside the facade",
        ],
    );
}

/// The facade's functions: each one line into a part (a call, perhaps bound to a name first);
/// and no more public ones on `Bridge` than it has now.
#[test]
fn the_facade_is_one_line_calls_and_stays_small() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bridge");
    let function = regex::Regex::new(r"^    pub(\(crate\))? (?:async )?fn ([a-z_]+)").unwrap();
    let mut count = 0;
    for file in ["mod.rs", "facade.rs"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let Some(name) = function.captures(line) else {
                continue;
            };
            count += usize::from(name.get(1).is_none());
            let open = (n..lines.len()).find(|&i| lines[i].ends_with('{')).unwrap();
            let close = (open..lines.len()).find(|&i| lines[i] == "    }").unwrap();
            // One expression, perhaps after one `let` (rustfmt may spread either over lines).
            let statements = lines[open + 1..close].concat().matches(';').count();
            if file == "facade.rs" {
                assert!(
                    statements <= 1,
                    "{file}: `{}` has {statements} statements: the facade only calls into a part",
                    &name[2],
                );
            }
        }
    }
    assert!(count <= 26, "Bridge has {count} public functions");
}
