//! The per-question reply address: `local+<id>.<tag>@domain`, where the tag is a truncated
//! HMAC-SHA256 of the question id under a secret, so a reply address cannot be made up for a
//! question one was not sent. A reply that came to such an address is about that question; a
//! mail to any other address never resolves anything.

use askbridge_core::secret::secrets_equal;
use askbridge_core::{QuestionId, Secret};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Hex digits of the tag: 64 bits, far beyond guessing by mail.
const TAG_HEX: usize = 16;

/// Makes and checks the signed reply addresses built on one base address.
#[derive(Clone, Debug)]
pub struct ReplyAddresses {
    local: String,
    domain: String,
    secret: Secret,
}

/// `EMAIL_REPLY_ADDRESS` is not an address, or already carries a `+` tag.
#[derive(Debug, thiserror::Error)]
#[error(
    "EMAIL_REPLY_ADDRESS `{0}` is not a plain address like askbridge@example.com (without a +tag)"
)]
pub struct BadReplyAddress(pub String);

impl ReplyAddresses {
    /// Reply addresses on `base` (`askbridge@example.com`), signed with `secret`.
    pub fn new(base: &str, secret: Secret) -> Result<Self, BadReplyAddress> {
        let bad = || BadReplyAddress(base.to_owned());
        let (local, domain) = split_address(base).ok_or_else(bad)?;
        if local.contains('+') || local.is_empty() || domain.is_empty() {
            return Err(bad());
        }
        Ok(ReplyAddresses {
            local: local.to_owned(),
            domain: domain.to_ascii_lowercase(),
            secret,
        })
    }

    /// The base address itself (where confirmations come from when no `EMAIL_FROM` is set).
    pub fn base(&self) -> String {
        format!("{}@{}", self.local, self.domain)
    }

    /// The domain of the reply addresses (also used for our `Message-ID`s).
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The reply address for question `id`.
    pub fn for_question(&self, id: &QuestionId) -> String {
        format!("{}+{}.{}@{}", self.local, id, self.tag(id), self.domain)
    }

    /// The question `address` is the signed reply address of, if it is one. The tag is compared
    /// in constant time; the base's local part and domain case-insensitively (some relays
    /// lower-case addresses).
    pub fn question_of(&self, address: &str) -> Option<QuestionId> {
        let (local, domain) = split_address(address.trim())?;
        if !domain.eq_ignore_ascii_case(&self.domain) {
            return None;
        }
        let (base, detail) = local.split_once('+')?;
        if !base.eq_ignore_ascii_case(&self.local) {
            return None;
        }
        let (id, tag) = detail.split_once('.')?;
        let id = QuestionId::parse(&id.to_ascii_lowercase()).ok()?;
        let expected = self.tag(&id);
        secrets_equal(tag.to_ascii_lowercase().as_bytes(), expected.as_bytes()).then_some(id)
    }

    fn tag(&self, id: &QuestionId) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(self.secret.expose().as_bytes())
            .expect("HMAC takes a key of any length");
        mac.update(b"askbridge-email-reply:");
        mac.update(id.as_str().as_bytes());
        let digest = mac.finalize().into_bytes();
        let mut hex = String::with_capacity(TAG_HEX);
        for byte in digest.iter().take(TAG_HEX / 2) {
            hex.push_str(&format!("{byte:02x}"));
        }
        hex
    }
}

/// `local@domain` split at the last `@`.
pub(crate) fn split_address(address: &str) -> Option<(&str, &str)> {
    let (local, domain) = address.rsplit_once('@')?;
    (!local.is_empty() && !domain.is_empty() && !domain.contains(char::is_whitespace))
        .then_some((local, domain))
}

/// An address as askbridge names its owner: the domain lower-cased, the local part as given.
pub fn canonical(address: &str) -> Option<String> {
    let (local, domain) = split_address(address.trim())?;
    Some(format!("{local}@{}", domain.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addresses() -> ReplyAddresses {
        ReplyAddresses::new("askbridge@Example.com", Secret::new("s3cret")).unwrap()
    }

    #[test]
    fn a_reply_address_names_its_question_and_only_with_the_right_tag() {
        let addresses = addresses();
        let id = QuestionId::parse("k3f9x2m8qa").unwrap();
        let address = addresses.for_question(&id);
        assert!(address.starts_with("askbridge+k3f9x2m8qa."), "{address}");
        assert!(address.ends_with("@example.com"), "{address}");
        assert_eq!(addresses.question_of(&address), Some(id.clone()));
        assert_eq!(
            addresses.question_of(&address.to_uppercase()),
            Some(id.clone())
        );
        // Another question's id with this tag, a changed tag, another secret, another domain.
        let other = QuestionId::parse("k3f9x2m8qb").unwrap();
        let forged = address.replace("k3f9x2m8qa", "k3f9x2m8qb");
        assert_eq!(addresses.question_of(&forged), None);
        let (head, _) = address.rsplit_once('.').unwrap();
        assert_eq!(
            addresses.question_of(&format!("{head}.0000000000000000@example.com")),
            None
        );
        let elsewhere = ReplyAddresses::new("askbridge@example.com", Secret::new("other")).unwrap();
        assert_eq!(elsewhere.question_of(&address), None);
        assert_ne!(
            elsewhere.for_question(&other),
            addresses.for_question(&other)
        );
        assert_eq!(
            addresses.question_of(&address.replace("example.com", "example.org")),
            None
        );
        assert_eq!(addresses.question_of("askbridge@example.com"), None);
        assert_eq!(
            addresses.question_of("askbridge+k3f9x2m8qa@example.com"),
            None
        );
    }

    #[test]
    fn the_base_must_be_a_plain_address() {
        assert!(ReplyAddresses::new("askbridge", Secret::new("s")).is_err());
        assert!(ReplyAddresses::new("a+b@example.com", Secret::new("s")).is_err());
        assert_eq!(
            canonical(" Alice@Example.COM "),
            Some("Alice@example.com".into())
        );
    }
}
