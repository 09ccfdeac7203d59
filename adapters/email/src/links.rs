//! One-click answer links, when askbridge has a public URL (`ASKBRIDGE_PUBLIC_URL`).
//!
//! Each choice in a question's HTML mail links to a confirmation page on askbridge:
//! `<public>/email/answer?q=<id>&c=<n>&to=<recipient>&until=<ms>&sig=<mac>`. The MAC (HMAC-SHA256
//! under a key derived from `EMAIL_SECRET`) covers the question, the choice, the recipient and
//! the expiry, so a link cannot be made for another question, choice or person, nor kept past the
//! question's deadline. Opening the link changes nothing: link scanners (Outlook Safe Links,
//! Mimecast, chat previews) fetch every link in a mail, so only the page's POST button answers,
//! and that POST carries a second MAC (the CSRF token) that only the page shows. A link answers
//! once: after the answer the question is resolved, and the page says so.

use askbridge_core::secret::secrets_equal;
use askbridge_core::{Millis, QuestionId, Secret};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Where the confirmation page is served.
pub const PAGE_PATH: &str = "/email/answer";
/// Hex digits of a link's MAC and of its CSRF token: 128 bits.
const MAC_HEX: usize = 32;

/// A link as it came back: what it claims, and its MAC.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct Link {
    /// The question.
    pub q: String,
    /// The choice: its place among the mail's links (see `compose`).
    pub c: usize,
    /// The recipient the link was mailed to.
    pub to: String,
    /// The link's expiry, in milliseconds since the epoch (the question's deadline).
    pub until: u64,
    /// The MAC over the four above.
    pub sig: String,
}

/// Why a link is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// Its MAC does not match what it claims: changed, or made up.
    #[error("this link is not valid: it may have been changed or cut short")]
    Tampered,
    /// Past its expiry.
    #[error("this link has expired")]
    Expired,
}

/// `ASKBRIDGE_PUBLIC_URL` is not an `http(s)://host[:port][/path]` URL.
#[derive(Debug, thiserror::Error)]
#[error("ASKBRIDGE_PUBLIC_URL `{0}` is not a URL like https://askbridge.example.com")]
pub struct BadPublicUrl(pub String);

/// Makes and checks one-click links.
#[derive(Clone)]
pub struct OneClick {
    /// `<public URL>/email/answer`.
    page: String,
    /// `scheme://host[:port]` of the public URL: the `Origin` a browser sends with the POST.
    origin: String,
    key: Secret,
}

impl std::fmt::Debug for OneClick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneClick")
            .field("page", &self.page)
            .finish_non_exhaustive()
    }
}

impl OneClick {
    /// Links to the page under `public_url`, signed with a key derived from `secret` (so that a
    /// link's MAC and a reply address's tag never share a key).
    pub fn new(public_url: &str, secret: &Secret) -> Result<Self, BadPublicUrl> {
        let bad = || BadPublicUrl(public_url.to_owned());
        let base = public_url.trim().trim_end_matches('/');
        let (scheme, rest) = base.split_once("://").ok_or_else(bad)?;
        let authority = rest.split('/').next().unwrap_or_default();
        let valid_authority = !authority.is_empty()
            && !authority.contains(['@', '?', '#', ' '])
            && authority.is_ascii();
        if !matches!(scheme, "http" | "https") || !valid_authority || rest.contains(['?', '#']) {
            return Err(bad());
        }
        let key = mac_hex(secret.expose().as_bytes(), &[b"askbridge-email-links"], 64);
        Ok(OneClick {
            page: format!("{base}{PAGE_PATH}"),
            origin: format!("{scheme}://{}", authority.to_ascii_lowercase()),
            key: Secret::new(key),
        })
    }

    /// The origin a browser names when it posts the page's form.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The link answering `question` with choice `choice`, for `to`, valid until `until`.
    pub fn href(&self, question: &QuestionId, choice: usize, to: &str, until: Millis) -> String {
        let link = Link {
            q: question.to_string(),
            c: choice,
            to: to.to_owned(),
            until: until.0,
            sig: String::new(),
        };
        format!(
            "{}?q={}&c={}&to={}&until={}&sig={}",
            self.page,
            link.q,
            link.c,
            percent_encode(&link.to),
            link.until,
            self.mac(b"link", &link)
        )
    }

