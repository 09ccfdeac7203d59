//! What a message from a person does: the meaning of the command grammar.
//!
//! Every text surface (console, Telegram, Discord, anything plain-text) and every button ends
//! here, so a tap, a typed `/answer` and a plain reply take the same path. A message is handled in
//! two steps ([`Inbox::prepare`], then [`Prepared::commit`]): the first parses it once, reads the
//! question once and checks the sender once (the resolver's `check`), takes the delivery in hand
//! beside that reading, and predicts the reply; the second drops a duplicate delivery, claims
//! with that same reading (the resolver's `commit`), and records a refusal (its `conclude`). Bad
//! input of any kind gets one polite line back and changes nothing.
//!
//! A tap or an `/answer` naming a question this process remembers as asked (`recent.rs`) needs
//! no read: it is checked against that copy, as the HTTP API's replies are, and its delivery is
//! taken in hand in the same round trip to the store as its claim (`claims.rs`), so that the
//! answer is one round trip, not two.

use super::Bridge;
use super::resolve::{Attempt, Checked, Reading, Refusal, Said};
use super::roles::InboxRoles;
use super::runner::Storing;
use crate::Error;
use crate::store::ListFilter;
use askbridge_core::command::{Command, CommandLine};
use askbridge_core::error::Chain;
use askbridge_core::fill::Step;
use askbridge_core::run::Origin;
use askbridge_core::{
    Actor, IdRef, Identity, Inbound, Inbox, Millis, Prepared, Question, Reply, RuleId, Target, Tone,
};
use async_trait::async_trait;
use commands::{Turn, done, refusal_reply};
use delivery::Taking;
use forms::Filling;

mod claims;
mod commands;
mod delivery;
mod forms;
mod plain;
mod respond;

/// What a prepared message will do when committed. One is made and moved once per message, so
/// the size of its largest variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
enum Plan {
    /// Nothing but reply (help, a list, a refusal that is not an attempt on a question).
    Reply(Option<Reply>),
    /// Claim what was checked.
    Claim { checked: Checked, attempted: String },
    /// An attempt on a question, refused: recorded in the audit trail when committed.
    Refuse {
        refusal: Refusal,
        attempted: Option<String>,
        reply: Reply,
    },
    /// Revoke an "always allow" rule.
    Revoke(RuleId),
    /// Start a flow.
    Start {
        flow: String,
        input: String,
        origin: Origin,
    },
    /// A step in filling a form in chat.
    Fill(Filling),
    /// Ask for the text of a response (the Respond button): the sender's next message is it.
    Respond(Question),
}

#[async_trait]
impl Inbox for Bridge {
    async fn prepare(&self, message: Inbound) -> Prepared {
        let turn = Turn {
            bridge: self.clone(),
            actor: actor_of(&message),
            message,
        };
        // The delivery is taken in hand beside the reading of what it asks (one round trip to
        // the store before the claim rather than two), or with the claim when nothing is read.
        let (plan, taken) = match turn.delivery_key() {
            None => (turn.plan().await, Taking::Untracked),
            Some(key) if turn.remembered().is_some() => (turn.plan().await, Taking::Later(key)),
            Some(key) => {
                let (plan, taken) = tokio::join!(turn.plan(), turn.take_in_hand(&key));
                (plan, Taking::Taken(key, taken))
            }
        };
        let preview = turn.preview(&plan);
        Prepared::new(
            preview,
            Box::pin(async move { turn.commit(plan, taken).await }),
        )
    }

    async fn pending_for(&self, sender: &Identity, chat: &Target) -> Vec<Question> {
        match answerable(self, sender, chat).await {
            Ok(questions) => questions,
            Err(error) => {
                tracing::warn!(error = %Chain(&error), "cannot list pending questions");
                Vec::new()
            }
        }
    }

    async fn current(&self, id: &askbridge_core::QuestionId) -> Option<Question> {
        self.inbox().store.questions.get(id).await.ok().flatten()
    }
}

/// The inbox's part of the bridge: its store roles (the commands and forms of a message are a
/// [`Turn`]'s, in this folder).
pub(super) struct Messages {
    store: InboxRoles,
}

impl Messages {
    pub(super) fn new(store: InboxRoles) -> Self {
        Messages { store }
    }
}

/// Pending questions shown in `chat` that `sender` may answer.
async fn answerable(
    bridge: &Bridge,
    sender: &Identity,
    chat: &Target,
) -> Result<Vec<Question>, Error> {
    let filter = ListFilter {
        target: Some(chat.clone()),
        ..ListFilter::pending()
    };
    let mut questions = bridge.list(&filter).await?;
    let now = Millis::now();
    questions.retain(|q| q.may_answer(sender, chat, now));
    Ok(questions)
}

fn actor_of(message: &Inbound) -> Actor {
    Actor::new(message.sender.clone(), message.via.clone()).named(message.sender_name.clone())
}

