//! The parsers the settings table names: each turns one variable's text (trimmed, never empty)
//! into a value, or says in one line what is wrong and what would be accepted. The variable's
//! name is added by the caller, so a parser serves every setting of its kind.

use askbridge_core::secret::Secret;
use askbridge_core::{Identity, Target};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What a parser returns: the value, or the reason it is refused.
pub(super) type Parsed<T> = Result<T, String>;

/// Any text.
pub(super) fn text(text: &str) -> Parsed<String> {
    Ok(text.to_owned())
}

/// Any text, kept as a [`Secret`] so that it never prints.
pub(super) fn secret(text: &str) -> Parsed<Secret> {
    Ok(Secret::new(text))
}

/// An `http(s)://` URL with a host (a public address of this server).
pub(super) fn public_url(text: &str) -> Parsed<String> {
    let refused = || format!("`{text}` is not a URL like https://askbridge.example.com");
    let url = reqwest::Url::parse(text).map_err(|_| refused())?;
    let usable = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.username().is_empty()
        && url.query().is_none()
        && url.fragment().is_none();
    usable
        .then(|| text.trim_end_matches('/').to_owned())
        .ok_or_else(refused)
}

pub(super) fn address(text: &str) -> Parsed<SocketAddr> {
    text.parse()
        .map_err(|_| format!("`{text}` is not an address like 127.0.0.1:8080"))
}

/// A Redis URL, or a cluster's seed URLs separated by commas. A secret: it may carry a password.
pub(super) fn redis_url(text: &str) -> Parsed<Secret> {
    let well_formed = |url: &str| {
        url.starts_with("redis://") || url.starts_with("rediss://") || url.starts_with("unix://")
    };
    if text.split(',').map(str::trim).all(well_formed) {
        Ok(Secret::new(text))
    } else {
        Err("must start with redis://, rediss:// or unix:// (for a cluster, seed URLs separated by commas)".into())
    }
}

/// Telegram's rule for the secret token it echoes in a header.
pub(super) fn webhook_secret(text: &str) -> Parsed<Secret> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if (1..=256).contains(&text.len()) && text.chars().all(allowed) {
        Ok(Secret::new(text))
    } else {
        Err("must be 1-256 characters of A-Z, a-z, 0-9, _ and -".into())
    }
}

pub(super) fn millis(text: &str) -> Parsed<Duration> {
    text.parse()
        .map(Duration::from_millis)
        .map_err(|_| format!("`{text}` is not a number of milliseconds (0 turns the wait off)"))
}

/// A positive number of seconds, fractions allowed, at most a year.
pub(super) fn seconds(text: &str) -> Parsed<Duration> {
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 365.0 * 24.0 * 3600.0 => {
            Ok(Duration::from_secs_f64(secs))
        }
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

pub(super) fn positive(text: &str) -> Parsed<usize> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{text}` is not a positive whole number")),
    }
}

/// `true` or `false` (also 1/0, yes/no).
pub(super) fn flag(text: &str) -> Parsed<bool> {
    match text {
        "false" | "0" | "no" => Ok(false),
        "true" | "1" | "yes" => Ok(true),
        other => Err(format!("`{other}` is not true or false")),
    }
}

/// A comma-separated list of words.
pub(super) fn list(text: &str) -> Parsed<Vec<String>> {
    Ok(text
        .split(',')
        .map(str::trim)
        .filter(|word| !word.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Comma-separated identities (`telegram:42`, `console`, ...).
pub(super) fn identities(text: &str) -> Parsed<Vec<Identity>> {
    let list = well_formed(
        text,
        "an identity like telegram:42, discord:1234, console or api",
    )?;
    Ok(list.into_iter().map(Identity::new).collect())
}

/// Comma-separated targets (`telegram:<chat id>`, `console`, ...).
pub(super) fn targets(text: &str) -> Parsed<Vec<Target>> {
    let list = well_formed(
        text,
        "a target like telegram:<chat id>, discord:<channel id> or console",
    )?;
    Ok(list.into_iter().map(Target::new).collect())
}

/// A list whose every word is `<surface>:<address>` or a bare surface; `kind` says what one is.
fn well_formed(text: &str, kind: &str) -> Parsed<Vec<String>> {
    let list = list(text)?;
    match list
        .iter()
        .find(|word| !askbridge_core::identity::is_well_formed(word))
    {
        Some(bad) => Err(format!("`{bad}` is not {kind}")),
        None => Ok(list),
    }
}

/// Hosts, addresses and networks callback URLs may reach although internal. Checked here by
/// the rules that will apply them, so that a typo stops start-up rather than the first callback.
pub(super) fn callback_allow(text: &str) -> Parsed<Vec<String>> {
    let list = list(text)?;
    crate::egress::Egress::public_only().allow(&list)?;
    Ok(list)
}

/// Comma-separated `name=url` pairs, each URL http:// or https://.
pub(super) fn flows(text: &str) -> Parsed<Vec<(String, String)>> {
    let mut flows = Vec::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, url)) = pair.split_once('=') else {
            return Err(format!("`{pair}` is not name=url"));
        };
        let (name, url) = (name.trim(), url.trim());
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "`{url}` (flow {name}) is not an http:// or https:// URL"
            ));
        }
        flows.push((name.to_owned(), url.to_owned()));
    }
    Ok(flows)
}

pub(super) fn path(text: &str) -> Parsed<PathBuf> {
    Ok(PathBuf::from(text))
}

/// Where the embedded store lives unless told: the XDG data directory.
pub(super) fn default_data_dir(lookup: &impl Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(xdg) = lookup("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("askbridge");
    }
    match lookup("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/share/askbridge"),
        None => PathBuf::from("askbridge-data"),
    }
}
