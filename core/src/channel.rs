//! The two small traits between the bridge and the chat platforms.
//!
//! [`Channel`] is what the bridge asks of a platform: show a question in a chat, withdraw it when it
//! is resolved, say a line. [`Inbox`] is what a platform asks of the bridge: here is a message (typed
//! or a button's payload), what do I reply? Adapters depend on this crate only, never on the bridge,
//! and both traits are object-safe so that the bridge holds `Arc<dyn Channel>` and adapters hold
//! `Arc<dyn Inbox>`; tests put fakes on either side.

use crate::Error;
use crate::question::Question;
use async_trait::async_trait;

/// A message from a person, as an adapter hands it to the bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inbound {
    /// The surface (`telegram`).
    pub via: String,
    /// The chat it was written in, as a target (`telegram:-1001234`).
    pub chat: String,
    /// The sender's identity (`telegram:42`).
    pub sender: String,
    /// The sender's display name (`@alice`), if any.
    pub sender_name: Option<String>,
    /// The text, or the tapped button's payload.
    pub text: String,
    /// A one-to-one chat between the sender and the bot.
    pub private: bool,
    /// The platform's id for this delivery (update id, interaction id, message id); the same
    /// delivery arriving twice is handled once.
    pub delivery_id: Option<String>,
}

/// How a reply should be presented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// The request did what was asked.
    Done,
    /// The request was refused; nothing changed.
    Refused,
    /// Information (help, a list).
    Info,
}

/// The bridge's answer to an [`Inbound`] message.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// One or more lines for the sender.
    pub text: String,
    /// Success, refusal or information.
    pub tone: Tone,
    /// The question the message was about, when there was one (adapters use it to redraw).
    pub question: Option<Question>,
}

impl Reply {
    /// A reply with no question attached.
    pub fn new(tone: Tone, text: impl Into<String>) -> Self {
        Reply {
            text: text.into(),
            tone,
            question: None,
        }
    }

    /// A refusal.
    pub fn refused(text: impl Into<String>) -> Self {
        Reply::new(Tone::Refused, text)
    }

    /// Attaches the question the reply is about.
    pub fn about(mut self, question: Question) -> Self {
        self.question = Some(question);
        self
    }
}

/// What the bridge offers adapters.
#[async_trait]
pub trait Inbox: Send + Sync {
    /// Handles a message; `None` means say nothing (plain chatter in a group, a duplicate).
    async fn handle(&self, message: Inbound) -> Option<Reply>;

    /// What [`Inbox::handle`] would reply, changing nothing. A Telegram tap is acknowledged with
    /// this before the real attempt; the real reply follows only when it differs (a lost race).
    async fn preview(&self, message: &Inbound) -> Option<Reply>;

    /// The pending questions `sender` may answer from `chat` (for autocompletion).
    async fn pending_for(&self, sender: &str, chat: &str) -> Vec<Question>;
}

/// What a platform offers the bridge. One value per platform, serving every chat on it.
#[async_trait]
pub trait Channel: Send + Sync {
    /// The surface name, also the prefix of its targets (`telegram` for `telegram:<chat>`).
    fn surface(&self) -> &str;

    /// Shows `question` in `target`. Returns a reference to what was sent (a message id) that
    /// [`Channel::withdraw`] gets back, possibly in another process.
    async fn show(&self, question: &Question, target: &str) -> Result<String, Error>;

    /// Replaces what [`Channel::show`] sent with the question's outcome, removing its buttons.
    async fn withdraw(&self, question: &Question, target: &str, shown: &str) -> Result<(), Error>;

    /// Says a line of text in `target`.
    async fn say(&self, target: &str, text: &str) -> Result<(), Error>;
}
