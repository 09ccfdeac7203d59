//! What a reply's own text stands for, as the command every surface's grammar reads: mail has
//! no buttons, and people write around their answer (a greeting, a second paragraph), so which
//! part of the text is the answer is decided here, once, for the reply path and the one-click
//! page alike.

use askbridge_core::command::{Command, CommandLine};
use askbridge_core::{Decision, Kind, Question, Reply, Tone};

/// The command a reply's text stands for on `question`: a command as written; a choice read from
/// the first line; free text (an open question, a custom answer) whole, and so is an approval's
/// edit or response begun on the first line (JSON over several lines, a response of several
/// paragraphs).
pub fn command_for(question: &Question, text: &str) -> String {
    let choice = match question.kind {
        Kind::Ask => !question.options.is_empty() && !question.allow_custom,
        Kind::Confirm | Kind::Approval | Kind::Form => true,
    };
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let first_command = command_text(&question.id, first);
    if (choice || first.trim_start().starts_with('/')) && !runs_on(question, &first_command) {
        first_command
    } else {
        command_text(&question.id, text)
    }
}

/// The commands a reply's text stands for: on a batch of actions, one per line that decides
/// (`/answer <id> 2 reject too broad`, `2 reject too broad`, `all once`), an edit's JSON or a
/// response running on over the lines after it up to a blank line, other lines (a greeting, a
/// signature) left out; on any other question, or a batch reply with no such line, the one [`command_for`].
pub fn commands_for(question: &Question, text: &str) -> Vec<String> {
    if !question.is_batch() {
        return vec![command_for(question, text)];
    }
    let mut commands: Vec<String> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or_default();
        let begins = first.starts_with('/')
            || first.eq_ignore_ascii_case("all")
            || first.parse::<usize>().is_ok();
        if begins {
            let command = command_text(&question.id, line);
            open = runs_on(question, &command);
            commands.push(command);
        } else if line.trim().is_empty() {
            // A blank line ends an edit's JSON or a response: a greeting or signature follows.
            open = false;
        } else if open && let Some(command) = commands.last_mut() {
            command.push('\n');
            command.push_str(line);
        }
    }
    for command in &mut commands {
        *command = command.trim_end().to_owned();
    }
    if commands.is_empty() {
        commands.push(command_for(question, text));
    }
    commands
}

/// The one answer a reply mail gets for the commands its lines made: a single command's own, or
/// each command's line then its answer, refused when any was (the mail then says how to answer).
pub(crate) fn joined(mut answers: Vec<(String, Reply)>) -> Option<Reply> {
    if answers.len() < 2 {
        return answers.pop().map(|(_, answer)| answer);
    }
    let refused = answers.iter().any(|(_, a)| a.tone == Tone::Refused);
    let text: Vec<String> = answers
        .iter()
        .map(|(command, answer)| {
            format!(
                "> {}\n{}",
                command.lines().next().unwrap_or_default(),
                answer.text
            )
        })
        .collect();
    let (_, last) = answers.pop()?;
    Some(Reply {
        text: text.join("\n\n"),
        tone: if refused { Tone::Refused } else { last.tone },
        ..last
    })
}

/// True when `command` (a reply's first line, or a link's command) begins an approval's `edit`
/// or `respond`, whose arguments or text may go on past that line. On a batch, the words after
/// the action's number (or `all`).
pub(crate) fn runs_on(question: &Question, command: &str) -> bool {
    if question.kind != Kind::Approval {
        return false;
    }
    let Ok(Some(CommandLine {
        command: Command::Answer(answer),
        ..
    })) = CommandLine::parse(command)
    else {
        return false;
    };
    let mut words = answer
        .choice
        .split_whitespace()
        .filter(|w| !w.starts_with('#'));
    if question.is_batch() {
        words.next();
    }
    let word = words.next();
    word.and_then(Decision::parse)
        .is_some_and(Decision::carries_words)
}

pub(crate) fn command_text(id: &askbridge_core::QuestionId, text: &str) -> String {
    let text = text.trim();
    if text.starts_with('/') {
        text.to_owned()
    } else {
        format!("/answer {id} {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::question::DEFAULT_TIMEOUT;
    use askbridge_core::{Action, Millis, NewQuestion, QuestionId};

    fn question(request: NewQuestion) -> Question {
        request
            .session("s")
            .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
            .unwrap()
    }

    fn approval() -> Question {
        let mut request = NewQuestion::ask("Deploy?")
            .approve(Action::new("deploy", Default::default()))
            .allow([
                Decision::Once,
                Decision::Edit,
                Decision::Respond,
                Decision::Reject,
            ]);
        request.answerers = vec!["email:a@b.c".into()];
        question(request)
    }

    #[test]
    fn a_choice_is_read_from_the_first_line() {
        let q = approval();
        let id = &q.id;
        assert_eq!(
            command_for(&q, "once\n\nthanks"),
            format!("/answer {id} once")
        );
        assert_eq!(
            command_for(&q, "reject not today\nsecond line"),
            format!("/answer {id} reject not today")
        );
    }

    #[test]
    fn each_line_of_a_reply_to_a_batch_decides_its_action() {
        let actions = (1..=3).map(|n| {
            let mut item = askbridge_core::batch::BatchAction::new(Action::new(
                format!("deploy-{n}"),
                Default::default(),
            ));
            item.allowed = vec![Decision::Once, Decision::Edit, Decision::Reject];
            item
        });
        let q = question(NewQuestion::new("s", "Three?").approve_all(actions));
        let id = &q.id;
        let reply = format!(
            "Hi,\n\n1 once\n/answer {id} 2 reject too broad\n3 edit {{\"replicas\":\n 5}}\n\nThanks"
        );
        assert_eq!(
            commands_for(&q, &reply),
            [
                format!("/answer {id} 1 once"),
                format!("/answer {id} 2 reject too broad"),
                format!("/answer {id} 3 edit {{\"replicas\":\n 5}}"),
            ]
        );
        assert_eq!(
            commands_for(&q, "ALL reject not now\n-- \nBob"),
            [format!("/answer {id} ALL reject not now")]
        );
        // No line decides: the one command, which the bridge refuses with the usage.
        assert_eq!(
            commands_for(&q, "yes please"),
            [format!("/answer {id} yes please")]
        );
        let link = format!("/answer {id} 2 edit #{}", q.batch_short_digest());
        assert!(runs_on(&q, &link));
        assert!(!runs_on(&q, &format!("/answer {id} 2 once")));
    }

    #[test]
    fn an_edit_or_a_response_runs_on_past_the_first_line() {
        let q = approval();
        let id = &q.id;
        assert_eq!(
            command_for(&q, "edit {\"replicas\":\n 3}"),
            format!("/answer {id} edit {{\"replicas\":\n 3}}")
        );
        assert_eq!(
            command_for(&q, "Respond first.\n\nSecond."),
            format!("/answer {id} Respond first.\n\nSecond.")
        );
        let typed = format!("/answer {id} #abc respond one\ntwo");
        assert_eq!(command_for(&q, &typed), typed);
        let confirm = question(NewQuestion::confirm("Go?"));
        assert_eq!(
            command_for(&confirm, "respond yes\nno"),
            format!("/answer {} respond yes", confirm.id)
        );
    }
}
