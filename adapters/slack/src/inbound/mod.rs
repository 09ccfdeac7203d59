//! What Slack sends, whichever way it arrives: a click or a selection (an interaction), a slash
//! command, an event (a message in a DM with the app, a mention of it). HTTP mode (`http.rs`) and
//! Socket Mode (`socket.rs`) read the same payloads (Socket Mode's envelope carries exactly the
//! body HTTP mode is posted), so both hand them here, and a click means the same on both.
//!
//! Slack wants its acknowledgement (the 200, or the envelope's ack) within 3 s. Each delivery goes
//! the one reply path of the bridge's [`Inbox`] in a task of its own, and the handlers here return
//! once that claim is recorded (a few milliseconds) but never later than [`CLAIM_WAIT`]: an
//! askbridge that dies before it has recorded a delivery gets it again from Slack's retry, and a
//! slow store still gets its acknowledgement to Slack in time. The reply, shown to the person alone
//! (`chat.postEphemeral` for a click, the `response_url` for a slash command) or, for a message, in
//! the conversation, is sent after.
//!
//! A delivery Slack retries (`X-Slack-Retry-Num`, or an envelope sent again, maybe to another
//! replica) carries the same payload, so the same delivery id: the event id; for a click the
//! user, the message and the action's own timestamp; for a command its trigger id. The inbox
//! records ids in the store and handles each once, across replicas.
//!
//! A click on a modal opener opens its modal and claims nothing; a modal's submission
//! (`view_submission`) is answered in the acknowledgement's own body, which Slack reads to close
//! the modal or show errors on its fields (see `modals.rs`).
//!
//! The parts: this module holds the handlers and the interaction payloads; `event.rs` the Events
//! API's deliveries and which of them count.

mod event;

pub(crate) use event::EventCallback;

use crate::sending::SlackChannel;
use crate::{CLAIM_WAIT, SURFACE, Slack};
use askbridge_core::{Identity, Inbound, Inbox, Reply, Target, Tone};
use serde::Deserialize;
use slack_morphism::prelude::*;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::oneshot;

/// Runs `work` in a task of its own, and returns once it has sent on its `claimed` sender (or
/// dropped it), or after [`CLAIM_WAIT`].
async fn claim_then_ack<F, Fut>(work: F)
where
    F: FnOnce(oneshot::Sender<()>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (claimed, waited) = oneshot::channel();
    tokio::spawn(work(claimed));
    if tokio::time::timeout(CLAIM_WAIT, waited).await.is_err() {
        tracing::warn!("a Slack delivery is acknowledged before its claim finished");
    }
}

/// A slash command's fields were missing or unreadable.
#[derive(Debug)]
pub(crate) struct Unreadable;

/// The connected app and the inbox deliveries go to.
#[derive(Clone)]
pub(crate) struct Hook {
    pub(crate) slack: Slack,
    pub(crate) inbox: Arc<dyn Inbox>,
}

/// Slack's escaping of `&`, `<`, `>` in message text undone, so typed commands read as typed.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// A direct-message channel (`D...`): one person and the app.
fn is_direct(channel: &str) -> bool {
    channel.starts_with('D')
}