    /// Checks `link`'s MAC (in constant time), then its expiry.
    pub fn verify(&self, link: &Link, now: Millis) -> Result<(), Refused> {
        let expected = self.mac(b"link", link);
        if !secrets_equal(
            link.sig.to_ascii_lowercase().as_bytes(),
            expected.as_bytes(),
        ) {
            return Err(Refused::Tampered);
        }
        if now.0 >= link.until {
            return Err(Refused::Expired);
        }
        Ok(())
    }

    /// The CSRF token the page's form carries for `link` (only someone who saw the page has it).
    pub fn csrf(&self, link: &Link) -> String {
        self.mac(b"csrf", link)
    }

    /// True when `presented` is `link`'s CSRF token (compared in constant time).
    pub fn csrf_ok(&self, link: &Link, presented: &str) -> bool {
        secrets_equal(presented.as_bytes(), self.csrf(link).as_bytes())
    }

    fn mac(&self, purpose: &[u8], link: &Link) -> String {
        let choice = link.c.to_string();
        let until = link.until.to_string();
        let fields: [&[u8]; 5] = [
            purpose,
            link.q.as_bytes(),
            choice.as_bytes(),
            link.to.as_bytes(),
            until.as_bytes(),
        ];
        mac_hex(self.key.expose().as_bytes(), &fields, MAC_HEX)
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters (for link and `mailto:` fields).
pub(crate) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// HMAC-SHA256 of `fields` (each followed by a NUL, so no two field lists sign alike) under
/// `key`, as `digits` lower-case hex digits.
fn mac_hex(key: &[u8], fields: &[&[u8]], digits: usize) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    for field in fields {
        mac.update(field);
        mac.update(&[0]);
    }
    mac.finalize()
        .into_bytes()
        .iter()
        .take(digits / 2)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links() -> OneClick {
        OneClick::new("https://Bridge.example.com/base/", &Secret::new("s3cret")).unwrap()
    }

    fn parse(href: &str) -> Link {
        let query = href.split_once('?').unwrap().1;
        serde_urlencoded::from_str(query).unwrap()
    }

    #[test]
    fn a_link_verifies_until_its_expiry_and_not_after() {
        let id = QuestionId::parse("k3f9x2m8qa").unwrap();
        let href = links().href(&id, 2, "alice+x@example.com", Millis(5_000));
        assert!(
            href.starts_with("https://Bridge.example.com/base/email/answer?q=k3f9x2m8qa&c=2&to=alice%2Bx%40example.com&until=5000&sig="),
            "{href}"
        );
        let link = parse(&href);
        assert_eq!(link.to, "alice+x@example.com");
        assert_eq!(links().verify(&link, Millis(4_999)), Ok(()));
        assert_eq!(links().verify(&link, Millis(5_000)), Err(Refused::Expired));
        assert_eq!(links().origin(), "https://bridge.example.com");
    }

    #[test]
    fn every_field_is_signed() {
        let id = QuestionId::parse("k3f9x2m8qa").unwrap();
        let link = parse(&links().href(&id, 2, "alice@example.com", Millis(5_000)));
        let changed = [
            Link {
                q: "k3f9x2m8qb".into(),
                ..link.clone()
            },
            Link {
                c: 1,
                ..link.clone()
            },
            Link {
                to: "mallory@example.com".into(),
                ..link.clone()
            },
            Link {
                until: 9_000,
                ..link.clone()
            },
            Link {
                sig: link.sig[..31].to_owned(),
                ..link.clone()
            },
        ];
        for link in changed {
            assert_eq!(links().verify(&link, Millis(0)), Err(Refused::Tampered));
        }
        let other_key = OneClick::new("https://bridge.example.com", &Secret::new("other")).unwrap();
        assert_eq!(other_key.verify(&link, Millis(0)), Err(Refused::Tampered));
    }

    #[test]
    fn the_csrf_token_is_the_links_own_and_differs_from_its_mac() {
        let id = QuestionId::parse("k3f9x2m8qa").unwrap();
        let link = parse(&links().href(&id, 0, "alice@example.com", Millis(5_000)));
        let token = links().csrf(&link);
        assert_ne!(token, link.sig);
        assert!(links().csrf_ok(&link, &token));
        assert!(!links().csrf_ok(&link, &link.sig));
        let other = Link { c: 1, ..link };
        assert!(!links().csrf_ok(&other, &token));
    }

    #[test]
    fn only_http_urls_make_links() {
        for bad in [
            "bridge.example.com",
            "ftp://bridge.example.com",
            "https://",
            "https://user@bridge.example.com",
            "https://bridge.example.com/?x=1",
        ] {
            assert!(OneClick::new(bad, &Secret::new("s")).is_err(), "{bad}");
        }
    }
}
