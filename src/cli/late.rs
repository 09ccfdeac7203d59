//! A channel whose platform connects after the bridge starts.
//!
//! The bridge's channels are fixed when it is built, but Telegram's long-poll mode connects in
//! the background (an outage at start-up delays Telegram, not askbridge). Its channel is this
//! stand-in from the start: until the connection is made it answers every call with a retryable
//! delivery error, so questions are stored and shown once Telegram is reachable, exactly as a
//! platform outage later on would be handled.

use askbridge_core::{Channel, Error, Identity, Question, Target};
use async_trait::async_trait;
use std::sync::{Arc, OnceLock};

/// See the module documentation.
pub(crate) struct LateChannel {
    surface: &'static str,
    channel: OnceLock<Arc<dyn Channel>>,
}

impl LateChannel {
    /// A stand-in for `surface`'s channel, not connected yet.
    pub(crate) fn new(surface: &'static str) -> Self {
        LateChannel {
            surface,
            channel: OnceLock::new(),
        }
    }

    /// The connection is made: calls go to `channel` from now on.
    pub(crate) fn arrive(&self, channel: Arc<dyn Channel>) {
        if self.channel.set(channel).is_err() {
            tracing::warn!(
                surface = self.surface,
                "channel connected twice; keeping the first"
            );
        }
    }

    fn connected(&self) -> Result<&Arc<dyn Channel>, Error> {
        self.channel.get().ok_or_else(|| {
            Error::retryable(self.surface, "not connected yet; askbridge keeps trying")
        })
    }
}

#[async_trait]
impl Channel for LateChannel {
    fn surface(&self) -> &str {
        self.surface
    }

    async fn show(&self, question: &Question, target: &Target) -> Result<String, Error> {
        self.connected()?.show(question, target).await
    }

    async fn withdraw(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), Error> {
        self.connected()?.withdraw(question, target, shown).await
    }

    async fn say(&self, target: &Target, text: &str) -> Result<(), Error> {
        self.connected()?.say(target, text).await
    }

    async fn refresh(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), Error> {
        self.connected()?.refresh(question, target, shown).await
    }

    async fn remind(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
        text: &str,
        mention: &[Identity],
    ) -> Result<(), Error> {
        self.connected()?
            .remind(question, target, shown, text, mention)
            .await
    }
}
