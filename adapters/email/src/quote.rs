//! A reply's own words: the text above what it quotes, and HTML turned into text.
//!
//! Mail clients quote in a handful of shapes: Gmail and Apple Mail write an attribution line
//! ("On Mon, 7 Dec 2026 at 10:00, Alice <alice@example.com> wrote:", sometimes wrapped over two
//! lines) then `>` lines; Outlook writes "-----Original Message-----" or a "From: … Sent: …"
//! header block, often under a line of underscores; signatures start with `-- `. Everything from
//! the first of these on is someone else's text (or the signature) and never part of the answer.

/// The reply's own text: everything above the first quote marker or signature, trimmed.
pub fn own_text(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| starts_quote(&lines, i))
        .unwrap_or(lines.len());
    lines[..end].join("\n").trim().to_owned()
}

fn starts_quote(lines: &[&str], i: usize) -> bool {
    let line = lines[i].trim_end_matches('\r');
    let trimmed = line.trim();
    if line.trim_start().starts_with('>') {
        return true;
    }
    // The signature separator is `-- ` (RFC 3676); some clients trim its space.
    if line == "-- " || line == "--" {
        return true;
    }
    if is_original_message(trimmed) || attribution(lines, i) || outlook_block(lines, i) {
        return true;
    }
    // Mobile clients' signatures ("Sent from my iPhone", "Get Outlook for Android").
    trimmed.starts_with("Sent from my ") || trimmed.starts_with("Get Outlook for ")
}

/// "-----Original Message-----" and its translations keep the dashes; so do forwards.
fn is_original_message(line: &str) -> bool {
    let core = line.trim_matches(|c: char| c == '-' || c.is_whitespace());
    line.starts_with("---")
        && [
            "original message",
            "forwarded message",
            "ursprüngliche nachricht",
            "message d'origine",
        ]
        .iter()
        .any(|m| core.eq_ignore_ascii_case(m))
}

/// "On … wrote:" (Gmail, Apple Mail, Thunderbird) and a few translations, on one line or wrapped
/// over the next one or two.
fn attribution(lines: &[&str], i: usize) -> bool {
    const OPENERS: [&str; 5] = ["On ", "Am ", "Le ", "El ", "Il "];
    const CLOSERS: [&str; 5] = [
        "wrote:",
        "schrieb:",
        "a écrit :",
        "escribió:",
        "ha scritto:",
    ];
    let line = lines[i].trim();
    if !OPENERS.iter().any(|o| line.starts_with(o)) {
        return false;
    }
    let mut joined = String::new();
    for next in lines.iter().skip(i).take(3) {
        joined.push_str(next.trim());
        if CLOSERS.iter().any(|c| joined.ends_with(c)) {
            return true;
        }
        joined.push(' ');
    }
    false
}

/// Outlook's header block: `From:` then, within the next lines, `Sent:` or `Date:` and `To:` or
/// `Subject:` (bold in HTML, plain in text; after a line of underscores or not).
fn outlook_block(lines: &[&str], i: usize) -> bool {
    let line = lines[i].trim().trim_matches('*');
    if line.starts_with("________") {
        return lines
            .get(i + 1)
            .is_some_and(|next| next.trim().trim_matches('*').starts_with("From:"));
    }
    if !line.starts_with("From:") {
        return false;
    }
    let next: Vec<&str> = lines
        .iter()
        .skip(i + 1)
        .take(4)
        .map(|l| l.trim().trim_matches('*'))
        .collect();
    next.iter()
        .any(|l| l.starts_with("Sent:") || l.starts_with("Date:"))
        && next
            .iter()
            .any(|l| l.starts_with("To:") || l.starts_with("Subject:"))
}

