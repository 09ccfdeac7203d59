//! A batch's page button clicked: the adapter's own, not a command for the bridge. The clicked
//! message is redrawn with that page's buttons ([`crate::batch`]) for someone who may decide the
//! batch here; anyone else is told so privately and nothing changes.

use crate::Core;
use askbridge_core::{Inbox, QuestionId, Reply, Target};
use serenity::all::ComponentInteraction;

impl Core {
    /// A batch's page button, after its acknowledgement: the clicked message redrawn with that
    /// page's buttons, for someone who may decide it here; anyone else is told so, privately.
    pub(crate) async fn turn_page(
        &self,
        inbox: &dyn Inbox,
        interaction: &ComponentInteraction,
        id: &QuestionId,
        page: usize,
    ) {
        let sender = askbridge_core::Identity::compose(crate::SURFACE, interaction.user.id);
        let chat = Target::compose(crate::SURFACE, interaction.channel_id);
        let pending = inbox.pending_for(&sender, &chat).await;
        let Some(question) = pending.iter().find(|q| &q.id == id) else {
            let refused = Reply::refused("This approval is not waiting for you here.");
            self.tell_clicker(interaction, &refused, id.as_str()).await;
            return;
        };
        let edit = crate::layout::page_edit(question, page);
        let (channel, message) = (interaction.channel_id, interaction.message.id);
        match self.rest.edit_message(channel, message, &edit).await {
            Ok(()) => tracing::info!(question_id = %id, page, "Discord batch page shown"),
            Err(error) => tracing::warn!(question_id = %id, %error, "cannot show a batch page"),
        }
    }
}
