//! The command grammar every text surface and every button speaks.
//!
//! A button's payload is the very command a person would type (`/answer k3f9x2m8qa 2`), so a
//! plain-text channel works exactly like Discord or Telegram, and an adapter needs no routing of its
//! own: it hands the text to the bridge. Each command is a small struct with `parse` (from the words
//! after the command name) and `Display` (back to the text), and `parse(display(c)) == c`.
//!
//! Payloads carry option *numbers*, not labels, so they stay short whatever the labels are: the
//! longest payload any question can produce fits Telegram's 64-byte `callback_data` and Discord's
//! 100-character `custom_id` (see the property test at the bottom).

use crate::Error;
pub use crate::fill::StepCommand;
use crate::id::{IdRef, QuestionId};
pub use crate::numbers::{numbers_text, parse_numbers};
use regex::Regex;
use std::fmt;
use std::sync::LazyLock;

/// Telegram's limit on `callback_data`, in bytes.
pub const TELEGRAM_PAYLOAD_BYTES: usize = 64;
/// Discord's limit on `custom_id`, in characters.
pub const DISCORD_PAYLOAD_CHARS: usize = 100;

static COMMAND_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^/([A-Za-z][A-Za-z0-9_]{0,31})(?:@([A-Za-z0-9_]{1,64}))?(?:\s+([\s\S]*))?$")
        .expect("the command regex is valid")
});

/// A parsed command line: the command and, for Telegram's `/answer@BotName` form, the bot it is
/// addressed to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandLine {
    /// What to do.
    pub command: Command,
    /// `BotName` in `/cmd@BotName`; a bot ignores commands addressed to another bot.
    pub addressed_to: Option<String>,
}

impl CommandLine {
    /// Parses a message. `Ok(None)` means it is not a command at all (plain text).
    pub fn parse(text: &str) -> Result<Option<CommandLine>, Error> {
        let text = text.trim();
        if !text.starts_with('/') {
            return Ok(None);
        }
        let Some(captures) = COMMAND_LINE.captures(text) else {
            // "/ hello", "/123": a slash but no command name; treat it as plain text.
            return Ok(None);
        };
        let name = captures[1].to_lowercase();
        let addressed_to = captures.get(2).map(|m| m.as_str().to_owned());
        let args = captures.get(3).map_or("", |m| m.as_str().trim());
        let command = Command::parse(&name, args)?;
        Ok(Some(CommandLine {
            command,
            addressed_to,
        }))
    }

    /// True when the command is for the bot called `bot_username` (or for any bot).
    pub fn is_for(&self, bot_username: Option<&str>) -> bool {
        match (&self.addressed_to, bot_username) {
            (Some(to), Some(me)) => to.eq_ignore_ascii_case(me),
            _ => true,
        }
    }
}

/// True when `text` is a command addressed to a bot other than `me` (`/answer@OtherBot ...`):
/// in a group with several bots, each must ignore the others' commands.
pub fn addressed_elsewhere(text: &str, me: &str) -> bool {
    match CommandLine::parse(text) {
        Ok(Some(line)) => !line.is_for(Some(me)),
        _ => false,
    }
}

/// Every command askbridge understands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `/answer <id> <choice>`.
    Answer(AnswerCommand),
    /// `/decline <id> [message]`.
    Decline(DeclineCommand),
    /// `/pick <id> <numbers>|none`: a multi-choice selection shown before it is submitted.
    Pick(PickCommand),
    /// `/show <id>`: the whole question, detail included.
    Show(ShowCommand),
    /// `/back [id]` or `/skip [id]`: a move while filling a form.
    Step(StepCommand),
    /// `/pending`: what the sender may answer here.
    Pending,
    /// `/run <flow> [input]`: starts a flow.
    Run(RunCommand),
    /// `/rules` lists "always allow" rules; `/rules revoke <id>` revokes one.
    Rules(RulesCommand),
    /// `/help` or `/start`.
    Help,
    /// `/whoami`: the sender's identity and the chat's target, for configuring answerers and
    /// targets.
    WhoAmI,
    /// Any other `/name args`: a flow's command, or unknown.
    Other(OtherCommand),
}

impl Command {
    fn parse(name: &str, args: &str) -> Result<Command, Error> {
        Ok(match name {
            "answer" => Command::Answer(AnswerCommand::parse(args)?),
            "decline" => Command::Decline(DeclineCommand::parse(args)?),
            "pick" => Command::Pick(PickCommand::parse(args)?),
            "show" => Command::Show(ShowCommand::parse(args)?),
            "back" => Command::Step(StepCommand::parse(args, true)?),
            "skip" => Command::Step(StepCommand::parse(args, false)?),
            "pending" => Command::Pending,
            "run" => Command::Run(RunCommand::parse(args)?),
            "rules" => Command::Rules(RulesCommand::parse(args)?),
            "help" | "start" => Command::Help,
            "whoami" => Command::WhoAmI,
            _ => Command::Other(OtherCommand {
                name: name.to_owned(),
                args: args.to_owned(),
            }),
        })
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Answer(c) => c.fmt(f),
            Command::Decline(c) => c.fmt(f),
            Command::Pick(c) => c.fmt(f),
            Command::Show(c) => c.fmt(f),
            Command::Step(c) => c.fmt(f),
            Command::Pending => f.write_str("/pending"),
            Command::Run(c) => c.fmt(f),
            Command::Rules(c) => c.fmt(f),
            Command::Help => f.write_str("/help"),
            Command::WhoAmI => f.write_str("/whoami"),
            Command::Other(c) => c.fmt(f),
        }
    }
}

