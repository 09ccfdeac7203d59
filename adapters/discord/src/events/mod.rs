//! What people do on Discord, as the bridge hears it: clicks and selections, slash commands and
//! their autocompletion, typed messages. The gateway [`Handler`] and the HTTP endpoint share
//! everything after the first response, which is the only part that differs between them (a REST
//! callback on the gateway, the HTTP response body on the endpoint).
//!
//! Order matters for clicks: Discord shows "This interaction failed" unless it gets a first
//! response within 3 seconds, and the bridge's work (a store claim, on Redis perhaps) has no such
//! bound. A click's acknowledgement, a deferred update that changes nothing on screen, is sent
//! once the inbox has handled the click, or after [`ACK_WITHIN`] if it has not by then: the claim
//! needs nothing from the acknowledgement, and sent first (or alongside) its request was built
//! and written on the same worker thread, and its round trip taken by the same cores, ahead of
//! the claim that releases the asker. The bridge itself then edits the message
//! everywhere it is shown (the withdraw); a refusal ("You can't answer this question", "Already
//! answered") goes to the clicker alone, as an ephemeral follow-up, once the acknowledgement is
//! in (a follow-up needs the first response).
//!
//! Every delivery carries the platform's id (`interaction:<id>`, `message:<id>`), so a gateway
//! resume that replays events, or a double click delivered twice, is handled once: the inbox drops
//! a delivery id it has seen.
//!
//! The parts: this module holds what both share; `gateway.rs` the gateway's [`Handler`].

mod gateway;

pub(crate) use gateway::Handler;

use crate::Core;
use crate::layout::{fit, no_pings};
use askbridge_core::command::{Command, CommandLine};
use askbridge_core::render;
use askbridge_core::{Identity, Inbound, Inbox, Reply, ReplyTo, Target, Tone};
use serenity::all::{
    ChannelType, CommandDataOptionValue, CommandInteraction, CommandOptionType,
    ComponentInteraction, ComponentInteractionDataKind, Message, PartialChannel, Ready, User,
};
use serenity::builder::{
    CreateAutocompleteResponse, CreateCommand, CreateCommandOption, CreateInteractionResponse,
    CreateInteractionResponseFollowup, CreateInteractionResponseMessage, CreateMessage,
    EditInteractionResponse,
};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The longest a click's acknowledgement waits for the inbox: Discord wants it within 3 s.
const ACK_WITHIN: Duration = Duration::from_secs(1);
/// Most choices Discord accepts in an autocomplete answer.
const AUTOCOMPLETE_CHOICES: usize = 25;
/// Longest autocomplete choice name, in characters.
const CHOICE_NAME_CHARS: usize = 100;

/// The application commands askbridge registers: `/answer <id> <choice>` and `/pending`, the
/// same commands a person can type.
pub(crate) fn commands() -> Vec<CreateCommand> {
    vec![
        CreateCommand::new("answer")
            .description("Answer a question askbridge is waiting on")
            .add_option(
                CreateCommandOption::new(CommandOptionType::String, "id", "The question")
                    .required(true)
                    .set_autocomplete(true),
            )
            .add_option(
                CreateCommandOption::new(
                    CommandOptionType::String,
                    "choice",
                    "An option's number or name, several numbers (1,3), yes/no, or your words",
                )
                .required(true),
            ),
        CreateCommand::new("pending").description("The questions waiting for you here"),
    ]
}

fn sender(user: &User) -> (Identity, Option<String>) {
    (
        Identity::compose(crate::SURFACE, user.id),
        Some(format!("@{}", user.name)),
    )
}

/// A one-to-one chat with the bot: no guild, and not a group DM.
fn is_private(guild: bool, channel: Option<&PartialChannel>) -> bool {
    !guild && channel.is_none_or(|c| c.kind == ChannelType::Private)
}

/// The question a command is about, for logs.
fn question_id_in(text: &str) -> String {
    let id = match CommandLine::parse(text) {
        Ok(Some(line)) => match line.command {
            Command::Answer(c) => Some(c.id.to_string()),
            Command::Decline(c) => Some(c.id.to_string()),
            Command::Pick(c) => Some(c.id.to_string()),
            Command::Show(c) => Some(c.id.to_string()),
            _ => None,
        },
        _ => None,
    };
    id.unwrap_or_else(|| "-".to_owned())
}

