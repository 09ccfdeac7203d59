//! The settings table (`src/config/vars.rs`) is the one declaration of askbridge's settings:
//! README.md's table and `.env.example` are held to it here, so a setting added, renamed or
//! given another default fails these tests until the documents say the same.

use askbridge::config::{self, SETTINGS, Shown};
use std::collections::BTreeMap;

/// The README's table sits between these two lines (HTML comments, which Markdown hides).
const TABLE_BEGIN: &str = "<!-- settings table: generated from src/config/vars.rs";
const TABLE_END: &str = "<!-- end of settings table -->";

fn read(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines after the one starting with `begin`, up to the one starting with `end`.
fn between(text: &str, begin: &str, end: &str) -> Option<String> {
    let mut lines = text.lines().skip_while(|line| !line.starts_with(begin));
    lines.next()?;
    let mut inside = String::new();
    for line in lines {
        if line.starts_with(end) {
            return Some(inside);
        }
        inside.push_str(line);
        inside.push('\n');
    }
    None
}

#[test]
fn the_readme_table_is_the_settings_table() {
    let expected = config::markdown_table();
    // The blank lines around the table keep Markdown from reading the comments as its rows.
    let found = between(&read("README.md"), TABLE_BEGIN, TABLE_END);
    assert!(
        found.as_deref().map(str::trim) == Some(expected.trim()),
        "README.md's settings table is not the one src/config/vars.rs declares. Paste this \
         between the lines `{TABLE_BEGIN} ...` and `{TABLE_END}`:\n\n{expected}"
    );
}

#[test]
fn env_example_sets_every_setting_to_its_default() {
    let text = read(".env.example");
    // Commented-out lines are examples of other programs' variables (the client's ASKBRIDGE_URL).
    let assigned: BTreeMap<&str, &str> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.trim(), value.trim()))
        .collect();
    let mut wrong = Vec::new();
    for setting in SETTINGS {
        match (assigned.get(setting.name), setting.default) {
            (None, _) => wrong.push(format!("{} is missing", setting.name)),
            // Empty reads as unset, so it means the default too.
            (Some(&value), Shown::Value(default)) if !value.is_empty() && value != default => wrong
                .push(format!(
                    "{}={value}, but its default is {default} (a copy of .env.example must \
                     change nothing)",
                    setting.name
                )),
            _ => {}
        }
    }
    for name in assigned.keys() {
        if !SETTINGS.iter().any(|setting| setting.name == *name) {
            wrong.push(format!("{name} is not a setting askbridge reads"));
        }
    }
    assert!(wrong.is_empty(), ".env.example: {}", wrong.join("; "));
}
