//! Properties of the code's shape that behaviour tests do not show: a tap reads its question
//! once, a corrupt record ends a run instead of being replayed for ever, no module imports form a
//! cycle, `src/` imports only down its layers ([`LAYERS`], the Layout section of `src/lib.rs`),
//! and core and the adapters depend on no other crate of the workspace.
//!
//! By part: `records` (a tap reads its question once, a corrupt record fails its run), `layers`
//! (import cycles, layering, the workspace's crate dependencies) and `parts` (the bridge's parts
//! and its facade).

use crate::support::{RedisServer, eventually_some, http, redis_store_with, serve_api};
use crate::telegram::{GROUP, alice, ask_body, setup_over};
use askbridge::BridgeOptions;
use askbridge::Flows;
use askbridge::bridge::Bridge;
use askbridge::store::memory::MemoryStore;
use askbridge::store::{
    ClaimOptions, Claimed, Counts, Inserted, ListFilter, Questions, Result, Runs, StoreOptions,
};
use askbridge_core::run::{Run, RunState};
use askbridge_core::{Claim, Millis, NewQuestion, Question, QuestionId};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod layers;
mod parts;
mod records;
