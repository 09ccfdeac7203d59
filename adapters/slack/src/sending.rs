//! The [`Channel`] side: showing, withdrawing, saying.
//!
//! Slack answers a burst with 429 and `Retry-After`; that wait is taken here and the call
//! repeated, so nothing is dropped. Other failures become retryable errors (network, outages: the
//! bridge tries again later) or permanent ones (a channel the bot is not in, a channel that does
//! not exist), never a lost question. The bot token travels in a header, never in a URL, and no
//! error here carries it.

use crate::api::{Done, Failure, Posted};
use crate::blocks::{fallback_text, question_blocks, resolved_blocks, text_blocks};
use crate::{Client, SURFACE};
use askbridge_core::{Channel, Error, Identity, Question, Target};
use async_trait::async_trait;
use slack_morphism::prelude::*;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How many 429s in a row one call waits out before handing the failure to the bridge's retry.
const RATE_LIMIT_WAITS: u32 = 10;
/// The wait after a 429 that names none.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// A Web API call that failed, in words for people (the client's error, which never holds the
/// token).
#[derive(Debug, thiserror::Error)]
pub enum SlackApiError {
    /// The bot is not a member of the channel.
    #[error(
        "the Slack app is not in channel {0}: invite it there (`/invite @<app name>` in the channel)"
    )]
    NotInChannel(String),
    /// Slack refused the call and said why (`channel_not_found`, `invalid_auth`, ...).
    #[error("Slack refused {method}: {code}")]
    Refused {
        /// The Web API method.
        method: &'static str,
        /// Slack's error code.
        code: String,
    },
    /// Slack kept answering 429.
    #[error("Slack rate-limits {0}; try again later")]
    RateLimited(&'static str),
    /// Slack could not be reached or answered something else (a 5xx, a network error).
    #[error("cannot reach Slack for {method}: {text}")]
    Unreachable {
        /// The Web API method.
        method: &'static str,
        /// What went wrong.
        text: String,
    },
}

impl SlackApiError {
    /// True when trying again later may work.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            SlackApiError::RateLimited(_) | SlackApiError::Unreachable { .. }
        )
    }

    /// Slack's error code, when Slack gave one.
    pub fn code(&self) -> Option<&str> {
        match self {
            SlackApiError::NotInChannel(_) => Some("not_in_channel"),
            SlackApiError::Refused { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// Runs a Web API call, waiting out rate limits; each attempt within the client's timeout.
pub(crate) async fn call<T, F, Fut>(
    method: &'static str,
    channel: &str,
    mut call: F,
) -> Result<T, SlackApiError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut waits = 0;
    loop {
        match call().await {
            Ok(value) => return Ok(value),
            Err(Failure::RateLimited(retry_after)) => {
                if waits == RATE_LIMIT_WAITS {
                    return Err(SlackApiError::RateLimited(method));
                }
                waits += 1;
                let wait = retry_after.unwrap_or(DEFAULT_RETRY_AFTER);
                tracing::info!(
                    method,
                    retry_after_s = wait.as_secs(),
                    "Slack rate limit; waiting"
                );
                tokio::time::sleep(wait).await;
            }
            Err(failure) => return Err(failed(method, channel, failure)),
        }
    }
}

/// A failed call in words for people.
fn failed(method: &'static str, channel: &str, failure: Failure) -> SlackApiError {
    match failure {
        Failure::RateLimited(_) => SlackApiError::RateLimited(method),
        Failure::Refused(code) if code == "not_in_channel" => {
            SlackApiError::NotInChannel(channel.to_owned())
        }
        Failure::Refused(code) => SlackApiError::Refused { method, code },
        Failure::Unreachable(text) => {
            tracing::debug!(method, error = %text, "Slack Web API call failed");
            SlackApiError::Unreachable { method, text }
        }
    }
}

/// Maps a failed call to the bridge's retryable/permanent distinction.
pub(crate) fn to_model_error(error: SlackApiError) -> Error {
    if error.is_retryable() {
        Error::retryable(SURFACE, error)
    } else {
        Error::permanent(SURFACE, error)
    }
}

/// The channel id in a `slack:<channel id>` target.
pub(crate) fn channel_of(target: &Target) -> Result<SlackChannelId, Error> {
    target
        .address()
        .filter(|a| !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric()))
        .map(|a| SlackChannelId(a.to_owned()))
        .ok_or_else(|| {
            Error::permanent(
                SURFACE,
                format!("`{target}` is not a slack:<channel id> target (like slack:C0123ABCD)"),
            )
        })
}

/// The most people one reminder mentions.
const MAX_MENTIONS: usize = 10;

/// `text` escaped for mrkdwn, then mentions of those of `people` who are on Slack (`<@U...>`):
/// the only markup in it is askbridge's own.
pub(crate) fn mentioning(text: &str, people: &[Identity]) -> String {
    // Room for ten mentions within a section's 3,000 characters.
    let mut out = crate::blocks::escaped_within(text, crate::blocks::SECTION_CHARS - 200);
    let users: Vec<&str> = people
        .iter()
        .filter(|p| p.surface() == SURFACE)
        .filter_map(Identity::address)
        .filter(|a| !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric()))
        .take(MAX_MENTIONS)
        .collect();
    for (n, user) in users.iter().enumerate() {
        out.push_str(if n == 0 { "\n👤 " } else { ", " });
        out.push_str(&format!("<@{user}>"));
    }
    out
}