/// Splits `"<id> <rest>"`.
fn id_and_rest<'a>(args: &'a str, usage: &'static str) -> Result<(IdRef, &'a str), Error> {
    let (id, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
    if id.is_empty() {
        return Err(Error::Usage(usage));
    }
    Ok((IdRef::parse(id)?, rest.trim()))
}

/// `/answer <id> <choice>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnswerCommand {
    /// The question (or a prefix of its id).
    pub id: IdRef,
    /// The choice as typed; the question decides what it means.
    pub choice: String,
}

impl AnswerCommand {
    const USAGE: &'static str = "/answer <id> <choice>, e.g. /answer k3f9x2m8qa 2";

    fn parse(args: &str) -> Result<Self, Error> {
        let (id, choice) = id_and_rest(args, Self::USAGE)?;
        if choice.is_empty() {
            return Err(Error::Usage(Self::USAGE));
        }
        Ok(AnswerCommand {
            id,
            choice: choice.to_owned(),
        })
    }

    /// The command choosing option numbers `numbers` (1-based) of question `id`.
    pub fn numbers(id: &QuestionId, numbers: &[usize]) -> Self {
        AnswerCommand {
            id: IdRef::Full(id.clone()),
            choice: numbers_text(numbers),
        }
    }

    /// The command answering question `id` with the word `word` (`yes`, `once`...).
    pub fn word(id: &QuestionId, word: &str) -> Self {
        AnswerCommand {
            id: IdRef::Full(id.clone()),
            choice: word.to_owned(),
        }
    }
}

impl fmt::Display for AnswerCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/answer {} {}", self.id, self.choice)
    }
}

/// `/decline <id> [message]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclineCommand {
    /// The question.
    pub id: IdRef,
    /// Why, for the asker.
    pub message: Option<String>,
}

impl DeclineCommand {
    const USAGE: &'static str = "/decline <id> [message]";

    fn parse(args: &str) -> Result<Self, Error> {
        let (id, message) = id_and_rest(args, Self::USAGE)?;
        Ok(DeclineCommand {
            id,
            message: (!message.is_empty()).then(|| message.to_owned()),
        })
    }

    /// The decline button's command for question `id`.
    pub fn button(id: &QuestionId) -> Self {
        DeclineCommand {
            id: IdRef::Full(id.clone()),
            message: None,
        }
    }
}

impl fmt::Display for DeclineCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/decline {}", self.id)?;
        if let Some(message) = &self.message {
            write!(f, " {message}")?;
        }
        Ok(())
    }
}

/// `/pick <id> <numbers>`: shows a multi-choice selection without submitting it (Telegram's toggle
/// buttons carry the selection they lead to).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickCommand {
    /// The question.
    pub id: IdRef,
    /// Selected option numbers, ascending; empty for none.
    pub numbers: Vec<usize>,
}

impl PickCommand {
    const USAGE: &'static str = "/pick <id> <numbers>|none, e.g. /pick k3f9x2m8qa 1,3";

    fn parse(args: &str) -> Result<Self, Error> {
        let (id, rest) = id_and_rest(args, Self::USAGE)?;
        let numbers = match rest {
            "none" => Vec::new(),
            _ => parse_numbers(rest).ok_or(Error::Usage(Self::USAGE))?,
        };
        Ok(PickCommand { id, numbers })
    }
}

impl fmt::Display for PickCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let selection = if self.numbers.is_empty() {
            "none".to_owned()
        } else {
            numbers_text(&self.numbers)
        };
        write!(f, "/pick {} {selection}", self.id)
    }
}

/// `/show <id>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShowCommand {
    /// The question.
    pub id: IdRef,
}

impl ShowCommand {
    fn parse(args: &str) -> Result<Self, Error> {
        let (id, _) = id_and_rest(args, "/show <id>")?;
        Ok(ShowCommand { id })
    }
}

impl fmt::Display for ShowCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/show {}", self.id)
    }
}

/// `/run <flow> [input]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunCommand {
    /// The flow's name, lower-cased.
    pub flow: String,
    /// The rest of the line.
    pub input: String,
}

impl RunCommand {
    const USAGE: &'static str = "/run <flow> [input], e.g. /run deploy staging";

    fn parse(args: &str) -> Result<Self, Error> {
        let (flow, input) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
        if flow.is_empty() {
            return Err(Error::Usage(Self::USAGE));
        }
        Ok(RunCommand {
            flow: flow.to_lowercase(),
            input: input.trim().to_owned(),
        })
    }
}

impl fmt::Display for RunCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/run {}", self.flow)?;
        if !self.input.is_empty() {
            write!(f, " {}", self.input)?;
        }
        Ok(())
    }
}

