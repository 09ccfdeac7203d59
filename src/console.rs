//! The console: a plain-text surface on the terminal running askbridge.
//!
//! It is the simplest proof that buttons are just commands: a question is printed with its
//! numbered options and the exact `/answer` line to type, and what the person types goes through
//! the same [`Inbox`] as a Telegram tap. When another surface answers first, the console says so.

use askbridge_core::{
    Channel, Error, Identity, Inbound, Inbox, Question, Target, Tone, identity, render,
};
use async_trait::async_trait;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The console's target and identity.
pub const CONSOLE: &str = identity::CONSOLE;

/// A writer the console prints to (stdout, or a buffer in tests).
pub type Output = Arc<Mutex<dyn Write + Send>>;

/// See the module documentation.
#[derive(Clone)]
pub struct Console {
    out: Output,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Console")
    }
}

impl Console {
    /// A console printing to standard output.
    pub fn stdout() -> Self {
        Console::new(Arc::new(Mutex::new(std::io::stdout())))
    }

    /// A console printing to `out`.
    pub fn new(out: Output) -> Self {
        Console { out }
    }

    /// Prints `text` followed by a newline.
    pub fn print(&self, text: &str) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        // A closed terminal is not worth failing over.
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }

    /// Reads lines from `input` until it ends, handing each to `inbox` as the console user, and
    /// prints the replies.
    pub async fn run<R>(&self, inbox: Arc<dyn Inbox>, input: R)
    where
        R: AsyncBufRead + Unpin,
    {
        let mut lines = input.lines();
        loop {
            let line = match lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(%error, "cannot read the console");
                    return;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let message = Inbound {
                via: CONSOLE.into(),
                chat: Target::console(),
                sender: Identity::console(),
                sender_name: None,
                text: line,
                private: true,
                delivery_id: None,
            };
            if let Some(reply) = inbox.handle(message).await {
                let mark = match reply.tone {
                    Tone::Refused => "✗ ",
                    Tone::Done | Tone::Info => "",
                };
                self.print(&format!("{mark}{}", reply.text));
            }
        }
    }
}

#[async_trait]
impl Channel for Console {
    fn surface(&self) -> &str {
        CONSOLE
    }

    async fn show(&self, question: &Question, _target: &Target) -> Result<String, Error> {
        let deadline = render::time_left(question, askbridge_core::Millis::now());
        self.print(&format!(
            "\n── question {} (expires {deadline}) ──\n{}\n",
            question.id,
            render::question_text(question, 8000)
        ));
        Ok(question.id.to_string())
    }

    async fn withdraw(
        &self,
        question: &Question,
        _target: &Target,
        _shown: &str,
    ) -> Result<(), Error> {
        let line = render::outcome_line(question);
        let via = question.resolution.as_ref().map(|r| r.via());
        match via.as_deref() {
            // The person at this console already got the ✓ reply.
            Some(CONSOLE) => {}
            Some("timeout") | None => self.print(&format!("── question {}: {line}", question.id)),
            Some(_) => self.print(&format!(
                "── question {} was resolved on another surface: {line}",
                question.id
            )),
        }
        Ok(())
    }

    async fn say(&self, _target: &Target, text: &str) -> Result<(), Error> {
        self.print(text);
        Ok(())
    }
}
