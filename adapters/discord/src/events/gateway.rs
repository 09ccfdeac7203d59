//! The gateway's side: serenity's [`EventHandler`], whose first response to an interaction is a
//! REST callback. Everything after it is shared with the HTTP endpoint (`endpoint.rs`) and lives
//! in `mod.rs`; this is the one part that differs between the two.

use super::{command_text, component_text, defer_ephemeral};
use crate::Core;
use askbridge_core::Inbox;
use serenity::all::{Context, EventHandler, Interaction, Message, Ready};
use serenity::builder::CreateInteractionResponse;
use std::sync::Arc;

/// The gateway's event handler.
pub(crate) struct Handler {
    core: Arc<Core>,
    inbox: Arc<dyn Inbox>,
}

impl Handler {
    pub(crate) fn new(core: Arc<Core>, inbox: Arc<dyn Inbox>) -> Self {
        Handler { core, inbox }
    }
}

#[serenity::async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _: Context, ready: Ready) {
        self.core.ready(&ready).await;
    }

    async fn interaction_create(&self, _: Context, interaction: Interaction) {
        match interaction {
            Interaction::Component(component) => {
                let (text, token) = (component_text(&component), component.token.clone());
                let acknowledge = CreateInteractionResponse::Acknowledge;
                let acknowledged =
                    self.core
                        .respond_first(&text, component.id, &token, &acknowledge);
                self.core
                    .handle_component(&*self.inbox, component, acknowledged)
                    .await;
            }
            Interaction::Command(command) => {
                let text = command_text(&command);
                self.core
                    .respond_first(&text, command.id, &command.token, &defer_ephemeral())
                    .await;
                self.core.handle_command(&*self.inbox, command).await;
            }
            Interaction::Autocomplete(command) => {
                let response = self.core.autocomplete(&*self.inbox, &command).await;
                self.core
                    .respond_first("", command.id, &command.token, &response)
                    .await;
            }
            // Pings come only to the HTTP endpoint; askbridge opens no modals.
            _ => {}
        }
    }

    async fn message(&self, _: Context, message: Message) {
        self.core.handle_message(&*self.inbox, message).await;
    }
}