/// Sends and edits questions' messages.
#[derive(Clone, Debug)]
pub(crate) struct SlackChannel {
    client: Arc<Client>,
}

impl SlackChannel {
    pub(crate) fn new(client: Arc<Client>) -> Self {
        SlackChannel { client }
    }

    /// Posts `blocks` in `channel` (in the thread of `thread`, when given); returns the ts.
    pub(crate) async fn post(
        &self,
        channel: &SlackChannelId,
        text: String,
        blocks: Vec<SlackBlock>,
        thread: Option<SlackTs>,
    ) -> Result<SlackTs, SlackApiError> {
        let content = SlackMessageContent::new()
            .with_text(text)
            .with_blocks(blocks);
        let request = SlackApiChatPostMessageRequest::new(channel.clone(), content)
            .opt_thread_ts(thread)
            .with_unfurl_links(false);
        let sent: Posted = call("chat.postMessage", channel.value(), || {
            self.client.post("chat.postMessage", &request)
        })
        .await?;
        Ok(SlackTs(sent.ts))
    }

    /// Replaces the message `ts` in `channel`.
    pub(crate) async fn update(
        &self,
        channel: &SlackChannelId,
        ts: SlackTs,
        text: String,
        blocks: Vec<SlackBlock>,
    ) -> Result<(), SlackApiError> {
        let content = SlackMessageContent::new()
            .with_text(text)
            .with_blocks(blocks);
        let request = SlackApiChatUpdateRequest::new(channel.clone(), content, ts);
        call("chat.update", channel.value(), || {
            self.client.post::<_, Done>("chat.update", &request)
        })
        .await
        .map(drop)
    }

    /// Shows `text` to `user` alone in `channel`.
    pub(crate) async fn ephemeral(
        &self,
        channel: &SlackChannelId,
        user: &SlackUserId,
        text: &str,
    ) -> Result<(), SlackApiError> {
        let content = SlackMessageContent::new()
            .with_text(crate::blocks::escape(text))
            .with_blocks(text_blocks(text));
        let request = SlackApiChatPostEphemeralRequest::new(channel.clone(), user.clone(), content);
        call("chat.postEphemeral", channel.value(), || {
            self.client.post::<_, Done>("chat.postEphemeral", &request)
        })
        .await
        .map(drop)
    }

    /// Opens a modal (`views.open`) with an interaction's trigger, which Slack honours for 3 s:
    /// no rate limit is waited out here, a late trigger is useless.
    pub(crate) async fn open_view(
        &self,
        trigger: &str,
        view: serde_json::Value,
    ) -> Result<(), SlackApiError> {
        let request = serde_json::json!({"trigger_id": trigger, "view": view});
        self.client
            .post::<_, Done>("views.open", &request)
            .await
            .map(drop)
            .map_err(|failure| failed("views.open", "", failure))
    }

    /// Answers through an interaction's or a slash command's `response_url`, to the caller
    /// alone.
    pub(crate) async fn respond(
        &self,
        url: &SlackResponseUrl,
        text: &str,
    ) -> Result<(), SlackApiError> {
        let content = SlackMessageContent::new()
            .with_text(crate::blocks::escape(text))
            .with_blocks(text_blocks(text));
        let request = SlackApiPostWebhookMessageRequest::new(content).with_replace_original(false);
        // An ephemeral response (the default for a response_url).
        call("response_url", "", || {
            self.client.respond(url.value().as_str(), &request)
        })
        .await
    }
}

