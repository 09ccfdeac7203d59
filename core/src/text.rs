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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening_counts_characters_not_bytes() {
        assert_eq!(shorten("héllo", 5), "héllo");
        assert_eq!(shorten("héllo wörld", 6), "héllo…");
        assert_eq!(lowercase_first("Answered: x"), "answered: x");
        assert_eq!(first_line("a\nb"), "a");
        assert_eq!(first_line(""), "");
    }
}
