//! Signing what askbridge sends to other people's HTTP endpoints (flow endpoints, callbacks).
//!
//! The header is `X-Askbridge-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` over
//! `<t>.<body>` with `ASKBRIDGE_FLOW_SECRET`, the scheme Stripe and others use: the timestamp
//! inside the signed text lets receivers refuse replays, and [`verify`] is what a Rust receiver
//! calls (the README shows the same check in Python).

use askbridge_core::Millis;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::time::Duration;

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "x-askbridge-signature";
/// How old a signature a receiver should accept, by default.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

fn mac(secret: &[u8], timestamp: u64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The header value signing `body` at `now`.
pub fn sign(secret: &[u8], now: Millis, body: &[u8]) -> String {
    let timestamp = now.0 / 1000;
    let digest = mac(secret, timestamp, body).finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={timestamp},v1={hex}")
}

/// Why a signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The header is missing or not `t=...,v1=...`.
    Malformed,
    /// The timestamp is further than the tolerance from now.
    Stale,
    /// The HMAC does not match.
    Mismatch,
}

/// Checks `header` against `body`: well-formed, fresh within `tolerance`, and matching (compared
/// in constant time by the HMAC library).
pub fn verify(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: Millis,
    tolerance: Duration,
) -> Result<(), Refusal> {
    let mut timestamp = None;
    let mut signature = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<u64>().ok(),
            Some(("v1", value)) => signature = decode_hex(value),
            _ => {}
        }
    }
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
        return Err(Refusal::Malformed);
    };
    if (now.0 / 1000).abs_diff(timestamp) > tolerance.as_secs() {
        return Err(Refusal::Stale);
    }
    mac(secret, timestamp, body)
        .verify_slice(&signature)
        .map_err(|_| Refusal::Mismatch)
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_and_refuse() {
        let now = Millis(1_796_206_902_123);
        let header = sign(b"s3cret", now, b"{\"a\":1}");
        assert!(header.starts_with("t=1796206902,v1="));
        assert_eq!(
            verify(b"s3cret", &header, b"{\"a\":1}", now, DEFAULT_TOLERANCE),
            Ok(())
        );
        assert_eq!(
            verify(b"other", &header, b"{\"a\":1}", now, DEFAULT_TOLERANCE),
            Err(Refusal::Mismatch)
        );
        assert_eq!(
            verify(b"s3cret", &header, b"{\"a\":2}", now, DEFAULT_TOLERANCE),
            Err(Refusal::Mismatch)
        );
        let later = now.after(Duration::from_secs(301));
        assert_eq!(
            verify(b"s3cret", &header, b"{\"a\":1}", later, DEFAULT_TOLERANCE),
            Err(Refusal::Stale)
        );
        assert_eq!(
            verify(b"s3cret", "garbage", b"", now, DEFAULT_TOLERANCE),
            Err(Refusal::Malformed)
        );
    }

    #[test]
    fn a_known_vector() {
        // HMAC-SHA256("key", "0.body"), computed independently with Python's hmac module.
        let header = sign(b"key", Millis(0), b"body");
        assert_eq!(
            header,
            "t=0,v1=e0af04d5c83b24373ff89f540d0c8fd9a4e097e2b3ee8318ab5541047697626d"
        );
    }
}
