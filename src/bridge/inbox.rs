//! What a message from a person does: the meaning of the command grammar.
//!
//! Every text surface (console, Telegram, Discord, anything plain-text) and every button ends
//! here, so a tap, a typed `/answer` and a plain reply take the same path. Bad input of any kind
//! gets one polite line back and changes nothing.

use super::Bridge;
use crate::Error;
use crate::store::ListFilter;
use askbridge_core::command::{
    AnswerCommand, Command, CommandLine, DeclineCommand, PickCommand, RulesCommand, ShowCommand,
};
use askbridge_core::run::Origin;
use askbridge_core::{
    Actor, Claim, ClaimOutcome, IdRef, Inbound, Inbox, Millis, Question, Reply, Tone, Transition,
    render,
};
use async_trait::async_trait;
use std::time::Duration;

/// How long a delivery id is remembered to drop re-deliveries.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// The help text of every chat surface.
pub(super) const HELP: &str = "askbridge lets a running program ask you questions here.\n\
\n\
/answer <id> <choice>  answer a question: an option's number or name, several numbers for \
multi-choice (1,3 or 1-3), yes/no, or your own words where allowed\n\
/decline <id> [reason]  decline to answer\n\
/pending  list the questions waiting for you here\n\
/show <id>  show a whole question\n\
/run <flow> [input]  start a flow (also /<flow> [input])\n\
/rules  the always-allow rules (approvers only; /rules revoke <id>)\n\
/whoami  your identity and this chat's target, for configuring askbridge\n\
/help  this text\n\
\n\
An id can be shortened to its first 4 or more characters. When exactly one question is waiting \
for you, you can simply reply with your answer.";

fn actor_of(message: &Inbound) -> Actor {
    Actor {
        by: message.sender.clone(),
        by_name: message.sender_name.clone(),
        via: message.via.clone(),
    }
}

/// The one line a person gets for an error.
fn refusal(error: Error) -> Reply {
    match error {
        Error::AlreadyResolved(question) => {
            Reply::refused(render::already_resolved_line(&question)).about(*question)
        }
        Error::NotFound(id) => Reply::refused(format!(
            "There is no question {id}. It may have been resolved long ago; send /pending to see what is waiting."
        )),
        Error::Model(error) => Reply::refused(error.to_string()),
        Error::Forbidden => Reply::refused("You can't answer this question."),
        Error::UnknownFlow(_) | Error::UnknownRule(_) => Reply::refused(error.to_string()),
        other => {
            tracing::error!(error = %other, "could not handle a chat message");
            Reply::refused(
                "Something went wrong on askbridge's side and nothing was recorded. Please try again in a moment.",
            )
        }
    }
}

#[async_trait]
impl Inbox for Bridge {
    async fn handle(&self, message: Inbound) -> Option<Reply> {
        if let Some(delivery) = &message.delivery_id {
            let key = format!("{}:{delivery}", message.via);
            match self.store().first_sighting(&key, DUPLICATE_WINDOW).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::debug!(delivery = %key, "duplicate delivery dropped");
                    return None;
                }
                // Better to risk handling a duplicate (claims are once-only anyway) than to drop
                // a person's message.
                Err(error) => tracing::warn!(%error, "cannot check for duplicate deliveries"),
            }
        }
        Turn {
            bridge: self,
            message: &message,
            preview: false,
        }
        .run()
        .await
    }

    async fn preview(&self, message: &Inbound) -> Option<Reply> {
        Turn {
            bridge: self,
            message,
            preview: true,
        }
        .run()
        .await
    }

    async fn pending_for(&self, sender: &str, chat: &str) -> Vec<Question> {
        match self.answerable(sender, chat).await {
            Ok(questions) => questions,
            Err(error) => {
                tracing::warn!(%error, "cannot list pending questions");
                Vec::new()
            }
        }
    }
}

impl Bridge {
    /// Pending questions shown in `chat` that `sender` may answer.
    async fn answerable(&self, sender: &str, chat: &str) -> Result<Vec<Question>, Error> {
        let filter = ListFilter {
            target: Some(chat.to_owned()),
            ..ListFilter::pending()
        };
        let mut questions = self.list(&filter).await?;
        questions.retain(|q| q.may_answer(sender, chat));
        Ok(questions)
    }
}

/// One incoming message being handled. With `preview`, everything is checked and the reply
/// predicted, but nothing is changed: a Telegram tap is acknowledged with that prediction before
/// the real (atomic) attempt runs.
struct Turn<'a> {
    bridge: &'a Bridge,
    message: &'a Inbound,
    preview: bool,
}

