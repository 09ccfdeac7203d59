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
//! The parts, from the bottom up. A part may import every part of the layers below its own, and
//! the other parts of its own layer only where the layer says so; never a part above it.
//! `tests/it/architecture/layers.rs` holds the code to this table (its `LAYERS`, the same layers
//! and parts) and fails on an import that goes up.
//!
//! 1. **core**: [`core`] (the `askbridge-core` crate, re-exported): questions, outcomes, the
//!    claim-once state machine, typed ids and identities, approvals, the command grammar,
//!    rendering, secrets and the channel traits. It imports nothing of the workspace and has no
//!    network code; the chat adapters under `adapters/` depend on it alone.
//! 2. **store**: [`store`]: thirteen small role traits (questions, votes, drafts, deliveries,
//!    outbox, dedupe, runs, leases, rules, audit, events, listings, admin), the store's own
//!    error, pages of listings, and the memory, embedded (redb) and Redis implementations, each
//!    in its own file or folder.
//! 3. **leaves**: [`egress`] (where callback URLs may point: public addresses unless allowed,
//!    checked when a question is created and again when the callback connects), [`signing`]
//!    (signatures on what askbridge POSTs to other endpoints), [`metrics`] (Prometheus counters)
//!    and `error` ([`Error`], [`NoAnswer`], [`AskError`]). They import core and the store's
//!    types, and do not import one another.
//! 4. **bridge**: [`bridge`]: a facade of one-line calls over parts that own their work, each
//!    holding only the store roles it uses: the registry (create, read, wait, cancel), the one
//!    reply path (`resolve/`: check once, claim once, audit refusals in one place), effects
//!    (showing and withdrawing questions, the sweeper, reminders), approvals, the inbox (what
//!    chat messages do) and runs; and the [`bridge::Runner`] seam flows plug into.
//! 5. **flows**: [`flows`]: follow-up runs: functions started from a chat that wait for people
//!    without holding a task; they register with the bridge as its runner.
//! 6. **leader**: [`leader`]: leader leases, so that of several replicas one holds a chat
//!    platform's long poll or gateway; it uses the bridge and the store's leases.
//! 7. **surfaces**, whose parts may import one another: [`http`] (the HTTP API, event stream,
//!    `/mcp` and the ops page, behind guards for Host, Origin and content type), [`mcp`] (the MCP
//!    server's tools, over this process's bridge or a running askbridge's HTTP API), [`client`]
//!    (a client of a running askbridge's HTTP API, which the shell commands and the stdio MCP
//!    server use), [`console`] (the terminal as a plain-text surface) and [`demo`] (the examples
//!    `askbridge demo` runs).
//! 8. **binary**, whose parts may import one another: [`config`] (settings from the environment,
//!    read once), [`runtime`] (wiring them into a running server), [`server`] (the accept loop
//!    with its timeouts, connection cap and bounded shutdown), and `cli` with `main.rs` (the
//!    `askbridge` command, a crate of its own over this one).
//!
//! Errors: [`Error`] is a failure; [`NoAnswer`] is an outcome (declined, timed out, cancelled);
//! [`AskError`] is either, for `Session::ask`; a flow's [`Interrupt`] adds suspension, which is
//! control flow, not a failure; the store's [`store::Error`] says whether it was unavailable or met
//! a corrupt record.

pub use askbridge_core as core;

pub mod bridge;
pub mod client;
pub mod config;
pub mod console;
pub mod demo;
pub mod egress;
mod error;
pub mod flows;
pub mod http;
pub mod leader;
pub mod mcp;
pub mod metrics;
pub mod runtime;
pub mod server;
pub mod signing;
pub mod store;

pub use bridge::{Bridge, BridgeBuilder, BridgeOptions, Session};
pub use error::{AskError, Error, NoAnswer};
pub use flows::{Flows, Interrupt};
