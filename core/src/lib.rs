//! The model of askbridge, with no network code.
//!
//! A running function asks a person something; the question is shown on chat surfaces; the first
//! valid answer from any surface wins. This crate holds what that means, independent of where
//! questions are stored and how they travel, so that the stores, the HTTP API and every chat
//! adapter agree on it.
//!
//! # Layout
//!
//! From the leaves up (a module only imports modules above it in this list):
//!
//! - [`error`], [`text`], [`limits`], [`value`], [`time`], [`secret`]: the model's error, text
//!   helpers and the one text policy every string people read follows, the lengths of those
//!   texts, answer values, wall-clock instants, secrets and their constant-time comparison.
//! - [`id`], [`identity`]: typed ids (questions, runs, rules) and `<surface>:<address>` names of
//!   people ([`Identity`]) and places ([`Target`]).
//! - [`actor`]: who decides an outcome: a person or program, a rule, or the deadline.
//! - [`approval`]: actions to approve, their digests, approval replies and "always allow" rules.
//! - [`actions`]: a batch's actions and their decisions as records (the question holds them).
//! - [`batch`]: several actions in one approval: each decided as the single approval it stands
//!   for, the first decision per action winning, resolved when every action is decided.
//! - [`form`]: a form's flat schema (as MCP elicitation has it), its fields read from replies and
//!   checked, and a person's draft while filling one in chat.
//! - [`decision`]: the decisions an approval offers (once, always, edit, reject, respond), and
//!   the rules of edited arguments (a flat schema, or the proposed types).
//! - [`nudge`]: reminders and escalation steps, and when each falls due.
//! - [`resolution`]: how a question left `pending`; [`quorum`]: M of N people must agree, and
//!   their votes.
//! - [`question`]: the question, its outcomes, and [`Question::apply`], the claim-once state
//!   machine every store runs.
//! - [`answer`]: which answers fit which question, read from typed text or from program values
//!   (an approval's reply, a decision, in `answer/approval.rs`; whether a question offers a
//!   decision and takes an edit, in `answer/edit.rs`).
//! - `checks`, [`request`]: [`NewQuestion`], a request to ask, and the checks that make it a
//!   question.
//! - [`tally`]: which answers are votes, the vote state machine, the claim a met quorum makes.
//! - [`audit`]: the records of who resolved what; [`run`]: follow-up runs and their journals.
//! - [`command`]: the command grammar (`/answer <id> <choice>`, `/decline`, `/pending` ...) shared by
//!   typed text and button payloads, with its lists of option numbers (`1-3,5`, `numbers.rs`).
//! - [`render`]: the words and buttons every surface shows.
//! - [`channel`]: the traits between the bridge and chat adapters.

pub mod actions;
pub mod actor;
pub mod answer;
pub mod approval;
pub mod audit;
pub mod batch;
pub mod button;
pub mod channel;
mod checks;
pub mod command;
pub mod decision;
pub mod error;
pub mod fill;
pub mod form;
pub mod id;
pub mod identity;
pub mod limits;
pub mod nudge;
mod numbers;
pub mod question;
pub mod quorum;
pub mod render;
pub mod request;
pub mod resolution;
pub mod run;
pub mod secret;
pub mod tally;
pub mod text;
pub mod time;
pub mod value;

pub use actor::{Actor, Decider};
pub use approval::{Action, Approval, ApprovalReply, Rule, Scope};
pub use channel::{Channel, Inbound, Inbox, Prepared, Reply, ReplyTo, Tone};
pub use decision::Decision;
pub use error::Error;
pub use id::{IdRef, QuestionId, RuleId, RunId};
pub use identity::{Identity, Target};
pub use question::{Claim, ClaimOutcome, Kind, Question, Resolution, Status, Transition};
pub use request::NewQuestion;
pub use secret::Secret;
pub use time::Millis;
pub use value::Answer;