fn reply_question_id(reply: &Reply, text: &str) -> String {
    reply
        .question
        .as_ref()
        .map_or_else(|| question_id_in(text), |q| q.id.to_string())
}

/// A click's or selection's text: the custom_id, and for a select menu the chosen option
/// numbers appended (`/answer <id>` + ` 1,3`).
pub(crate) fn component_text(interaction: &ComponentInteraction) -> String {
    match &interaction.data.kind {
        ComponentInteractionDataKind::StringSelect { values } if !values.is_empty() => {
            format!("{} {}", interaction.data.custom_id, values.join(","))
        }
        _ => interaction.data.custom_id.clone(),
    }
}

fn option_text(interaction: &CommandInteraction, name: &str) -> String {
    let value = interaction
        .data
        .options
        .iter()
        .find(|option| option.name == name)
        .map(|option| &option.value);
    match value {
        Some(CommandDataOptionValue::String(text)) => text.trim().to_owned(),
        Some(CommandDataOptionValue::Autocomplete { value, .. }) => value.trim().to_owned(),
        Some(CommandDataOptionValue::Integer(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// A slash command's text, as if typed.
pub(crate) fn command_text(interaction: &CommandInteraction) -> String {
    match interaction.data.name.as_str() {
        "answer" => format!(
            "/answer {} {}",
            option_text(interaction, "id"),
            option_text(interaction, "choice")
        )
        .trim_end()
        .to_owned(),
        other => format!("/{other}"),
    }
}

/// Removes a leading mention of the bot (`<@id>` or `<@!id>`): "@askbridge /pending" is
/// `/pending`. Mentions also reach bots without the Message Content intent.
fn strip_mention(text: &str, bot: Option<serenity::all::UserId>) -> &str {
    let text = text.trim();
    let Some(bot) = bot else { return text };
    for mention in [format!("<@{bot}>"), format!("<@!{bot}>")] {
        if let Some(rest) = text.strip_prefix(&mention) {
            return rest.trim_start();
        }
    }
    text
}

impl Core {
    fn component_inbound(&self, interaction: &ComponentInteraction) -> Inbound {
        let (sender, sender_name) = sender(&interaction.user);
        Inbound {
            via: crate::SURFACE.to_owned(),
            chat: Target::compose(crate::SURFACE, interaction.channel_id),
            sender,
            sender_name,
            text: component_text(interaction),
            private: is_private(interaction.guild_id.is_some(), interaction.channel.as_ref()),
            delivery_id: Some(format!("interaction:{}", interaction.id)),
            in_reply_to: None,
        }
    }

    fn command_inbound(&self, interaction: &CommandInteraction, text: String) -> Inbound {
        let (sender, sender_name) = sender(&interaction.user);
        Inbound {
            via: crate::SURFACE.to_owned(),
            chat: Target::compose(crate::SURFACE, interaction.channel_id),
            sender,
            sender_name,
            text,
            private: is_private(interaction.guild_id.is_some(), interaction.channel.as_ref()),
            delivery_id: Some(format!("interaction:{}", interaction.id)),
            in_reply_to: None,
        }
    }

    /// The first response to an interaction, over REST (the gateway path). A failure is logged
    /// and the interaction still handled: the person's click counts even if Discord shows it
    /// as failed, and a replayed interaction fails here because it was acknowledged before.
    /// `text` is the interaction's command, for the log.
    pub(crate) async fn respond_first(
        &self,
        text: &str,
        id: serenity::all::InteractionId,
        token: &str,
        response: &CreateInteractionResponse,
    ) {
        if let Err(error) = self.rest.respond(id, token, response).await {
            tracing::warn!(question_id = %question_id_in(text), interaction_id = %id, %error, "cannot acknowledge a Discord interaction");
        }
    }

    /// A click or selection, acknowledged (`acknowledged`, its first response) once handled or
    /// after [`ACK_WITHIN`]; what the clicker is told waits for the acknowledgement.
    pub(crate) async fn handle_component(
        &self,
        inbox: &dyn Inbox,
        interaction: ComponentInteraction,
        acknowledged: impl std::future::Future<Output = ()>,
    ) {
        if let Some((id, page)) = crate::batch::page_of(&interaction.data.custom_id) {
            acknowledged.await;
            return self.turn_page(inbox, &interaction, &id, page).await;
        }
        let inbound = self.component_inbound(&interaction);
        let text = inbound.text.clone();
        let sender = inbound.sender.clone();
        let handling = inbox.handle(inbound);
        tokio::pin!(handling);
        let handled = match tokio::time::timeout(ACK_WITHIN, &mut handling).await {
            Ok(handled) => {
                acknowledged.await;
                handled
            }
            Err(_) => tokio::join!(handling, acknowledged).0,
        };
        let Some(reply) = handled else {
            tracing::debug!(question_id = %question_id_in(&text), interaction_id = %interaction.id, "duplicate Discord interaction dropped");
            return;
        };
        let question_id = reply_question_id(&reply, &text);
        tracing::info!(question_id = %question_id, sender = %sender, tone = ?reply.tone, "Discord click handled");
        // Done: the bridge's withdraw edits the message for everyone, saying who answered what; a
        // private "✓" on top would only be noise. Refusals and information are for the clicker.
        // A form's next field is the clicker's too, with its buttons.
        if reply.tone == Tone::Done && reply.buttons.is_empty() {
            return;
        }
        self.tell_clicker(&interaction, &reply, &question_id).await;
    }

    /// `reply` for the clicker alone, as an ephemeral follow-up with its buttons.
    pub(crate) async fn tell_clicker(
        &self,
        interaction: &ComponentInteraction,
        reply: &Reply,
        question_id: &str,
    ) {
        let follow_up = CreateInteractionResponseFollowup::new()
            .content(fit(&reply.text))
            .components(crate::layout::reply_components(&reply.buttons))
            .ephemeral(true)
            .allowed_mentions(no_pings());
        if let Err(error) = self
            .rest
            .follow_up(interaction.application_id, &interaction.token, &follow_up)
            .await
        {
            tracing::warn!(question_id = %question_id, %error, "cannot tell the clicker why nothing changed");
        }
    }

    /// A slash command, after its deferred (ephemeral) first response: the reply fills it in.
    pub(crate) async fn handle_command(&self, inbox: &dyn Inbox, interaction: CommandInteraction) {
        let text = command_text(&interaction);
        let inbound = self.command_inbound(&interaction, text.clone());
        let Some(reply) = inbox.handle(inbound).await else {
            tracing::debug!(question_id = %question_id_in(&text), interaction_id = %interaction.id, "duplicate Discord command dropped");
            return;
        };
        let question_id = reply_question_id(&reply, &text);
        tracing::info!(question_id = %question_id, command = %interaction.data.name, tone = ?reply.tone, "Discord command handled");
        let edit = EditInteractionResponse::new()
            .content(fit(&reply.text))
            .components(crate::layout::reply_components(&reply.buttons))
            .allowed_mentions(no_pings());
        if let Err(error) = self
            .rest
            .edit_original(interaction.application_id, &interaction.token, &edit)
            .await
        {
            tracing::warn!(question_id = %question_id, %error, "cannot answer a Discord command");
        }
    }

    /// The answer to an autocomplete request for `/answer`'s `id`: the sender's pending questions
    /// in this channel whose id starts with (or whose prompt contains) what was typed.
    pub(crate) async fn autocomplete(
        &self,
        inbox: &dyn Inbox,
        interaction: &CommandInteraction,
    ) -> CreateInteractionResponse {
        let typed = interaction
            .data
            .autocomplete()
            .map(|option| option.value.trim().to_lowercase())
            .unwrap_or_default();
        let (sender, _) = sender(&interaction.user);
        let chat = Target::compose(crate::SURFACE, interaction.channel_id);
        let questions = inbox.pending_for(&sender, &chat).await;
        let mut response = CreateAutocompleteResponse::new();
        for question in questions
            .iter()
            .filter(|q| {
                typed.is_empty()
                    || q.id.as_str().starts_with(&typed)
                    || q.prompt.to_lowercase().contains(&typed)
            })
            .take(AUTOCOMPLETE_CHOICES)
        {
            let name = render::shorten(
                &format!("{} — {}", question.id, question.prompt),
                CHOICE_NAME_CHARS,
            );
            response = response.add_string_choice(name, question.id.to_string());
        }
        CreateInteractionResponse::Autocomplete(response)
    }

    /// A typed message: handed to the inbox; a reply goes back as a reply to it.
    pub(crate) async fn handle_message(&self, inbox: &dyn Inbox, message: Message) {
        // Bots never answer: not other bots, not webhooks, not askbridge's own messages.
        if message.author.bot || message.webhook_id.is_some() {
            return;
        }
        let text = strip_mention(&message.content, self.bot.get().copied());
        if text.is_empty() {
            return;
        }
        let (sender, sender_name) = sender(&message.author);
        let inbound = Inbound {
            via: crate::SURFACE.to_owned(),
            chat: Target::compose(crate::SURFACE, message.channel_id),
            sender,
            sender_name,
            text: text.to_owned(),
            private: message.guild_id.is_none(),
            delivery_id: Some(format!("message:{}", message.id)),
            // A reply (not a forward) to a question's message answers that question (the id
            // `show` returned).
            in_reply_to: message
                .message_reference
                .as_ref()
                .filter(|r| matches!(r.kind, serenity::all::MessageReferenceKind::Default))
                .and_then(|r| r.message_id)
                .map(|id| ReplyTo {
                    message: id.to_string(),
                    only: false,
                }),
        };
        let text = inbound.text.clone();
        let Some(reply) = inbox.handle(inbound).await else {
            return;
        };
        let question_id = reply_question_id(&reply, &text);
        tracing::info!(question_id = %question_id, message_id = %message.id, tone = ?reply.tone, "Discord message handled");
        let answer = CreateMessage::new()
            .content(fit(&reply.text))
            .components(crate::layout::reply_components(&reply.buttons))
            .reference_message((message.channel_id, message.id))
            .allowed_mentions(no_pings());
        if let Err(error) = self.rest.send_message(message.channel_id, &answer).await {
            tracing::warn!(question_id = %question_id, %error, "cannot reply on Discord");
        }
    }

    /// At READY: remember the bot, register the application commands once per process.
    pub(crate) async fn ready(&self, ready: &Ready) {
        let _ = self.bot.set(ready.user.id);
        tracing::info!(bot = %ready.user.name, application_id = %ready.application.id, "Discord gateway ready");
        if self.commands_registered.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Err(error) = self
            .rest
            .set_commands(ready.application.id, &commands())
            .await
        {
            // Typed commands and buttons work without them; try again at the next READY.
            self.commands_registered.store(false, Ordering::SeqCst);
            tracing::warn!(%error, "cannot register /answer and /pending on Discord");
        }
    }
}

/// The deferred, ephemeral first response to a slash command ("askbridge is thinking...").
pub(crate) fn defer_ephemeral() -> CreateInteractionResponse {
    CreateInteractionResponse::Defer(CreateInteractionResponseMessage::new().ephemeral(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serenity::all::UserId;

    #[test]
    fn a_leading_bot_mention_is_not_part_of_the_command() {
        let bot = Some(UserId::new(99));
        assert_eq!(strip_mention("<@99> /pending", bot), "/pending");
        assert_eq!(strip_mention("<@!99>   2", bot), "2");
        assert_eq!(strip_mention("<@98> 2", bot), "<@98> 2");
        assert_eq!(strip_mention("  hi ", None), "hi");
    }

    #[test]
    fn question_ids_for_logs() {
        assert_eq!(question_id_in("/answer k3f9x2m8qa 2"), "k3f9x2m8qa");
        assert_eq!(question_id_in("/pending"), "-");
        assert_eq!(question_id_in("hello"), "-");
    }
}
