//! Small text helpers every other module may use. A leaf: it imports nothing from the crate, so
//! rendering, approvals and answers can all shorten text without depending on one another.

/// `text` cut to at most `max_chars` characters, ending in `…` when cut.
pub fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `text` with its first letter in lower case ("Answered" -> "answered").
pub fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The first line of `text` (all of it when it has one line).
pub fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// Characters that change how text around them is shown rather than showing anything: control
/// characters, bidirectional overrides and isolates (which can make `allow` read as `wolla`), the
/// byte-order mark.
fn is_format_trick(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202A}'..='\u{202E}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
        || c == '\u{FEFF}'
}

fn is_invisible(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}')
}

/// Why `text` cannot be a prompt, an option or an answer, if it cannot: it holds a control
/// character (a terminal escape, NUL, BEL, a carriage return that hides what precedes it), a
/// bidirectional override or a byte-order mark — or, being nonempty, shows nothing at all.
/// Line breaks and tabs are allowed only where `multiline`.
pub fn unprintable(text: &str, multiline: bool) -> Option<&'static str> {
    if let Some(c) = text
        .chars()
        .find(|c| is_format_trick(*c) || (!multiline && matches!(c, '\n' | '\t')))
    {
        return Some(match c {
            '\n' | '\t' => "may not contain line breaks or tabs",
            c if c.is_control() => {
                "may not contain control characters (terminal escapes, NUL, BEL, carriage returns)"
            }
            _ => "may not contain direction overrides or byte-order marks",
        });
    }
    if !text.is_empty() && text.chars().all(is_invisible) {
        return Some("shows nothing: it is only spaces or zero-width characters");
    }
    None
}

/// `text` safe for a terminal: control characters other than line breaks and tabs, and
/// direction overrides, shown as `\u{..}` escapes instead of acting.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_format_trick) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_format_trick(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tricks_are_refused_and_escaped() {
        for (text, multiline) in [
            ("\u{1b}[2J\u{1b}[H", true),
            ("safe\rEVIL", false),
            ("a\u{0}b", true),
            ("ding\u{7}", true),
            ("\u{202E}wolla", false),
            ("\u{FEFF}yes", false),
            ("\u{200B}\u{200B}", false),
            ("two\nlines", false),
            ("   ", false),
        ] {
            assert!(unprintable(text, multiline).is_some(), "{text:?}");
        }
        for (text, multiline) in [
            ("Ship 1.4?", false),
            ("line\nbreak", true),
            ("tab\there", true),
            ("é 日本", false),
        ] {
            assert_eq!(unprintable(text, multiline), None, "{text:?}");
        }
        assert_eq!(printable("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\nc");
        assert_eq!(printable("plain"), "plain");
    }

    #[test]
    fn shortening_counts_characters_not_bytes() {
        assert_eq!(shorten("héllo", 5), "héllo");
        assert_eq!(shorten("héllo wörld", 6), "héllo…");
        assert_eq!(lowercase_first("Answered: x"), "answered: x");
        assert_eq!(first_line("a\nb"), "a");
        assert_eq!(first_line(""), "");
    }
}