/// `/rules [revoke <id>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulesCommand {
    /// The rule to revoke; `None` lists them.
    pub revoke: Option<String>,
}

impl RulesCommand {
    const USAGE: &'static str = "/rules, or /rules revoke <rule id>";

    fn parse(args: &str) -> Result<Self, Error> {
        let words: Vec<&str> = args.split_whitespace().collect();
        match words.as_slice() {
            [] => Ok(RulesCommand { revoke: None }),
            ["revoke", id] => Ok(RulesCommand {
                revoke: Some((*id).to_owned()),
            }),
            _ => Err(Error::Usage(Self::USAGE)),
        }
    }
}

impl fmt::Display for RulesCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.revoke {
            Some(id) => write!(f, "/rules revoke {id}"),
            None => f.write_str("/rules"),
        }
    }
}

/// A command this grammar does not know; the bridge may know it as a flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtherCommand {
    /// Lower-cased name without the slash.
    pub name: String,
    /// Everything after the name.
    pub args: String,
}

impl fmt::Display for OtherCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}", self.name)?;
        if !self.args.is_empty() {
            write!(f, " {}", self.args)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Command {
        CommandLine::parse(text).unwrap().unwrap().command
    }

    fn id() -> QuestionId {
        QuestionId::parse("k3f9x2m8qa").unwrap()
    }

    #[test]
    fn plain_text_is_not_a_command() {
        assert_eq!(CommandLine::parse("hello").unwrap(), None);
        assert_eq!(CommandLine::parse("2").unwrap(), None);
        assert_eq!(CommandLine::parse("/ 2").unwrap(), None);
    }

    #[test]
    fn answer_with_choice_text() {
        let Command::Answer(answer) = parse("/answer k3f9x2m8qa use date-fns please") else {
            panic!()
        };
        assert_eq!(answer.id, IdRef::Full(id()));
        assert_eq!(answer.choice, "use date-fns please");
    }

    #[test]
    fn prefixes_bot_names_and_case() {
        let line = CommandLine::parse("/ANSWER@AskBot K3F9 2")
            .unwrap()
            .unwrap();
        assert_eq!(line.addressed_to.as_deref(), Some("AskBot"));
        assert!(line.is_for(Some("askbot")));
        assert!(!line.is_for(Some("OtherBot")));
        assert!(line.is_for(None));
        assert!(addressed_elsewhere("/answer@OtherBot k3f9 2", "AskBot"));
        assert!(!addressed_elsewhere("/answer@askbot k3f9 2", "AskBot"));
        assert!(!addressed_elsewhere("/answer k3f9 2", "AskBot"));
        assert!(!addressed_elsewhere("hello", "AskBot"));
        let Command::Answer(answer) = line.command else {
            panic!()
        };
        assert_eq!(answer.id, IdRef::Prefix("k3f9".into()));
    }

    #[test]
    fn usage_errors_are_specific() {
        for bad in [
            "/answer",
            "/answer k3f9x2m8qa",
            "/decline",
            "/pick k3f9x2m8qa x",
        ] {
            assert!(
                matches!(CommandLine::parse(bad), Err(Error::Usage(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            CommandLine::parse("/answer k3 1"),
            Err(Error::PrefixTooShort { .. })
        ));
        assert!(matches!(
            CommandLine::parse("/answer what?! 1"),
            Err(Error::BadId(_))
        ));
    }

    #[test]
    fn decline_pending_help_and_others() {
        assert_eq!(
            parse("/decline k3f9x2m8qa not today"),
            Command::Decline(DeclineCommand {
                id: IdRef::Full(id()),
                message: Some("not today".into())
            })
        );
        assert_eq!(parse("/pending"), Command::Pending);
        assert_eq!(parse("/start"), Command::Help);
        assert_eq!(
            parse("/deploy staging now"),
            Command::Other(OtherCommand {
                name: "deploy".into(),
                args: "staging now".into()
            })
        );
    }

    #[test]
    fn every_command_round_trips_through_its_text() {
        let commands = [
            Command::Answer(AnswerCommand::numbers(&id(), &[1, 2, 3, 7])),
            Command::Answer(AnswerCommand::word(&id(), "yes")),
            Command::Decline(DeclineCommand::button(&id())),
            Command::Decline(DeclineCommand {
                id: IdRef::Full(id()),
                message: Some("too risky".into()),
            }),
            Command::Pick(PickCommand {
                id: IdRef::Full(id()),
                numbers: vec![],
            }),
            Command::Pick(PickCommand {
                id: IdRef::Full(id()),
                numbers: vec![2, 4],
            }),
            Command::Show(ShowCommand {
                id: IdRef::Full(id()),
            }),
            Command::Pending,
            Command::Help,
            Command::WhoAmI,
            Command::Run(RunCommand {
                flow: "deploy".into(),
                input: "staging now".into(),
            }),
            Command::Rules(RulesCommand { revoke: None }),
            Command::Rules(RulesCommand {
                revoke: Some("rule-k3f9x2m8qa".into()),
            }),
        ];
        for command in commands {
            assert_eq!(parse(&command.to_string()), command);
        }
    }
}
