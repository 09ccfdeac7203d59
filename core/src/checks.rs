//! The field checks a [`crate::NewQuestion`] goes through: text, option shapes, identities, URLs,
//! session ids. Apart from the request so that each file reads at a glance; every check names the
//! field it refuses, which is what the HTTP API's 422 and the chat replies say.

use crate::Error;
use crate::identity::{is_well_formed, malformed};
use crate::question::{Kind, MAX_LABEL_CHARS, MAX_OPTIONS, MAX_PEOPLE, MAX_SESSION_CHARS};
use crate::text::Lines;

/// Checks a session id: 1-128 characters of letters, digits and `. _ : - / @` (no braces, no
/// spaces: session ids end up in store keys).
pub fn check_session_id(session_id: &str) -> Result<(), Error> {
    let ok = !session_id.is_empty()
        && session_id.chars().count() <= MAX_SESSION_CHARS
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:-/@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Error::Invalid {
            field: "session_id",
            reason: format!(
                "must be 1-{MAX_SESSION_CHARS} characters of letters, digits and . _ : - / @"
            ),
        })
    }
}

/// Checks `text` against the text policy and its length in characters ([`crate::text::unfit`]).
pub(crate) fn check_text(
    field: &'static str,
    text: &str,
    lines: Lines,
    bounds: (usize, usize),
) -> Result<(), Error> {
    match crate::text::unfit(text, lines, bounds) {
        Some(reason) => Err(Error::Invalid { field, reason }),
        None => Ok(()),
    }
}

pub(crate) fn check_shape(
    kind: Kind,
    options: &[String],
    multi: bool,
    allow_custom: bool,
) -> Result<(), Error> {
    let invalid = |field, reason: &str| {
        Err(Error::Invalid {
            field,
            reason: reason.to_owned(),
        })
    };
    match kind {
        Kind::Confirm | Kind::Approval if !options.is_empty() => {
            return invalid(
                "options",
                "confirm and approval questions have fixed replies",
            );
        }
        Kind::Confirm | Kind::Approval if multi || allow_custom => {
            return invalid(
                "multi",
                "confirm and approval questions take one fixed reply",
            );
        }
        Kind::Form if !options.is_empty() || multi || allow_custom => {
            return invalid("options", "a form's fields are in `form`, not options");
        }
        Kind::Ask if multi && options.is_empty() => {
            return invalid("multi", "a multi-choice question needs options");
        }
        _ => {}
    }
    if options.len() > MAX_OPTIONS {
        return Err(Error::Invalid {
            field: "options",
            reason: format!("{} options; the limit is {MAX_OPTIONS}", options.len()),
        });
    }
    for (index, label) in options.iter().enumerate() {
        check_text("options", label, Lines::One, (1, MAX_LABEL_CHARS))?;
        if multi && label.contains(',') {
            return invalid(
                "options",
                "labels of a multi-choice question may not contain commas",
            );
        }
        if options[..index]
            .iter()
            .any(|o| o.eq_ignore_ascii_case(label))
        {
            return Err(Error::Invalid {
                field: "options",
                reason: format!("`{label}` appears twice"),
            });
        }
    }
    Ok(())
}

pub(crate) fn check_identities<'a>(
    field: &'static str,
    mut list: impl ExactSizeIterator<Item = &'a str>,
) -> Result<(), Error> {
    if list.len() > MAX_PEOPLE {
        return Err(Error::Invalid {
            field,
            reason: format!("{} entries; the limit is {MAX_PEOPLE}", list.len()),
        });
    }
    match list.find(|entry| !is_well_formed(entry)) {
        Some(bad) => Err(Error::Invalid {
            field,
            reason: malformed(bad),
        }),
        None => Ok(()),
    }
}

pub(crate) fn check_url(field: &'static str, url: &str) -> Result<(), Error> {
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() <= 2000
        && !url.chars().any(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(Error::Invalid {
            field,
            reason: "must be an http:// or https:// URL".into(),
        })
    }
}

pub(crate) fn dedup<T: PartialEq>(list: Vec<T>) -> Vec<T> {
    let mut seen = Vec::with_capacity(list.len());
    for item in list {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}
