//! Reading list, duration and flow settings, each failure naming its variable.

use super::ConfigError;
use super::vars::FLOWS;
use std::path::PathBuf;
use std::time::Duration;

/// A comma-separated list of identities.
pub(super) fn identities(
    get: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
) -> Result<Vec<String>, ConfigError> {
    let list: Vec<String> = get(variable)
        .map(|text| {
            text.split(',')
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();
    match list
        .iter()
        .find(|t| !askbridge_core::identity::is_well_formed(t))
    {
        Some(bad) => Err(ConfigError {
            variable,
            reason: format!(
                "`{bad}` is not an identity like telegram:42, discord:1234, console or api"
            ),
        }),
        None => Ok(list),
    }
}

pub(super) fn parse_flows(text: Option<&str>) -> Result<Vec<(String, String)>, ConfigError> {
    let mut flows = Vec::new();
    for pair in text
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let Some((name, url)) = pair.split_once('=') else {
            return Err(ConfigError {
                variable: FLOWS,
                reason: format!("`{pair}` is not name=url"),
            });
        };
        let (name, url) = (name.trim(), url.trim());
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ConfigError {
                variable: FLOWS,
                reason: format!("`{url}` (flow {name}) is not an http:// or https:// URL"),
            });
        }
        flows.push((name.to_owned(), url.to_owned()));
    }
    Ok(flows)
}

pub(super) fn seconds(
    get: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
    default: u64,
) -> Result<Duration, ConfigError> {
    match get(variable) {
        None => Ok(Duration::from_secs(default)),
        Some(text) => match text.parse::<f64>() {
            Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 365.0 * 24.0 * 3600.0 => {
                Ok(Duration::from_secs_f64(secs))
            }
            _ => Err(ConfigError {
                variable,
                reason: format!("`{text}` is not a positive number of seconds"),
            }),
        },
    }
}

pub(super) fn default_data_dir(lookup: &impl Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(xdg) = lookup("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("askbridge");
    }
    match lookup("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/share/askbridge"),
        None => PathBuf::from("askbridge-data"),
    }
}

/// A comma-separated list of words.
pub(super) fn list(get: &impl Fn(&str) -> Option<String>, variable: &str) -> Vec<String> {
    get(variable)
        .map(|text| {
            text.split(',')
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// `true` or `false` (also 1/0, yes/no); `default` when unset.
/// A positive whole number, when set.
pub(super) fn positive(
    get: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
) -> Result<Option<usize>, ConfigError> {
    let Some(text) = get(variable).filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(ConfigError {
            variable,
            reason: format!("`{text}` is not a positive whole number"),
        }),
    }
}

pub(super) fn flag(
    get: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
    default: bool,
) -> Result<bool, ConfigError> {
    match get(variable).as_deref() {
        None => Ok(default),
        Some("false" | "0" | "no") => Ok(false),
        Some("true" | "1" | "yes") => Ok(true),
        Some(other) => Err(ConfigError {
            variable,
            reason: format!("`{other}` is not true or false"),
        }),
    }
}
