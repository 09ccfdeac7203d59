//! Editing a message that showed a question: to its outcome (withdrawing its buttons) or to
//! its current state (a quorum's progress). One place parses the stored message id and logs.

use crate::{Discord, Error};
use askbridge_core::{Question, Target};
use serenity::all::MessageId;

impl Discord {
    /// Edits the message that showed `question` in `target` (`shown` is its id).
    pub(crate) async fn edit_shown(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
        edit: &serenity::all::EditMessage,
    ) -> Result<(), askbridge_core::Error> {
        let channel_id = Discord::target_channel(target)?;
        let message_id = shown
            .parse::<u64>()
            .ok()
            .filter(|id| *id != 0)
            .map(MessageId::new)
            .ok_or_else(|| Error::BadReference(shown.to_owned()))?;
        match self
            .core
            .rest
            .edit_message(channel_id, message_id, edit)
            .await
        {
            Ok(()) => {
                tracing::info!(question_id = %question.id, %target, message_id = %message_id, status = %question.status, "Discord message edited");
                Ok(())
            }
            Err(error) => {
                tracing::warn!(question_id = %question.id, %target, %error, "cannot edit the Discord message");
                Err(error.into())
            }
        }
    }
}
