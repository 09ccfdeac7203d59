//! What a reply's own text stands for, as the command every surface's grammar reads: mail has
//! no buttons, and people write around their answer (a greeting, a second paragraph), so which
//! part of the text is the answer is decided here, once, for the reply path and the one-click
//! page alike.

use askbridge_core::command::{Command, CommandLine};
use askbridge_core::{Decision, Kind, Question};

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

/// True when `command` (a reply's first line, or a link's command) begins an approval's `edit`
/// or `respond`, whose arguments or text may go on past that line.
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
    let word = answer
        .choice
        .split_whitespace()
        .find(|w| !w.starts_with('#'));
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
