//! Fake chat platforms on loopback, for the adapters' tests.

pub mod discord;
