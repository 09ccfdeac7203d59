//! The Python client (`clients/python`): its pytest suite against the binary built here (each
//! test starts its own `askbridge serve` on a free loopback port and plays the person over HTTP),
//! and its checks (mypy --strict, ruff), so CI holds it to the contract and its types.
//!
//! `scripts/test` installs it (with its LangChain extra), pytest, mypy and ruff into
//! `target/py-venv`; without a package index that cannot happen, and these tests say they were
//! skipped (unless `ASKBRIDGE_REQUIRE_PYTHON_CLIENT` says the install succeeded).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's interpreter, when it holds the client and its test tools.
fn python() -> Option<PathBuf> {
    let python = root().join("target/py-venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import askbridge, pytest, mypy, ruff, langchain"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("ASKBRIDGE_REQUIRE_PYTHON_CLIENT").is_err(),
            "scripts/test installed the Python client, but target/py-venv cannot import it"
        );
        eprintln!("skipped: no Python client in target/py-venv (scripts/test installs it)");
    }
    ok.then_some(python)
}

/// Runs `python -m <args>` in `clients/python`, keeping caches under target/.
fn run(python: &Path, args: &[&str]) -> Output {
    Command::new(python)
        .arg("-m")
        .args(args)
        .current_dir(root().join("clients/python"))
        .env("ASKBRIDGE_BIN", env!("CARGO_BIN_EXE_askbridge"))
        .env("MYPY_CACHE_DIR", root().join("target/py-cache/mypy"))
        .env("RUFF_CACHE_DIR", root().join("target/py-cache/ruff"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap()
}

fn assert_passed(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_python_client_passes_its_suite_against_this_binary() {
    let Some(python) = python() else { return };
    // The LangChain agent's run, as the closing note shows it: written by its test.
    let transcript = root().join("target/test-artifacts/langchain-transcript.txt");
    let _ = std::fs::remove_file(&transcript);
    let output = run(
        &python,
        &["pytest", "tests", "-q", "-p", "no:cacheprovider"],
    );
    assert_passed("pytest clients/python/tests", &output);
    let summary = String::from_utf8_lossy(&output.stdout);
    eprintln!("{}", summary.lines().last().unwrap_or_default());
    if let Ok(text) = std::fs::read_to_string(&transcript) {
        eprintln!("{text}");
    }
}

#[test]
fn the_python_client_is_typed_strictly_and_lint_clean() {
    let Some(python) = python() else { return };
    assert_passed("mypy --strict", &run(&python, &["mypy"]));
    assert_passed("ruff check", &run(&python, &["ruff", "check"]));
    assert_passed(
        "ruff format --check",
        &run(&python, &["ruff", "format", "--check"]),
    );
}
