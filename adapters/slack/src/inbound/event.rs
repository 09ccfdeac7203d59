//! Events API deliveries (a message in a DM with the app, a mention of it, a reply in one of its
//! threads) and which of them count: [`Slack::inbound_from`] is the one rule that turns an event
//! into an [`Inbound`] or nothing. Apart from the handlers (`mod.rs`) so that this rule, which
//! decides what a message in a channel can answer, reads on its own.

use super::{is_direct, unescape};
use crate::{SURFACE, Slack};
use askbridge_core::{Identity, Inbound, ReplyTo, Target};
use serde::Deserialize;
use slack_morphism::prelude::*;

/// An Events API delivery (`event_callback`), as posted to `/slack/events` and as Socket Mode's
/// `events_api` payload.
#[derive(Debug, Deserialize)]
pub(crate) struct EventCallback {
    pub(crate) event_id: Option<String>,
    pub(crate) event: Option<Event>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Event {
    #[serde(rename = "type")]
    kind: String,
    user: Option<String>,
    bot_id: Option<String>,
    subtype: Option<String>,
    text: Option<String>,
    channel: Option<String>,
    channel_type: Option<String>,
    ts: Option<String>,
    thread_ts: Option<String>,
    /// Who wrote a thread's first message (on a message in a thread).
    parent_user_id: Option<String>,
}

impl Slack {
    /// The [`Inbound`] for an event, and the thread to reply in, or `None` when it must not
    /// count: messages from bots (this one included), edits and every other subtype, messages
    /// in channels that do not mention the app (a mention arrives as its own event) unless they
    /// are in the thread of one of the app's messages. A message in a thread carries the
    /// thread's `ts`: a reply to a question's message answers that question.
    pub(super) fn inbound_from(
        &self,
        event: Event,
        event_id: String,
    ) -> Option<(Inbound, Option<SlackTs>)> {
        let mention = format!("<@{}>", self.bot_user);
        let mentions = event.text.as_ref().is_some_and(|t| t.contains(&mention));
        // A message in a thread replies to the thread's first message (a question's, maybe).
        let reply_to = event
            .thread_ts
            .clone()
            .filter(|t| Some(t) != event.ts.as_ref());
        let under_ours = event.parent_user_id.as_deref() == Some(&*self.bot_user);
        let why_not = if event.bot_id.is_some() {
            Some("from a bot")
        } else if let Some(subtype) = &event.subtype {
            tracing::debug!(subtype, "Slack message with a subtype ignored");
            Some("an edit or another subtype")
        } else if event.user.as_deref() == Some(&*self.bot_user) {
            Some("from askbridge itself")
        } else if event.kind == "message"
            && event.channel_type.as_deref() != Some("im")
            && (reply_to.is_none() || !under_ours || mentions)
        {
            Some("a channel message outside the app's threads, or a mention (that is app_mention)")
        } else if !matches!(event.kind.as_str(), "message" | "app_mention") {
            Some("an event of another kind")
        } else {
            None
        };
        if let Some(reason) = why_not {
            tracing::debug!(reason, "Slack event ignored");
            return None;
        }
        let (user, channel, text) = (event.user?, event.channel?, event.text?);
        let text = unescape(text.replace(&mention, " ").trim());
        let private = is_direct(&channel);
        // A channel message (not a mention) reaches askbridge only for being in its thread: it
        // answers that thread's question or nothing.
        let only = event.kind == "message" && !private;
        let in_reply_to = reply_to.map(|message| ReplyTo { message, only });
        // In a channel, answer in the thread of the message that mentioned the app.
        let thread = if private {
            None
        } else {
            event.thread_ts.or(event.ts).map(SlackTs)
        };
        let inbound = Inbound {
            via: SURFACE.into(),
            chat: Target::compose(SURFACE, &channel),
            sender: Identity::compose(SURFACE, &user),
            sender_name: None,
            text,
            private,
            delivery_id: Some(format!("event:{event_id}")),
            in_reply_to,
        };
        Some((inbound, thread))
    }
}