#[async_trait]
impl Channel for SlackChannel {
    fn surface(&self) -> &str {
        SURFACE
    }

    async fn show(&self, question: &Question, target: &Target) -> Result<String, Error> {
        let channel = channel_of(target)?;
        let ts = self
            .post(
                &channel,
                fallback_text(question),
                question_blocks(question),
                None,
            )
            .await
            .map_err(to_model_error)?;
        tracing::info!(question_id = %question.id, %target, ts = %ts, "question shown on Slack");
        Ok(ts.0)
    }

    async fn withdraw(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), Error> {
        let channel = channel_of(target)?;
        let result = self
            .update(
                &channel,
                SlackTs(shown.to_owned()),
                fallback_text(question),
                resolved_blocks(question),
            )
            .await;
        match result {
            // The message was deleted in Slack: nothing is left to withdraw.
            Err(error) if error.code() == Some("message_not_found") => {
                tracing::info!(question_id = %question.id, %target, "the Slack message is gone; nothing to withdraw");
            }
            other => other.map_err(to_model_error)?,
        }
        tracing::info!(question_id = %question.id, %target, "question withdrawn on Slack");
        Ok(())
    }

    async fn say(&self, target: &Target, text: &str) -> Result<(), Error> {
        let channel = channel_of(target)?;
        self.post(
            &channel,
            crate::blocks::escape(&askbridge_core::render::shorten(text, 150)),
            text_blocks(text),
            None,
        )
        .await
        .map(drop)
        .map_err(to_model_error)
    }

    /// A reply in the question's thread, mentioning its Slack answerers.
    async fn remind(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
        text: &str,
        mention: &[Identity],
    ) -> Result<(), Error> {
        let channel = channel_of(target)?;
        let body = mentioning(text, mention);
        let content = SlackMessageContent::new()
            .with_text(body.clone())
            .with_blocks(vec![
                SlackSectionBlock::new()
                    .with_text(SlackBlockText::MarkDown(SlackBlockMarkDownText::new(body)))
                    .into(),
            ]);
        let request = SlackApiChatPostMessageRequest::new(channel.clone(), content)
            .with_thread_ts(SlackTs(shown.to_owned()));
        call("chat.postMessage", channel.value(), || {
            self.client.post::<_, Posted>("chat.postMessage", &request)
        })
        .await
        .map_err(to_model_error)?;
        tracing::info!(question_id = %question.id, %target, "reminder sent on Slack");
        Ok(())
    }

    /// The question's message redrawn as it stands (a quorum's progress), elements kept.
    async fn refresh(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), Error> {
        let channel = channel_of(target)?;
        self.update(
            &channel,
            SlackTs(shown.to_owned()),
            fallback_text(question),
            question_blocks(question),
        )
        .await
        .map_err(to_model_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reminders_mention_only_slack_people_and_escape_the_rest() {
        let people: Vec<Identity> = vec![
            "slack:U0ALICE01".into(),
            "telegram:7".into(),
            "slack:U1><!channel".into(),
            "api".into(),
        ];
        assert_eq!(
            mentioning("wait <!channel> & see", &people),
            "wait &lt;!channel&gt; &amp; see\n👤 <@U0ALICE01>"
        );
    }

    #[test]
    fn targets_name_a_channel_id() {
        assert_eq!(
            channel_of(&Target::from("slack:C0123ABCD")).unwrap(),
            SlackChannelId("C0123ABCD".into())
        );
        for bad in ["slack:", "slack:C1/../x", "slack:a b"] {
            let error = channel_of(&Target::from(bad)).unwrap_err();
            assert!(!error.is_retryable(), "{bad}");
        }
    }

    #[test]
    fn not_in_channel_says_to_invite_the_app_and_is_permanent() {
        let error = to_model_error(SlackApiError::NotInChannel("C1".into()));
        assert!(!error.is_retryable());
        assert!(error.to_string().contains("invite"), "{error}");
        assert!(to_model_error(SlackApiError::RateLimited("chat.postMessage")).is_retryable());
    }
}
