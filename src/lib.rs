//! askbridge: let a running function stop and ask a person a question on the chat channels they
//! already use, then go on with the answer.
//!
//! A function asks through a [`Session`] (`ask`, `confirm`, `can_ask`) or over the HTTP API; the
//! [`Bridge`] registers the question in a [`store::Store`], shows it on every target's channel
//! (console, Telegram, Discord), and the first valid answer from any surface wins. Buttons carry
//! plain-text commands (`/answer <id> <choice>`), so typing and tapping are the same act.
//!
//! # Layout
//!
//! - [`core`] (the `askbridge-core` crate, re-exported): questions, outcomes, the claim-once state
//!   machine, the command grammar and the channel traits. No network code; the chat adapters
//!   under `adapters/` depend on it alone.
//! - [`store`]: the store trait and its memory, embedded (redb) and Redis implementations.
//! - [`bridge`]: the registry (create, resolve, wait, cancel), showing and withdrawing questions,
//!   expiry, and what chat messages do.
//! - [`flows`]: follow-up runs: functions started from a chat that wait for people without
//!   holding a task.
//! - [`http`]: the HTTP API and event stream (axum); [`signing`]: signatures on what askbridge
//!   POSTs to other endpoints.
//! - [`console`]: the terminal as a plain-text surface.
//! - [`config`]: settings from the environment; [`runtime`]: wiring them into a running server.
//! - [`metrics`]: Prometheus counters.

pub use askbridge_core as core;

pub mod bridge;
pub mod config;
pub mod console;
pub mod demo;
mod error;
pub mod flows;
pub mod http;
pub mod metrics;
pub mod runtime;
pub mod signing;
pub mod store;

pub use bridge::{Bridge, BridgeOptions, Session};
pub use error::{AskError, Error, NoAnswer};
pub use flows::{FlowsExt, Interrupt};
