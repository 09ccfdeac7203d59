//! The import graph of the code: no cycle between a crate's modules, `src/` imports only down
//! its layers ([`LAYERS`], the Layout section of `src/lib.rs`), and core and the adapters depend
//! on no other crate of the workspace. Each check is tested to find what it looks for.

use super::*;

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
pub(super) fn source_files(src: &Path) -> Vec<(PathBuf, Vec<String>)> {
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
