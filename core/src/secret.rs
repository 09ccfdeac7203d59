//! Comparing secrets (API tokens, webhook secrets) without leaking them through timing.
//!
//! Both sides are hashed with SHA-256 first, so the comparison always runs over 32 bytes: neither
//! where the first difference is nor the secret's length shows in how long it takes.

use sha2::{Digest, Sha256};

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
    }
}