impl Turn<'_> {
    async fn run(&self) -> Option<Reply> {
        let line = match CommandLine::parse(&self.message.text) {
            Err(error) => return Some(Reply::refused(error.to_string())),
            Ok(None) => return self.plain_message().await,
            Ok(Some(line)) => line,
        };
        // An attempt to resolve a question that is refused goes to the audit trail.
        let attempted = match &line.command {
            Command::Answer(command) => Some(command.id.to_string()),
            Command::Decline(command) => Some(command.id.to_string()),
            _ => None,
        };
        let result = match line.command {
            Command::Rules(command) => self.rules_command(command).await,
            Command::Answer(command) => self.answer_command(command).await,
            Command::Decline(command) => self.decline_command(command).await,
            Command::Pick(command) => self.pick_command(command).await,
            Command::Show(command) => self.show_command(command).await,
            Command::Pending => self.pending_command().await,
            Command::Help => Ok(Reply::new(Tone::Info, self.help())),
            Command::Run(command) => self.start_flow(&command.flow, &command.input).await,
            Command::Other(other) if self.bridge.find_flow(&other.name).is_some() => {
                self.start_flow(&other.name, &other.args).await
            }
            Command::WhoAmI => Ok(Reply::new(
                Tone::Info,
                format!(
                    "You are {} and this chat is {}. Use them as answerers and targets.",
                    self.message.sender, self.message.chat
                ),
            )),
            Command::Other(other) => Ok(Reply::refused(format!(
                "Unknown command /{}. Send /help for the commands.",
                other.name
            ))),
        };
        match result {
            Ok(reply) => Some(reply),
            Err(error) => {
                let question = match &error {
                    Error::AlreadyResolved(question) => Some((**question).clone()),
                    _ => None,
                };
                let reply = refusal(error);
                if let (Some(id), false) = (attempted, self.preview) {
                    let actor = actor_of(self.message);
                    self.bridge
                        .audit_refusal(&actor, Some(id), question.as_ref(), &reply.text)
                        .await;
                }
                Some(reply)
            }
        }
    }

    /// `/rules` and `/rules revoke <id>`, for approvers only.
    async fn rules_command(&self, command: RulesCommand) -> Result<Reply, Error> {
        if !self.bridge.is_approver(&self.message.sender) {
            return Ok(Reply::refused(
                "Only approvers (ASKBRIDGE_APPROVERS) may see and revoke rules.",
            ));
        }
        match command.revoke {
            Some(id) if self.preview => Ok(Reply::new(Tone::Info, format!("Revoking rule {id}…"))),
            Some(id) => {
                self.bridge
                    .revoke_rule(&id, &actor_of(self.message))
                    .await?;
                Ok(Reply::new(Tone::Done, format!("✓ Rule {id} revoked.")))
            }
            None => {
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
    }

    /// The question a typed id or prefix names. Prefixes are looked up among the questions the
    /// sender may answer in this chat.
    async fn find(&self, id: &IdRef) -> Result<Question, Error> {
        let id = match id {
            IdRef::Full(id) => id.clone(),
            IdRef::Prefix(_) => {
                let candidates = self
                    .bridge
                    .answerable(&self.message.sender, &self.message.chat)
                    .await?;
                id.resolve(candidates.iter().map(|q| &q.id))?
            }
        };
        self.bridge.get(&id).await
    }

    /// Finds the question and checks the sender may act on it while it is pending.
    async fn find_pending(&self, id: &IdRef) -> Result<Question, Error> {
        let question = self.find(id).await?;
        if !question.may_answer(&self.message.sender, &self.message.chat) {
            tracing::info!(question_id = %question.id, sender = %self.message.sender, chat = %self.message.chat, "refused: not an answerer");
            return Err(Error::Forbidden);
        }
        if !question.is_pending() {
            return Err(Error::AlreadyResolved(Box::new(question)));
        }
        Ok(question)
    }

    async fn answer_command(&self, command: AnswerCommand) -> Result<Reply, Error> {
        let question = self.find_pending(&command.id).await?;
        let transition = question.read_typed(&command.choice)?;
        self.resolve_for(&question, transition).await
    }

    async fn decline_command(&self, command: DeclineCommand) -> Result<Reply, Error> {
        let question = self.find_pending(&command.id).await?;
        let transition = Transition::Decline {
            message: command.message,
        };
        self.resolve_for(&question, transition).await
    }

    fn help(&self) -> String {
        let mut text = HELP.to_owned();
        let flows = self.bridge.flow_list();
        if !flows.is_empty() {
            text.push_str("\n\nFlows (start one with /<name> [input] or /run <name> [input]):");
            for (name, description) in flows {
                text.push_str(&format!("\n/{name}  {description}"));
            }
        }
        text
    }

    /// `/run <flow> [input]` or `/<flow> [input]`: starts a run reporting in this chat, whose
    /// questions only the sender may answer (unless the flow says otherwise).
    async fn start_flow(&self, flow: &str, input: &str) -> Result<Reply, Error> {
        if self.bridge.find_flow(flow).is_none() {
            return Err(Error::UnknownFlow(flow.to_owned()));
        }
        let starters = &self.bridge.options().flow_starters;
        if !starters.is_empty() && !starters.contains(&self.message.sender) {
            return Ok(Reply::refused(
                "You can't start flows here (ASKBRIDGE_FLOW_STARTERS).",
            ));
        }
        if !self.preview {
            let origin = Origin {
                chat: Some(self.message.chat.clone()),
                user: self.message.sender.clone(),
                user_name: self.message.sender_name.clone(),
            };
            self.bridge.start_run(flow, input, origin).await?;
        }
        Ok(Reply::new(Tone::Info, format!("▶ {flow} started.")))
    }

    async fn resolve_for(
        &self,
        question: &Question,
        transition: Transition,
    ) -> Result<Reply, Error> {
        let actor = actor_of(self.message);
        let resolved = if self.preview {
            self.predict(question, transition, actor)?
        } else {
            self.bridge
                .resolve(&question.id, transition, actor, &self.message.chat)
                .await?
        };
        let text = format!("✓ {}", render::outcome_line(&resolved));
        Ok(Reply::new(Tone::Done, text).about(resolved))
    }

    /// What resolving would give, computed on a copy ([`Question::apply`] is pure).
    fn predict(
        &self,
        question: &Question,
        transition: Transition,
        actor: Actor,
    ) -> Result<Question, Error> {
        let mut copy = question.clone();
        let mut claim = Claim::new(transition, actor, Millis::now());
        claim.rule_id = super::approvals::rule_created_by(question, &claim.transition);
        match copy.apply(&claim) {
            ClaimOutcome::Won => Ok(copy),
            ClaimOutcome::Expired | ClaimOutcome::AlreadyResolved => {
                Err(Error::AlreadyResolved(Box::new(copy)))
            }
        }
    }

    async fn pick_command(&self, command: PickCommand) -> Result<Reply, Error> {
        let question = self.find_pending(&command.id).await?;
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

    async fn show_command(&self, command: ShowCommand) -> Result<Reply, Error> {
        let question = self.find(&command.id).await?;
        let visible = question.may_answer(&self.message.sender, &self.message.chat)
            || question.targets.contains(&self.message.chat);
        if !visible {
            return Err(Error::Forbidden);
        }
        let mut text = render::question_text(&question, 3800);
        if !question.is_pending() {
            text = format!("{}\n\n{text}", render::outcome_line(&question));
        }
        Ok(Reply::new(Tone::Info, text).about(question))
    }

    async fn pending_command(&self) -> Result<Reply, Error> {
        let questions = self
            .bridge
            .answerable(&self.message.sender, &self.message.chat)
            .await?;
        if questions.is_empty() {
            return Ok(Reply::new(
                Tone::Info,
                "No questions are waiting for you here.",
            ));
        }
        Ok(Reply::new(Tone::Info, pending_list(&questions)))
    }

    /// A message that is not a command: the answer to the one question waiting for the sender
    /// in this chat, if there is exactly one.
    async fn plain_message(&self) -> Option<Reply> {
        let waiting = match self.waiting_for().await {
            Ok(waiting) => waiting,
            Err(error) => return Some(refusal(error)),
        };
        match waiting.as_slice() {
            [] if self.message.private => Some(Reply::new(
                Tone::Info,
                "Nothing is waiting for an answer from you. Send /help to see what I can do.",
            )),
            // In a group, chatter that answers nothing gets no reply.
            [] => None,
            [question] => Some(self.plain_answer(question).await),
            several => Some(Reply::new(
                Tone::Info,
                format!(
                    "Several questions are waiting for you; answer one with its command:\n{}",
                    pending_list(several)
                ),
            )),
        }
    }

    /// Questions "waiting for" the sender: ones naming them as an answerer, and, in a private
    /// chat, ones open to anyone there. In groups, an open question is not taken to wait for
    /// everyone, or every remark would answer it.
    async fn waiting_for(&self) -> Result<Vec<Question>, Error> {
        let mut questions = self
            .bridge
            .answerable(&self.message.sender, &self.message.chat)
            .await?;
        questions.retain(|q| {
            q.answerers.contains(&self.message.sender)
                || (q.answerers.is_empty() && self.message.private)
        });
        Ok(questions)
    }

    async fn plain_answer(&self, question: &Question) -> Reply {
        let transition = match question.read_typed(&self.message.text) {
            Ok(transition) => transition,
            Err(error) => {
                let choices: String = question
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, label)| format!("\n{}. {label}", i + 1))
                    .collect();
                let reply = Reply::refused(format!(
                    "That doesn't answer \"{}\". {error}{choices}",
                    render::shorten(&question.prompt, 80)
                ));
                self.audit_refused(Some(question), &reply.text).await;
                return reply.about(question.clone());
            }
        };
        match self.resolve_for(question, transition).await {
            Ok(reply) => reply,
            Err(error) => {
                let reply = refusal(error);
                self.audit_refused(Some(question), &reply.text).await;
                reply
            }
        }
    }

    /// Records a refused attempt to answer `question` (not for previews, which change nothing
    /// and are followed by the real attempt).
    async fn audit_refused(&self, question: Option<&Question>, reason: &str) {
        if !self.preview {
            let id = question.map(|q| q.id.to_string());
            self.bridge
                .audit_refusal(&actor_of(self.message), id, question, reason)
                .await;
        }
    }
}

fn pending_list(questions: &[Question]) -> String {
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

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
