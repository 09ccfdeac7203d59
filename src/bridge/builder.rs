//! Wiring a bridge before anything runs.
//!
//! A bridge's channels and its run engine are fixed when it starts: start-up recovery shows
//! pending questions on the channels and resumes runs answered while no process ran them, so
//! both must be there first. Attaching them to a live bridge made that an ordering rule callers
//! had to know (and a CI failure found a test that broke it); the builder makes it the only way.

use super::{Bridge, BridgeOptions, Runner};
use crate::Error;
use crate::store::{Questions, Store};
use askbridge_core::Channel;
use std::collections::HashMap;
use std::sync::Arc;

/// Collects what a [`Bridge`] is made of; [`BridgeBuilder::start`] makes it and starts it.
///
/// ```no_run
/// # async fn example() -> Result<(), askbridge::Error> {
/// use askbridge::store::memory::MemoryStore;
/// use askbridge::{Bridge, BridgeOptions};
/// use std::sync::Arc;
///
/// let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
///     .options(BridgeOptions::default())
///     .channel(Arc::new(askbridge::console::Console::stdout()))
///     .start()
///     .await?;
/// # let _ = bridge; Ok(()) }
/// ```
#[must_use = "a builder does nothing until `start` is called"]
pub struct BridgeBuilder {
    parts: Parts,
}

/// What the builder collected, handed to the bridge whole.
pub(super) struct Parts {
    pub(super) store: Arc<dyn Store>,
    pub(super) options: BridgeOptions,
    pub(super) channels: HashMap<String, Arc<dyn Channel>>,
    pub(super) runner: Option<Arc<dyn Runner>>,
    /// The questions role every part uses: the store's own unless replaced.
    pub(super) questions: Option<Arc<dyn Questions>>,
}

impl std::fmt::Debug for BridgeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut surfaces: Vec<&String> = self.parts.channels.keys().collect();
        surfaces.sort();
        f.debug_struct("BridgeBuilder")
            .field("store", &self.parts.store.describe())
            .field("channels", &surfaces)
            .field("runner", &self.parts.runner.is_some())
            .finish()
    }
}

impl BridgeBuilder {
    pub(super) fn new(store: Arc<dyn Store>) -> Self {
        BridgeBuilder {
            parts: Parts {
                store,
                options: BridgeOptions::default(),
                channels: HashMap::new(),
                runner: None,
                questions: None,
            },
        }
    }

    /// The bridge's settings ([`BridgeOptions::default`] unless given).
    pub fn options(mut self, options: BridgeOptions) -> Self {
        self.parts.options = options;
        self
    }

    /// Adds a channel: questions targeted at its surface are shown through it. A second channel
    /// of the same surface replaces the first.
    pub fn channel(mut self, channel: Arc<dyn Channel>) -> Self {
        let surface = channel.surface().to_owned();
        tracing::info!(surface, "channel added");
        self.parts.channels.insert(surface, channel);
        self
    }

    /// The engine that runs follow-up runs (see [`Runner`]); the flows of `crate::flows`.
    pub fn runner(mut self, runner: Arc<dyn Runner>) -> Self {
        self.parts.runner = Some(runner);
        self
    }

    /// Replaces the questions role every part of the bridge uses (reading, listing, inserting and
    /// claiming questions) with `questions`, which should wrap the store's own: a decorator that
    /// traces or counts calls, say. The other roles stay the store's, and a claim's atomicity is
    /// still the store's, so a replacement that stores questions elsewhere is not what this is for.
    pub fn questions(mut self, questions: Arc<dyn Questions>) -> Self {
        self.parts.questions = Some(questions);
        self
    }

    /// Makes the bridge and starts it: in the background, recovers what an earlier process left
    /// (open questions, runs answered while none ran), then runs the sweeper and the event pump
    /// until [`Bridge::shutdown`]. It returns before recovery is done: a process with many open
    /// questions serves at once.
    pub async fn start(self) -> Result<Bridge, Error> {
        let bridge = Bridge::from_parts(self.parts);
        bridge.run_background().await?;
        Ok(bridge)
    }
}