/// HTML as text for finding the answer: blockquotes (what the reply quotes) and `head`, `style`
/// and `script` dropped, block ends as line breaks, entities decoded.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    let mut skip_depth = 0usize;
    let mut skipping: Option<&'static str> = None;
    while let Some(start) = rest.find('<') {
        if skip_depth == 0 && skipping.is_none() {
            out.push_str(&decode_entities(&rest[..start]));
        }
        let after = &rest[start + 1..];
        let Some(end) = after.find('>') else {
            rest = "";
            break;
        };
        let tag = &after[..end];
        rest = &after[end + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if let Some(skipped) = skipping {
            if closing && name == skipped {
                skipping = None;
            }
            continue;
        }
        match name.as_str() {
            "head" | "style" | "script" | "title" if !closing => {
                skipping = Some(match name.as_str() {
                    "head" => "head",
                    "style" => "style",
                    "script" => "script",
                    _ => "title",
                });
            }
            "blockquote" if closing => skip_depth = skip_depth.saturating_sub(1),
            "blockquote" => skip_depth += 1,
            _ if skip_depth > 0 => {}
            "br" | "hr" => out.push('\n'),
            "p" | "div" | "li" | "tr" | "h1" | "h2" | "h3" | "h4" | "table" if closing => {
                out.push('\n')
            }
            "p" | "div" | "tr" | "table" if !out.ends_with('\n') && !out.is_empty() => {
                out.push('\n')
            }
            _ => {}
        }
    }
    if skip_depth == 0 && skipping.is_none() {
        out.push_str(&decode_entities(rest));
    }
    // Source line breaks inside a paragraph are spaces in HTML; the breaks we made are kept.
    out.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

fn decode_entities(text: &str) -> String {
    // Source newlines are whitespace in HTML.
    let text = text.replace(['\r', '\n'], " ");
    if !text.contains('&') {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let decoded = after.find(';').filter(|&n| n <= 10).and_then(|semi| {
            let entity = &after[..semi];
            let c = match entity {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some(' '),
                _ => entity
                    .strip_prefix("#x")
                    .or_else(|| entity.strip_prefix("#X"))
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            }?;
            Some((c, semi))
        });
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gmail_attribution_and_quote() {
        let text = "2\r\n\r\nOn Mon, Dec 7, 2026 at 10:00 AM askbridge <askbridge@example.com> wrote:\r\n> ❓ Which library?\r\n> 1. dayjs\r\n";
        assert_eq!(own_text(text), "2");
    }

    #[test]
    fn a_wrapped_attribution_line() {
        let text = "dayjs please\n\nOn Mon, Dec 7, 2026 at 10:00 AM askbridge <\naskbridge+k3f9x2m8qa.abc@example.com> wrote:\n\n> Which?";
        assert_eq!(own_text(text), "dayjs please");
    }

    #[test]
    fn apple_mail() {
        let text = "yes\n\nSent from my iPhone\n\n> On 7 Dec 2026, at 10:00, askbridge <askbridge@example.com> wrote:\n> \n> Deploy?";
        assert_eq!(own_text(text), "yes");
        let text = "no\n\n> On 7 Dec 2026, at 10:00, askbridge wrote:\n> Deploy?";
        assert_eq!(own_text(text), "no");
        let text = "Two lines\nof answer\n\nOn 7 Dec 2026, at 10:00, askbridge <a@b.c> wrote:\n\n> Deploy?";
        assert_eq!(own_text(text), "Two lines\nof answer");
    }

    #[test]
    fn outlook_blocks() {
        let text = "2\r\n\r\n________________________________\r\nFrom: askbridge <askbridge@example.com>\r\nSent: Monday, December 7, 2026 10:00 AM\r\nTo: Alice <alice@example.com>\r\nSubject: Which library?\r\n\r\nWhich library?";
        assert_eq!(own_text(text), "2");
        let text = "dayjs\n\nFrom: askbridge <askbridge@example.com>\nSent: Monday\nTo: Alice\nSubject: x\n\nold";
        assert_eq!(own_text(text), "dayjs");
        let text = "ok\n\n-----Original Message-----\nFrom: askbridge\nWhich?";
        assert_eq!(own_text(text), "ok");
        // A line starting with "From:" in the answer itself is not a header block.
        assert_eq!(own_text("From: the top, please"), "From: the top, please");
    }

    #[test]
    fn signatures_and_plain_quotes() {
        assert_eq!(own_text("2\n-- \nAlice\nACME"), "2");
        assert_eq!(own_text("yes\n--\nAlice"), "yes");
        assert_eq!(own_text("no\n> quoted\nafter"), "no");
        assert_eq!(own_text("  \n\n"), "");
        assert_eq!(
            own_text("Use dayjs.\nIt is smaller.\n\nOn Tue wrote:\n> x"),
            "Use dayjs.\nIt is smaller."
        );
        // "On" starting an answer is not an attribution without "wrote:".
        assert_eq!(own_text("On reflection, 2"), "On reflection, 2");
    }

    #[test]
    fn html_replies_become_text_without_their_quote() {
        let html = r#"<html><head><style>p{color:red}</style></head><body><div dir="ltr">2&nbsp;&amp; done</div><br><div class="gmail_quote"><div dir="ltr" class="gmail_attr">On Mon, Dec 7, 2026 at 10:00 AM askbridge &lt;<a href="mailto:askbridge@example.com">askbridge@example.com</a>&gt; wrote:<br></div><blockquote class="gmail_quote" style="margin:0"><div>❓ Which <b>library</b>?</div><blockquote>nested</blockquote>1. dayjs</blockquote></div></body></html>"#;
        let text = html_to_text(html);
        assert!(!text.contains("Which"), "{text}");
        assert!(!text.contains("color"), "{text}");
        assert_eq!(own_text(&text), "2 & done");
        let outlook = "<div>dayjs</div><hr><div><b>From:</b> askbridge<br><b>Sent:</b> Monday<br><b>To:</b> Alice<br><b>Subject:</b> x</div><div>old</div>";
        assert_eq!(own_text(&html_to_text(outlook)), "dayjs");
        assert_eq!(
            html_to_text("a &#233; &#x1F680; &bogus; &"),
            "a é 🚀 &bogus; &"
        );
    }
}
