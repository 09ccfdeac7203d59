//! The bridge's parts: each file keeps to its part's store roles, and `impl Bridge` (the facade)
//! is one-line calls in one place.

use super::layers::source_files;
use super::*;

/// Which part of the bridge each file belongs to: the part struct it implements (see
/// `src/bridge/mod.rs`). `None`: the file implements no part. A part's store roles are private
/// fields of its struct (`src/bridge/roles.rs`), so the compiler keeps every other file off them;
/// this table keeps each file to its own part, and the facade to one place.
const BRIDGE_PARTS: &[(&str, Option<&str>)] = &[
    ("approvals/batch.rs", Some("Approvals")),
    ("approvals/mod.rs", Some("Approvals")),
    ("builder.rs", None),
    ("effects/mod.rs", Some("Effects")),
    ("effects/nudges.rs", Some("Effects")),
    ("effects/settling.rs", None),
    ("effects/sweeper.rs", Some("Effects")),
    ("facade.rs", None),
    ("idempotent.rs", Some("Idempotent")),
    ("inbox/claims.rs", None),
    ("inbox/commands.rs", None),
    ("inbox/delivery.rs", None),
    ("inbox/forms.rs", None),
    ("inbox/mod.rs", Some("Messages")),
    ("inbox/plain.rs", None),
    ("inbox/respond.rs", None),
    ("leased.rs", Some("ExecSessions")),
    ("recent.rs", None),
    ("refusals.rs", None),
    ("registry.rs", Some("Registry")),
    ("resolve/attempt.rs", None),
    ("resolve/decisions.rs", Some("Resolver")),
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
