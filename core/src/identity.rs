//! Identities and targets: `<surface>:<address>` strings.
//!
//! A person is `telegram:42` or `discord:1234` (the platform's user id), and a place a question is
//! shown is `telegram:-1001234` or `discord:5678` (a chat or channel id). The console and the HTTP
//! API are single places and single identities, `console` and `api`. Plain strings keep the JSON
//! readable and let new surfaces appear without a change here.

/// The HTTP API, as an identity and as a surface that reaches every question.
pub const API: &str = "api";
/// The terminal of the process running askbridge.
pub const CONSOLE: &str = "console";

/// True for `console`, `api`, or `<surface>:<address>` with a lower-case surface name and an
/// address of letters, digits and `-_.@`.
pub fn is_well_formed(text: &str) -> bool {
    if text == API || text == CONSOLE {
        return true;
    }
    let Some((surface, address)) = text.split_once(':') else {
        return false;
    };
    let surface_ok = surface.starts_with(|c: char| c.is_ascii_lowercase())
        && surface
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let address_ok = !address.is_empty()
        && address.len() <= 64
        && address
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
    surface_ok && address_ok
}

/// The surface part: `telegram` for `telegram:42`, `console` for `console`.
pub fn surface_of(text: &str) -> &str {
    text.split_once(':').map_or(text, |(surface, _)| surface)
}

/// The address part: `42` for `telegram:42`, `None` for `console`.
pub fn address_of(text: &str) -> Option<&str> {
    text.split_once(':').map(|(_, address)| address)
}

/// `<surface>:<address>`.
pub fn compose(surface: &str, address: impl std::fmt::Display) -> String {
    format!("{surface}:{address}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_identities_and_targets() {
        for good in [
            "api",
            "console",
            "telegram:42",
            "telegram:-1001234",
            "discord:1234",
            "web:ops@x",
        ] {
            assert!(is_well_formed(good), "{good}");
        }
        for bad in [
            "",
            "Telegram:1",
            "telegram:",
            ":1",
            "telegram 1",
            "telegram:a b",
            "nobody",
        ] {
            assert!(!is_well_formed(bad), "{bad}");
        }
        assert_eq!(surface_of("telegram:42"), "telegram");
        assert_eq!(surface_of("console"), "console");
        assert_eq!(address_of("discord:9"), Some("9"));
        assert_eq!(compose("telegram", -5), "telegram:-5");
    }
}
