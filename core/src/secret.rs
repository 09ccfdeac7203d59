//! Secrets (API tokens, webhook secrets, passwords in URLs): a type that never prints them, and a
//! comparison that does not leak them through timing.
//!
//! [`Secret`] lives in the model crate so that every part (stores, the bridge, HTTP, adapters)
//! can hold one without depending on the settings module.
//!
//! Both sides are hashed with SHA-256 first, so the comparison always runs over 32 bytes: neither
//! where the first difference is nor the secret's length shows in how long it takes.

use sha2::{Digest, Sha256};

/// A secret value. Its `Debug` prints `Secret(***)`, so it can sit in any struct that is logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself; call only where it is used, never to log.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when `presented` is this secret, compared in constant time.
    pub fn matches(&self, presented: &[u8]) -> bool {
        secrets_equal(presented, self.0.as_bytes())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// True when `presented` equals `expected`, in time independent of both.
pub fn secrets_equal(presented: &[u8], expected: &[u8]) -> bool {
    let (a, b) = (Sha256::digest(presented), Sha256::digest(expected));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_and_unequal_secrets() {
        assert!(secrets_equal(b"s3cret", b"s3cret"));
        assert!(!secrets_equal(b"s3cret", b"s3creT"));
        assert!(!secrets_equal(b"s3cret", b"s3cret-longer"));
        assert!(!secrets_equal(b"", b"x"));
        let secret = Secret::new("s3cret");
        assert!(secret.matches(b"s3cret"));
        assert_eq!(format!("{secret:?}"), "Secret(***)");
    }
}
