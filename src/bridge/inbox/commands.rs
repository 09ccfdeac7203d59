//! The read-only commands of the grammar (`/help`, `/pending`, `/show`, `/rules`, the
//! multi-choice toggles), and the texts they share.

use super::Bridge;
use super::answerable;
use crate::Error;
use askbridge_core::command::{AnswerCommand, PickCommand, ShowCommand};
use askbridge_core::text::first_line;
use askbridge_core::{Actor, IdRef, Inbound, Millis, Question, Reply, Tone, render};

/// The help text of every chat surface.
pub(super) const HELP: &str = "askbridge lets a running program ask you questions here.\n\
\n\
/answer <id> <choice>  answer a question: an option's number or name, several numbers for \
multi-choice (1,3 or 1-3), yes/no, or your own words where allowed\n\
/answer <id> edit [json], /answer <id> respond <text>  on an approval offering them: approve \
with changed arguments (field by field without json), or answer in the tool's place\n\
/decline <id> [reason]  decline to answer\n\
/pending  list the questions waiting for you here\n\
/show <id>  show a whole question\n\
/skip [id], /back [id]  while filling in a form: leave an optional field out, go back a field\n\
/run <flow> [input]  start a flow (also /<flow> [input])\n\
/rules  the always-allow rules (approvers only; /rules revoke <id>)\n\
/whoami  your identity and this chat's target, for configuring askbridge\n\
/help  this text\n\
\n\
An id can be shortened to its first 4 or more characters. When exactly one question is waiting \
for you, you can simply reply with your answer.";

/// One incoming message being handled.
pub(super) struct Turn {
    pub(super) bridge: Bridge,
    pub(super) message: Inbound,
    pub(super) actor: Actor,
}

/// One entry per question, with the command that answers it.
pub(super) fn pending_list(questions: &[Question]) -> String {
    questions
        .iter()
        .map(|q| {
            format!(
                "• {} — {}\n  {}",
                q.id,
                render::shorten(&q.prompt, 80),
                first_line(&render::commands_hint(q))
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Turn {
    pub(super) fn help(&self) -> String {
        let mut text = HELP.to_owned();
        let flows = self
            .bridge
            .runner()
            .map(|runner| runner.flows())
            .unwrap_or_default();
        if !flows.is_empty() {
            text.push_str("\n\nFlows (start one with /<name> [input] or /run <name> [input]):");
            for (name, description) in flows {
                text.push_str(&format!("\n/{name}  {description}"));
            }
        }
        text
    }

    /// The question a typed id or prefix names, among those the sender may answer here when it
    /// is a prefix.
    pub(super) async fn find(&self, id: &IdRef) -> Result<Question, Error> {
        let id = match id {
            IdRef::Full(id) => id.clone(),
            IdRef::Prefix(_) => {
                let candidates =
                    answerable(&self.bridge, &self.message.sender, &self.message.chat).await?;
                let chosen = id.resolve(candidates.iter().map(|q| &q.id))?;
                if let Some(question) = candidates.into_iter().find(|q| q.id == chosen) {
                    return Ok(question);
                }
                chosen
            }
        };
        self.bridge.get(&id).await
    }

    /// A multi-choice toggle: says what is selected and how to submit it. Changes nothing (the
    /// selection lives in the message's buttons).
    pub(super) async fn pick_command(&self, command: PickCommand) -> Result<Reply, Error> {
        let question = self.find(&command.id).await?;
        if !question.may_answer(&self.message.sender, &self.message.chat, Millis::now()) {
            return Err(Error::Forbidden);
        }
        if !question.is_pending() {
            return Err(Error::AlreadyResolved(Box::new(question)));
        }
        if let Some(bad) = command
            .numbers
            .iter()
            .find(|n| **n > question.options.len())
        {
            return Err(askbridge_core::Error::NotFit {
                reason: format!("There is no option {bad}. {}", question.choices_hint()),
            }
            .into());
        }
        let chosen: Vec<&str> = command
            .numbers
            .iter()
            .map(|n| question.options[n - 1].as_str())
            .collect();
        let text = if chosen.is_empty() {
            "Nothing selected yet.".to_owned()
        } else {
            let submit = AnswerCommand::numbers(&question.id, &command.numbers);
            format!("Selected: {}. Submit with {submit}", chosen.join(", "))
        };
        Ok(Reply::new(Tone::Info, text).about(question))
    }

    pub(super) async fn show_command(&self, command: ShowCommand) -> Result<Reply, Error> {
        let question = self.find(&command.id).await?;
        let now = Millis::now();
        let visible = question.may_answer(&self.message.sender, &self.message.chat, now)
            || question.targets_at(now).contains(&self.message.chat);
        if !visible {
            return Err(Error::Forbidden);
        }
        let mut text = render::question_text(&question, 3800);
        if !question.is_pending() {
            text = format!("{}\n\n{text}", render::outcome_line(&question));
        }
        Ok(Reply::new(Tone::Info, text).about(question))
    }

    pub(super) async fn pending_command(&self) -> Result<Reply, Error> {
        let questions = answerable(&self.bridge, &self.message.sender, &self.message.chat).await?;
        if questions.is_empty() {
            return Ok(Reply::new(
                Tone::Info,
                "No questions are waiting for you here.",
            ));
        }
        Ok(Reply::new(Tone::Info, pending_list(&questions)))
    }

    /// `/rules`: the always-allow rules, for approvers.
    pub(super) async fn rules_list(&self) -> Result<Reply, Error> {
        let rules = self.bridge.rules().await?;
        if rules.is_empty() {
            return Ok(Reply::new(Tone::Info, "No rules: every approval is asked."));
        }
        let lines: Vec<String> = rules
            .iter()
            .map(|r| format!("• {}", r.describe()))
            .collect();
        Ok(Reply::new(
            Tone::Info,
            format!(
                "Always-allow rules (revoke with /rules revoke <id>):\n{}",
                lines.join("\n")
            ),
        ))
    }
}

/// The one line a person gets for an error.
pub(super) fn refusal_reply(error: &Error) -> Reply {
    match error {
        Error::AlreadyResolved(question) => {
            Reply::refused(render::already_resolved_line(question)).about((**question).clone())
        }
        Error::NotFound(id) => Reply::refused(format!(
            "There is no question {id}. It may have been resolved long ago; send /pending to see what is waiting."
        )),
        Error::Model(error) => Reply::refused(error.to_string()),
        Error::Forbidden => Reply::refused("You can't answer this question."),
        Error::AlreadyVoted(question) => {
            Reply::refused(error.to_string()).about((**question).clone())
        }
        Error::UnknownFlow(_) | Error::UnknownRule(_) => Reply::refused(error.to_string()),
        other => {
            tracing::error!(error = %other, "could not handle a chat message");
            Reply::refused(
                "Something went wrong on askbridge's side and nothing was recorded. Please try again in a moment.",
            )
        }
    }
}

/// The reply to a claim that won, or a vote that counted.
pub(super) fn done(resolved: Question) -> Reply {
    // A vote leaves the question pending: the reply is the quorum's progress.
    let line = match render::progress_line(&resolved) {
        Some(progress) if resolved.is_pending() => format!("Vote counted. {progress}"),
        _ if resolved.is_pending() && resolved.is_batch() => {
            format!(
                "Recorded. {}",
                askbridge_core::batch::render::progress(&resolved)
            )
        }
        _ => render::outcome_line(&resolved),
    };
    Reply::new(Tone::Done, format!("✓ {line}")).about(resolved)
}
