//! The two small traits between the bridge and the chat platforms.
//!
//! [`Channel`] is what the bridge asks of a platform: show a question in a chat, withdraw it when it
//! is resolved, say a line. [`Inbox`] is what a platform asks of the bridge: here is a message (typed
//! or a button's payload), what do I reply? Adapters depend on this crate only, never on the bridge,
//! and both traits are object-safe so that the bridge holds `Arc<dyn Channel>` and adapters hold
//! `Arc<dyn Inbox>`; tests put fakes on either side.
//!
//! Handling a message is two steps, [`Inbox::prepare`] then [`Prepared::commit`], so that a tap can
//! be acknowledged at once with what it is about to do: the command is parsed, the question read
//! and the sender authorized once, in `prepare`; `commit` claims with that same reading. When the
//! claim loses a race in between, the committed reply says so and differs from the preview.

use crate::Error;
use crate::button::Button;
use crate::identity::{Identity, Target};
use crate::question::Question;
use async_trait::async_trait;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// A message from a person, as an adapter hands it to the bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inbound {
    /// The surface (`telegram`).
    pub via: String,
    /// The chat it was written in, as a target (`telegram:-1001234`).
    pub chat: Target,
    /// The sender's identity (`telegram:42`).
    pub sender: Identity,
    /// The sender's display name (`@alice`), if any.
    pub sender_name: Option<String>,
    /// The text, or the tapped button's payload.
    pub text: String,
    /// A one-to-one chat between the sender and the bot.
    pub private: bool,
    /// The platform's id for this delivery (update id, interaction id, message id); the same
    /// delivery arriving twice is handled once.
    pub delivery_id: Option<String>,
    /// The message this one replies to (a reply, a thread): a plain reply to a question's
    /// message answers that question. `None` when it replies to nothing.
    pub in_reply_to: Option<ReplyTo>,
}

/// The message an [`Inbound`] replies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplyTo {
    /// The reference [`Channel::show`] returned for it in this chat.
    pub message: String,
    /// The reply reached the bot only as a reply (a Slack thread message): when the message is
    /// not a pending question's, it answers nothing. Otherwise it is then read as any plain
    /// message is (a Telegram reply to the bot's field prompt fills the form's next field).
    pub only: bool,
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
    /// Buttons to send with the reply (a form's next field); empty for most replies.
    pub buttons: Vec<Button>,
}

impl Reply {
    /// A reply with no question attached.
    pub fn new(tone: Tone, text: impl Into<String>) -> Self {
        Reply {
            text: text.into(),
            tone,
            question: None,
            buttons: Vec::new(),
        }
    }

    /// A refusal.
    pub fn refused(text: impl Into<String>) -> Self {
        Reply::new(Tone::Refused, text)
    }

    /// Attaches buttons to send with the reply.
    pub fn with_buttons(mut self, buttons: Vec<Button>) -> Self {
        self.buttons = buttons;
        self
    }

    /// Attaches the question the reply is about.
    pub fn about(mut self, question: Question) -> Self {
        self.question = Some(question);
        self
    }
}

/// The work a [`Prepared`] message still has to do.
pub type Commit = Pin<Box<dyn Future<Output = Option<Reply>> + Send>>;

/// A message parsed, its question read and its sender authorized: what it would reply, and the
/// work that makes it so. Nothing has changed yet; dropping it changes nothing.
pub struct Prepared {
    preview: Option<Reply>,
    commit: Commit,
}

impl Prepared {
    /// A prepared message whose outcome is `preview` once `commit` has run.
    pub fn new(preview: Option<Reply>, commit: Commit) -> Self {
        Prepared { preview, commit }
    }

    /// A message whose reply is already known and needs no work (help, a refusal).
    pub fn settled(reply: Option<Reply>) -> Self {
        let done = reply.clone();
        Prepared::new(reply, Box::pin(async move { done }))
    }

    /// What the reply will be unless something changes in between (a tap's toast).
    pub fn preview(&self) -> Option<&Reply> {
        self.preview.as_ref()
    }

    /// Does it: drops a duplicate delivery, claims, starts what was asked. Returns the reply.
    pub async fn commit(self) -> Option<Reply> {
        self.commit.await
    }
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("preview", &self.preview)
            .finish_non_exhaustive()
    }
}

/// What the bridge offers adapters.
#[async_trait]
pub trait Inbox: Send + Sync {
    /// Reads a message: parses it, reads the question it is about and checks the sender may act
    /// on it. Changes nothing; see [`Prepared`].
    async fn prepare(&self, message: Inbound) -> Prepared;

    /// Handles a message at once; `None` means say nothing (plain chatter in a group, a
    /// duplicate).
    async fn handle(&self, message: Inbound) -> Option<Reply> {
        self.prepare(message).await.commit().await
    }

    /// The pending questions `sender` may answer from `chat` (for autocompletion).
    async fn pending_for(&self, sender: &Identity, chat: &Target) -> Vec<Question>;

    /// The question as it is now, if it can be read. A channel that redraws a message after
    /// a tap checks it afterwards: a resolution (and its withdrawal) may have landed between.
    async fn current(&self, id: &crate::QuestionId) -> Option<Question> {
        let _ = id;
        None
    }
}

/// What a platform offers the bridge. One value per platform, serving every chat on it.
#[async_trait]
pub trait Channel: Send + Sync {
    /// The surface name, also the prefix of its targets (`telegram` for `telegram:<chat>`).
    fn surface(&self) -> &str;

    /// Shows `question` in `target`. Returns a reference to what was sent (a message id) that
    /// [`Channel::withdraw`] gets back, possibly in another process.
    async fn show(&self, question: &Question, target: &Target) -> Result<String, Error>;

    /// Replaces what [`Channel::show`] sent with the question's outcome, removing its buttons.
    async fn withdraw(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), Error>;

    /// Says a line of text in `target`.
    async fn say(&self, target: &Target, text: &str) -> Result<(), Error>;

    /// Redraws what [`Channel::show`] sent in `target` (as `shown`) as `question` stands now,
    /// buttons kept: a quorum's progress. By default nothing is redrawn (the voter's reply and
    /// the next message show the progress).
    async fn refresh(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), Error> {
        let _ = (question, target, shown);
        Ok(())
    }

    /// Reminds `target` of `question`, which [`Channel::show`] sent there as `shown`: `text` as a
    /// reply to that message, mentioning those of `mention` who are on this platform, where the
    /// platform can do either. By default it only says `text`.
    async fn remind(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
        text: &str,
        mention: &[Identity],
    ) -> Result<(), Error> {
        let _ = (question, shown, mention);
        self.say(target, text).await
    }
}
