//! What an entry of the settings table (`vars.rs`) is, how it is shown, and how a variable is
//! read through it.

use super::ConfigError;
use super::parse::Parsed;

/// A setting's default, as people read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// A value: an unset variable reads as if it held this text, so the default shown is the
    /// default that applies.
    Value(&'static str),
    /// What an unset variable means, in words (`none`, `one per core`); `code` in backquotes.
    Note(&'static str),
}

/// One setting, as the listings show it.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// The environment variable.
    pub name: &'static str,
    /// What applies when it is unset.
    pub default: Shown,
    /// What it does, in a line; `code` in backquotes.
    pub help: &'static str,
}

impl Setting {
    /// The default in plain text, as a terminal shows it.
    pub fn default_text(&self) -> String {
        match self.default {
            Shown::Value(value) => value.to_owned(),
            Shown::Note(note) => plain(note),
        }
    }

    /// The help in plain text, as a terminal shows it.
    pub fn help_text(&self) -> String {
        plain(self.help)
    }

    /// Its row in the README's table: the default in code when it is a value.
    pub(super) fn markdown_row(&self) -> String {
        let default = match self.default {
            Shown::Value(value) => format!("`{value}`"),
            Shown::Note(note) => note.to_owned(),
        };
        format!("| `{}` | {default} | {} |\n", self.name, self.help)
    }
}

/// A terminal shows no code spans: their backquotes would only be noise.
fn plain(markdown: &str) -> String {
    markdown.replace('`', "")
}

/// How a variable is looked up: its text trimmed, `None` when unset or blank.
pub(super) type Get<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// A setting without a default value: `None` when unset.
pub(super) fn optional<T>(
    get: &Get<'_>,
    variable: &'static str,
    parse: fn(&str) -> Parsed<T>,
) -> Result<Option<T>, ConfigError> {
    get(variable)
        .map(|text| parse(&text).map_err(|reason| ConfigError { variable, reason }))
        .transpose()
}

/// A setting with a default value, which an unset variable reads as.
pub(super) fn with_default<T>(
    get: &Get<'_>,
    variable: &'static str,
    default: &str,
    parse: fn(&str) -> Parsed<T>,
) -> Result<T, ConfigError> {
    let text = get(variable).unwrap_or_else(|| default.to_owned());
    parse(&text).map_err(|reason| ConfigError { variable, reason })
}