impl Turn {
    /// Reads the message and everything it is about; changes nothing.
    async fn plan(&self) -> Plan {
        let line = match CommandLine::parse(&self.message.text) {
            Err(error) => return Plan::Reply(Some(Reply::refused(error.to_string()))),
            Ok(None) => return self.plain_message().await,
            Ok(Some(line)) => line,
        };
        let result = match line.command {
            Command::Answer(command) => {
                let said = Said::Typed(command.choice);
                return self.attempt(&command.id, said).await;
            }
            Command::Decline(command) => {
                let said = Said::Decline(command.message);
                return self.attempt(&command.id, said).await;
            }
            Command::Rules(command) => self.rules_command(command).await,
            Command::Pick(command) => self.pick_command(command).await.map(Plan::reply),
            Command::Show(command) => self.show_command(command).await.map(Plan::reply),
            Command::Step(command) => self.step_command(command).await.map(Plan::Fill),
            Command::Pending => self.pending_command().await.map(Plan::reply),
            Command::Help => Ok(Plan::reply(Reply::new(Tone::Info, self.help()))),
            Command::Run(command) => self.start_flow(&command.flow, &command.input),
            Command::Other(other) if self.has_flow(&other.name) => {
                self.start_flow(&other.name, &other.args)
            }
            Command::WhoAmI => Ok(Plan::reply(Reply::new(
                Tone::Info,
                format!(
                    "You are {} and this chat is {}. Use them as answerers and targets.",
                    self.message.sender, self.message.chat
                ),
            ))),
            Command::Other(other) => Ok(Plan::reply(Reply::refused(format!(
                "Unknown command /{}. Send /help for the commands.",
                other.name
            )))),
        };
        result.unwrap_or_else(|error| Plan::Reply(Some(refusal_reply(&error))))
    }

    /// The question a typed id or prefix names, and the claim the sender's words make on it.
    /// Prefixes are looked up among the questions the sender may answer in this chat; that list
    /// is the one read of the question.
    async fn attempt(&self, id: &IdRef, said: Said) -> Plan {
        let attempted = id.to_string();
        let found = match id {
            // The id is in hand: no need to read the message again.
            IdRef::Full(id) => Ok((id.clone(), self.remembered_as(id))),
            IdRef::Prefix(_) => answerable(&self.bridge, &self.message.sender, &self.message.chat)
                .await
                .and_then(|candidates| {
                    let chosen = id.resolve(candidates.iter().map(|q| &q.id))?;
                    let known = candidates.into_iter().find(|q| q.id == chosen);
                    Ok((chosen, known))
                }),
        };
        let (id, known) = match found {
            Ok(found) => found,
            Err(error) => return self.refuse(Refusal::from(error), Some(attempted), None),
        };
        let attempt = Attempt {
            id,
            said,
            actor: self.actor.clone(),
            chat: self.message.chat.clone(),
        };
        match self
            .bridge
            .resolver()
            .check(&self.bridge, &attempt, known)
            .await
        {
            Ok(Reading::Claim(checked)) => Plan::Claim { checked, attempted },
            // On a form, `/answer <id> <value>` (or a field's button) is the field asked now.
            Ok(Reading::Field { question, text, .. }) => self.fill_field(question, text).await,
            // A bare `respond` asks for the text rather than being refused.
            Err(refusal) => match &attempt.said {
                Said::Typed(text) => self.response_asked(&refusal, text),
                _ => None,
            }
            .unwrap_or_else(|| self.refuse(refusal, Some(attempted), None)),
        }
    }

    /// `text` as the value of the field `question` (a form) asks now.
    async fn fill_field(&self, question: Question, text: String) -> Plan {
        self.fill(question, Step::Value(text))
            .await
            .map(Plan::Fill)
            .unwrap_or_else(|error| Plan::Reply(Some(refusal_reply(&error))))
    }

    /// A refused attempt, with the line the sender gets (`reply`, or the error's own).
    fn refuse(&self, refusal: Refusal, attempted: Option<String>, reply: Option<Reply>) -> Plan {
        let reply = reply.unwrap_or_else(|| refusal_reply(&refusal.error));
        Plan::Refuse {
            refusal,
            attempted,
            reply,
        }
    }

    /// What the reply will be, as a tap's toast shows it.
    fn preview(&self, plan: &Plan) -> Option<Reply> {
        match plan {
            Plan::Reply(reply) => reply.clone(),
            Plan::Refuse { reply, .. } => Some(reply.clone()),
            Plan::Claim { checked, .. } => Some(match checked.predicted() {
                Ok(resolved) => done(resolved),
                Err(error) => refusal_reply(&error),
            }),
            Plan::Revoke(id) => Some(Reply::new(Tone::Info, format!("Revoking rule {id}…"))),
            Plan::Start { flow, .. } => Some(started(flow)),
            Plan::Fill(filling) => Some(filling.preview()),
            Plan::Respond(question) => Some(Turn::response_prompt(question)),
        }
    }