#[derive(Debug, Deserialize)]
pub(crate) struct Interaction {
    #[serde(rename = "type")]
    kind: String,
    user: User,
    channel: Option<Conversation>,
    container: Option<Container>,
    trigger_id: Option<String>,
    #[serde(default)]
    actions: Vec<Action>,
    /// A modal's view, on its submission.
    view: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct User {
    id: String,
    username: Option<String>,
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Conversation {
    id: String,
}

/// Where the clicked element was: the message's ts.
#[derive(Debug, Deserialize)]
struct Container {
    message_ts: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Action {
    #[serde(rename = "type")]
    kind: String,
    action_id: Option<String>,
    value: Option<String>,
    selected_option: Option<Choice>,
    #[serde(default)]
    selected_options: Vec<Choice>,
    action_ts: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    value: String,
}

impl Action {
    /// The command the action stands for: a button's value, a chosen option's value, or the
    /// command several chosen options make.
    fn command(&self) -> Option<String> {
        match self.kind.as_str() {
            "button" => self.value.clone(),
            "static_select" => self.selected_option.as_ref().map(|c| c.value.clone()),
            "multi_static_select" => {
                let values: Vec<String> = self
                    .selected_options
                    .iter()
                    .map(|c| c.value.clone())
                    .collect();
                crate::blocks::select_command(&values)
            }
            _ => None,
        }
    }
}

impl Interaction {
    /// The id a redelivery of this interaction keeps: who acted, on which message, which
    /// element, at what time (the action's own timestamp); the trigger id when there is none.
    fn delivery_id(&self, channel: &str, action: &Action) -> Option<String> {
        let Some(at) = &action.action_ts else {
            return self.trigger_id.as_ref().map(|t| format!("interaction:{t}"));
        };
        let message = self
            .container
            .as_ref()
            .and_then(|c| c.message_ts.as_deref());
        Some(format!(
            "interaction:{}:{channel}:{}:{}:{at}",
            self.user.id,
            message.unwrap_or_default(),
            action.action_id.as_deref().unwrap_or_default(),
        ))
    }
}

/// A click on a button that opens a modal, if it is one.
fn modal_click(interaction: &Interaction) -> Option<crate::modals::Click<'_>> {
    let action = interaction.actions.first()?;
    let id = crate::batch::opener_kind(action.action_id.as_deref()?);
    let openers = [
        crate::blocks::REASON_ACTION,
        crate::blocks::FORM_ACTION,
        crate::blocks::EDIT_ACTION,
    ];
    if !openers.contains(&id) {
        return None;
    }
    Some(crate::modals::Click {
        channel: &interaction.channel.as_ref()?.id,
        user: &interaction.user.id,
        trigger: interaction.trigger_id.as_deref()?,
        action: id,
        command: action.value.as_deref()?,
    })
}

/// Whether a reply to a click needs saying: a refusal or information does, and so does a
/// success that left the question open (a vote counted). A click that resolved the question
/// shows in the message itself.
fn worth_saying(reply: &Reply) -> bool {
    reply.tone != Tone::Done || reply.question.as_ref().is_none_or(|q| q.is_pending())
}

impl Hook {
    /// A click or a selection, or a modal's submission; other interactions are ignored.
    /// Returns once claimed, with the body the acknowledgement must carry, if any (a
    /// submission's `response_action`).
    pub(crate) async fn interaction(&self, interaction: Interaction) -> Option<serde_json::Value> {
        match interaction.kind.as_str() {
            "block_actions" => {}
            "view_submission" => return Some(self.submission(interaction).await),
            other => {
                tracing::debug!(kind = other, "Slack interaction of another kind ignored");
                return None;
            }
        }
        if let Some(click) = modal_click(&interaction) {
            crate::modals::open(&self.slack, self.inbox.as_ref(), click).await;
            return None;
        }
        let hook = self.clone();
        claim_then_ack(|claimed| hook.click(interaction, claimed)).await;
        None
    }

    /// A modal's submission: Slack reads what to do with the modal in the acknowledgement.
    async fn submission(&self, interaction: Interaction) -> serde_json::Value {
        let Some(view) = interaction.view else {
            tracing::warn!("a Slack modal submission without its view");
            return serde_json::json!({"response_action": "clear"});
        };
        let user = interaction.user;
        let by = crate::modals::Submitter {
            name: user.username.or(user.name),
            id: user.id,
        };
        crate::modals::submitted(Arc::clone(&self.inbox), by, &view).await
    }

    async fn click(self, interaction: Interaction, claimed: oneshot::Sender<()>) {
        let Some(channel) = interaction.channel.as_ref().map(|c| c.id.clone()) else {
            return;
        };
        let Some(action) = interaction.actions.first() else {
            return;
        };
        let Some(text) = action.command() else {
            return;
        };
        let user = &interaction.user;
        let inbound = Inbound {
            via: SURFACE.into(),
            chat: Target::compose(SURFACE, &channel),
            sender: Identity::compose(SURFACE, &user.id),
            sender_name: user
                .username
                .as_ref()
                .or(user.name.as_ref())
                .map(|name| format!("@{name}")),
            text,
            private: is_direct(&channel),
            delivery_id: interaction.delivery_id(&channel, action),
            in_reply_to: None,
        };
        let prepared = self.inbox.prepare(inbound).await;
        let reply = prepared.commit().await;
        let _ = claimed.send(());
        let Some(reply) = reply else {
            return;
        };
        if !worth_saying(&reply) {
            return;
        }
        let sender = SlackChannel::new(Arc::clone(&self.slack.client));
        if let Err(error) = sender
            .ephemeral(
                &SlackChannelId(channel.clone()),
                &SlackUserId(user.id.clone()),
                &reply.text,
            )
            .await
        {
            tracing::warn!(%error, channel, "cannot tell a Slack user about their click");
        }
    }

    /// A slash command, from its fields (`command`, `text`, `user_id`, `channel_id`,
    /// `trigger_id`, `response_url`). Returns once claimed.
    pub(crate) async fn command(
        &self,
        mut fields: HashMap<String, String>,
    ) -> Result<(), Unreadable> {
        let mut take = |name: &str| fields.remove(name).unwrap_or_default();
        let (command, text, user, user_name, channel, trigger, response_url) = (
            take("command"),
            take("text"),
            take("user_id"),
            take("user_name"),
            take("channel_id"),
            take("trigger_id"),
            take("response_url"),
        );
        if command.is_empty() || user.is_empty() || channel.is_empty() {
            return Err(Unreadable);
        }
        let Ok(response_url) = response_url.parse::<url::Url>() else {
            return Err(Unreadable);
        };
        let inbound = Inbound {
            via: SURFACE.into(),
            chat: Target::compose(SURFACE, &channel),
            sender: Identity::compose(SURFACE, &user),
            sender_name: (!user_name.is_empty()).then(|| format!("@{user_name}")),
            text: format!("{command} {text}").trim().to_owned(),
            private: is_direct(&channel),
            delivery_id: (!trigger.is_empty()).then(|| format!("command:{trigger}")),
            in_reply_to: None,
        };
        let hook = self.clone();
        claim_then_ack(|claimed| async move {
            let reply = hook.inbox.handle(inbound).await;
            let _ = claimed.send(());
            let Some(reply) = reply else {
                return;
            };
            let sender = SlackChannel::new(Arc::clone(&hook.slack.client));
            if let Err(error) = sender
                .respond(&SlackResponseUrl(response_url), &reply.text)
                .await
            {
                tracing::warn!(%error, "cannot answer a Slack slash command");
            }
        })
        .await;
        Ok(())
    }

    /// An Events API delivery. Returns once claimed (at once for what must not count).
    pub(crate) async fn event(&self, callback: EventCallback) {
        let (Some(event), Some(event_id)) = (callback.event, callback.event_id) else {
            return;
        };
        let Some((inbound, thread)) = self.slack.inbound_from(event, event_id) else {
            return;
        };
        let hook = self.clone();
        claim_then_ack(|claimed| async move {
            let reply = hook.inbox.handle(inbound.clone()).await;
            let _ = claimed.send(());
            let Some(reply) = reply else {
                return;
            };
            let Some(channel) = inbound.chat.address().map(|c| SlackChannelId(c.to_owned())) else {
                return;
            };
            let sender = SlackChannel::new(Arc::clone(&hook.slack.client));
            let text = crate::blocks::escape(&askbridge_core::render::shorten(&reply.text, 150));
            let blocks = crate::blocks::text_blocks(&reply.text);
            if let Err(error) = sender.post(&channel, text, blocks, thread).await {
                tracing::warn!(%error, "cannot reply on Slack");
            }
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multi_selection_is_one_command() {
        let action: Action = serde_json::from_value(serde_json::json!({
            "type": "multi_static_select",
            "selected_options": [{"value": "/answer k 1"}, {"value": "/answer k 3"}],
        }))
        .unwrap();
        assert_eq!(action.command().as_deref(), Some("/answer k 1,3"));
    }

    #[test]
    fn typed_text_is_unescaped() {
        assert_eq!(
            unescape("/answer k &lt;b&gt; &amp;amp;"),
            "/answer k <b> &amp;"
        );
    }

    #[test]
    fn a_click_keeps_its_delivery_id_whatever_the_trigger() {
        let click = |trigger: &str, at: &str| -> Interaction {
            serde_json::from_value(serde_json::json!({
                "type": "block_actions", "user": {"id": "U1"}, "channel": {"id": "C1"},
                "container": {"message_ts": "17.1"}, "trigger_id": trigger,
                "actions": [{"type": "button", "action_id": "askbridge-0", "value": "/answer k 1",
                             "action_ts": at}],
            }))
            .unwrap()
        };
        let id = |i: &Interaction| i.delivery_id("C1", &i.actions[0]);
        assert_eq!(id(&click("t1", "18.5")), id(&click("t2", "18.5")));
        assert_ne!(id(&click("t1", "18.5")), id(&click("t1", "18.6")));
        assert_eq!(
            id(&click("t1", "18.5")).as_deref(),
            Some("interaction:U1:C1:17.1:askbridge-0:18.5")
        );
    }
}
