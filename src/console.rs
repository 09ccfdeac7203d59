//! The console: a plain-text surface on the terminal running askbridge.
//!
//! It is the simplest proof that buttons are just commands: a question is printed with its
//! numbered options and the exact `/answer` line to type, and what the person types goes through
//! the same [`Inbox`] as a Telegram tap. When another surface answers first, the console says so.

use askbridge_core::error::Chain;
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
        // Question text comes from whoever asked: it may not drive the terminal.
        let _ = writeln!(out, "{}", askbridge_core::text::printable(text));
        let _ = out.flush();
    }

    /// Reads lines from `input` until it ends, handing each to `inbox` as the console user, and
    /// prints the replies.
    pub async fn run<R>(&self, inbox: Arc<dyn Inbox>, input: R)
    where
        R: AsyncBufRead + Unpin,
    {
        let mut input = input;
        loop {
            let line = match next_line(&mut input).await {
                Ok(Some(Line::Text(line))) => line,
                Ok(Some(Line::TooLong)) => {
                    self.print(&format!(
                        "✗ That line is too long (the limit is {MAX_LINE} bytes); nothing was done."
                    ));
                    continue;
                }
                Ok(Some(Line::NotText)) => {
                    self.print("✗ That line is not text (not UTF-8); nothing was done.");
                    continue;
                }
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(error = %Chain(&error), "cannot read the console");
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
                in_reply_to: None,
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

/// Longest console line read, in bytes: far above any command, far below what would hurt.
pub const MAX_LINE: usize = 16 * 1024;

/// One line of console input.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Text(String),
    /// Longer than [`MAX_LINE`]: skipped to its end without being kept.
    TooLong,
    /// Not UTF-8.
    NotText,
}

/// Reads one line, keeping at most [`MAX_LINE`] bytes of it in memory. `None` at the end.
async fn next_line<R: AsyncBufRead + Unpin>(input: &mut R) -> std::io::Result<Option<Line>> {
    let mut kept = Vec::new();
    let mut too_long = false;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            if kept.is_empty() && !too_long {
                return Ok(None);
            }
            break;
        }
        let (chunk, used, ended) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (&buffer[..at], at + 1, true),
            None => (buffer, buffer.len(), false),
        };
        if !too_long && kept.len() + chunk.len() <= MAX_LINE {
            kept.extend_from_slice(chunk);
        } else {
            too_long = true;
            kept = Vec::new();
        }
        input.consume(used);
        if ended {
            break;
        }
    }
    if too_long {
        return Ok(Some(Line::TooLong));
    }
    if kept.last() == Some(&b'\r') {
        kept.pop();
    }
    Ok(Some(match String::from_utf8(kept) {
        Ok(text) => Line::Text(text),
        Err(_) => Line::NotText,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_bounded_and_checked() {
        let mut input: Vec<u8> = b"first\r\n".to_vec();
        input.extend(vec![b'x'; MAX_LINE + 1]);
        input.extend(b"\n\xff\xfe\nlast");
        let mut reader = tokio::io::BufReader::with_capacity(64, &input[..]);
        let mut lines = Vec::new();
        while let Some(line) = next_line(&mut reader).await.unwrap() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            [
                Line::Text("first".into()),
                Line::TooLong,
                Line::NotText,
                Line::Text("last".into())
            ]
        );
    }
}