    /// Does what was planned, once per delivery. The delivery was taken in hand (`taking`: its
    /// key, and what the store said) before it is carried out, in one step, so that a delivery
    /// twice at once (a platform's retry racing the first) is carried out once and answered
    /// once; it is settled after, so that a process killed in between leaves only a lease, and
    /// the delivery's next coming (the platform's retry, a mail still in the inbox) is handled
    /// once the lease lapses. A claim planned without a read is sent with the taking in hand.
    async fn commit(self, plan: Plan, taking: Taking) -> Option<Reply> {
        let taken = match (plan, taking) {
            (Plan::Claim { checked, attempted }, Taking::Later(key)) => {
                return self.claim_in_hand(&key, checked, attempted).await;
            }
            (plan, Taking::Later(key)) => {
                let taken = self.take_in_hand(&key).await;
                (plan, Some((key, taken)))
            }
            (plan, Taking::Taken(key, taken)) => (plan, Some((key, taken))),
            (plan, Taking::Untracked) => (plan, None),
        };
        let (plan, key) = match taken {
            (plan, Some((key, sighting))) => {
                if self.handled_already(&key, sighting).await {
                    return None;
                }
                (plan, Some(key))
            }
            (plan, None) => (plan, None),
        };
        let (reply, recorded) = self.carry_out(plan).await;
        if let Some(key) = &key {
            self.settle_delivery(key, recorded).await;
        }
        reply
    }

    /// Carries out `plan`: the reply, and false when the store failed to record what the
    /// delivery asked for (its next coming must then be handled, not dropped).
    async fn carry_out(&self, plan: Plan) -> (Option<Reply>, bool) {
        let reply = match plan {
            Plan::Reply(reply) => reply,
            Plan::Claim { checked, attempted } => {
                let result = self.claim(checked).await;
                let (reply, recorded) = self.concluded(result, attempted).await;
                return (Some(reply), recorded);
            }
            Plan::Refuse {
                refusal,
                attempted,
                reply,
            } => {
                let resolver = self.bridge.resolver();
                let _ = resolver
                    .conclude(&self.actor, attempted, Err(refusal))
                    .await;
                Some(reply)
            }
            Plan::Fill(filling) => Some(self.commit_fill(filling).await),
            Plan::Respond(question) => Some(self.start_response(question).await),
            Plan::Revoke(id) => Some(match self.bridge.revoke_rule(&id, &self.actor).await {
                Ok(()) => Reply::new(Tone::Done, format!("✓ Rule {id} revoked.")),
                Err(error) => refusal_reply(&error),
            }),
            Plan::Start {
                flow,
                input,
                origin,
            } => Some(
                match self
                    .bridge
                    .start_run(&flow, &input, origin, Storing::AtStart)
                    .await
                {
                    Ok(_) => started(&flow),
                    Err(error) => refusal_reply(&error),
                },
            ),
        };
        (reply, true)
    }

    fn has_flow(&self, name: &str) -> bool {
        self.bridge
            .runner()
            .is_some_and(|runner| runner.flows().iter().any(|(flow, _)| flow == name))
    }

    /// `/run <flow> [input]` or `/<flow> [input]`: starts a run reporting in this chat, whose
    /// questions only the sender may answer (unless the flow says otherwise).
    fn start_flow(&self, flow: &str, input: &str) -> Result<Plan, Error> {
        if !self.has_flow(flow) {
            return Err(Error::UnknownFlow(flow.to_owned()));
        }
        let starters = &self.bridge.options().flow_starters;
        if !starters.is_empty() && !starters.contains(&self.message.sender) {
            return Ok(Plan::reply(Reply::refused(
                "You can't start flows here (ASKBRIDGE_FLOW_STARTERS).",
            )));
        }
        Ok(Plan::Start {
            flow: flow.to_owned(),
            input: input.to_owned(),
            origin: Origin {
                chat: Some(self.message.chat.clone()),
                user: self.message.sender.clone(),
                user_name: self.message.sender_name.clone(),
            },
        })
    }

    /// `/rules revoke <id>` revokes when committed; `/rules` lists now.
    async fn rules_command(
        &self,
        command: askbridge_core::command::RulesCommand,
    ) -> Result<Plan, Error> {
        if !self.bridge.is_approver(&self.message.sender) {
            return Ok(Plan::reply(Reply::refused(
                "Only approvers (ASKBRIDGE_APPROVERS) may see and revoke rules.",
            )));
        }
        match command.revoke {
            Some(id) => Ok(Plan::Revoke(RuleId::new(id))),
            None => self.rules_list().await.map(Plan::reply),
        }
    }
}

impl Plan {
    fn reply(reply: Reply) -> Plan {
        Plan::Reply(Some(reply))
    }
}

fn started(flow: &str) -> Reply {
    Reply::new(Tone::Info, format!("▶ {flow} started."))
}
