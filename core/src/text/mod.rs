//! Text helpers every other module may use, and the one text policy ([`refusal`]) with the two
//! ways of showing text that did not pass it ([`printable`], [`visible`]). A leaf: it imports
//! nothing from the crate, so rendering, approvals, forms and answers all use the same rules
//! without depending on one another.

use std::borrow::Cow;

pub mod unicode;

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

/// Whether a field may hold line breaks (a detail may; a label, a name or a title may not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// One line: no line breaks, tabs or line separators.
    One,
    /// Several lines: `\n` and tabs allowed.
    Many,
}

/// The one text policy, for every string a person will read (prompts, options, details, answers,
/// form titles and choices, tool names, display names), on every surface. Stated by Unicode
/// property so that the next look-alike is covered by the class, not by a list of examples:
///
/// - general category Cc (terminal escapes, NUL, BEL, a carriage return that hides what precedes
///   it), except `\n` and tab where the field has several lines;
/// - Bidi_Control (U+202E and the like, which make `allow` read as `wolla`);
/// - Zl / Zp (U+2028, U+2029) in a one-line field;
/// - nonempty text made only of White_Space, Default_Ignorable_Code_Point and look-alike blanks
///   (U+3164, U+2800, ...): it shows nothing.
///
/// Returns why `text` is refused, if it is, as the end of a sentence naming the field.
pub fn refusal(text: &str, lines: Lines) -> Option<&'static str> {
    for c in text.chars() {
        if (c == '\n' || c == '\t') && lines == Lines::Many {
            continue;
        }
        if c == '\n' || c == '\t' || (lines == Lines::One && unicode::is_line_separator(c)) {
            return Some("must be one line: no line breaks, tabs or line separators");
        }
        if c.is_control() {
            return Some(
                "may not contain control characters (terminal escapes, NUL, BEL, carriage returns)",
            );
        }
        if unicode::is_bidi_control(c) {
            return Some("may not contain direction controls (such as U+202E), which reorder text");
        }
    }
    if !text.is_empty() && text.chars().all(unicode::is_blank) {
        return Some("shows nothing: it is only blank or invisible characters");
    }
    None
}

/// Why `text` cannot be a field of `lines` holding `min` to `max` characters: the text policy
/// ([`refusal`]), then the length. The end of a sentence naming the field, like [`refusal`]'s.
pub fn unfit(text: &str, lines: Lines, (min, max): (usize, usize)) -> Option<String> {
    if let Some(why) = refusal(text, lines) {
        return Some(why.to_owned());
    }
    let chars = text.chars().count();
    if chars < min {
        return Some(match min {
            1 => "must not be empty".to_owned(),
            _ => format!("is {chars} characters long; at least {min} are needed"),
        });
    }
    (chars > max).then(|| format!("is {chars} characters long; the limit is {max}"))
}

/// `text` with the characters `escape` picks shown as `\u{..}` escapes instead of acting.
fn escaped(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escape(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` safe for a terminal or a message: what [`refusal`] refuses inside a several-line field
/// (control characters other than line breaks and tabs, direction controls) shown as `\u{..}`
/// escapes. For text that passed the policy this changes nothing; it guards what was stored
/// before the policy, or came from elsewhere (a server's error, an audit record).
pub fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, |c| {
        (c.is_control() && c != '\n' && c != '\t') || unicode::is_bidi_control(c)
    })
}

/// A value that must be kept as given (an approval's arguments, a tool name) as shown to a
/// person: every control, direction, invisible or blank character other than the plain space
/// made visible as a `\u{..}` escape, so that what is read is what will run, never a rendering
/// of it. Emoji sequences lose their joiners here; that is the price of reading exactly.
pub fn visible(text: &str) -> Cow<'_, str> {
    escaped(text, |c| {
        c != ' '
            && (c.is_control()
                || unicode::is_bidi_control(c)
                || unicode::is_line_separator(c)
                || unicode::is_blank(c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_refuses_by_property() {
        use Lines::{Many, One};
        for (text, lines) in [
            ("\u{1b}[2J\u{1b}[H", Many),
            ("safe\rEVIL", One),
            ("a\u{0}b", Many),
            ("ding\u{7}", Many),
            ("next\u{85}line", Many),
            ("\u{202E}wolla", One),
            ("ls \u{2067}x\u{2069}", Many),
            ("\u{061C}x", One),
            ("\u{200F}x", One),
            ("a\u{2028}b", One),
            ("a\u{2029}b", One),
            ("two\nlines", One),
            ("tab\there", One),
            ("   ", One),
            ("\u{200B}\u{200B}", One),
            ("\u{3164}", One),
            ("\u{2800}\u{2800}", One),
            ("\u{00AD}", One),
            ("\u{115F}\u{1160}\u{FFA0}", One),
            ("\u{E0041}\u{E0042}", One),
            ("\u{3000}\u{FEFF}\u{180E}", Many),
            ("\n\n\t", Many),
        ] {
            assert!(refusal(text, lines).is_some(), "{text:?} {lines:?}");
        }
        for (text, lines) in [
            ("Ship 1.4?", One),
            ("line\nbreak", Many),
            ("tab\there", Many),
            ("para\u{2029}graph", Many),
            ("é 日本", One),
            ("שלום", One),
            ("❤\u{FE0F} 👨\u{200D}👩", One),
            ("soft\u{AD}hyphen", One),
            ("", One),
        ] {
            assert_eq!(refusal(text, lines), None, "{text:?}");
        }
    }

    #[test]
    fn kept_values_are_shown_escaped() {
        assert_eq!(printable("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\nc");
        assert_eq!(printable("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(printable("plain\ttext"), "plain\ttext");
        assert_eq!(
            visible("ls build/ \u{202E}~ fr- mr"),
            "ls build/ \\u{202e}~ fr- mr"
        );
        assert_eq!(
            visible("a\nb\u{3164}\u{200B}"),
            "a\\u{a}b\\u{3164}\\u{200b}"
        );
        assert_eq!(visible("rm -rf build"), "rm -rf build");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
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
