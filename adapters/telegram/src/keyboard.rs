//! The message text and inline keyboard of a question.
//!
//! Buttons come from `askbridge_core::render::buttons`, so their payloads are the plain-text
//! commands and fit the 64-byte `callback_data` limit for every question. One option per row
//! reads best on a phone and leaves room for long labels; labels are shortened on the button and
//! given whole in the text.

use askbridge_core::render::{self, ButtonRole};
use askbridge_core::{Kind, Question};
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};

/// Telegram's limit on a message's text, in characters.
pub(crate) const MESSAGE_LIMIT: usize = 4096;
/// Longest label shown on a button.
const BUTTON_LABEL_CHARS: usize = 40;
/// Room kept for the outcome line when a resolved question's text is written.
const OUTCOME_ROOM: usize = 300;

/// The text of the message showing `question`.
pub fn message_text(question: &Question) -> String {
    let mut text = render::question_text(question, MESSAGE_LIMIT - 200);
    if question.allow_custom && !question.options.is_empty() {
        text.push_str("\nYou may also reply with your own answer.");
    }
    text
}

/// The text replacing the message once `question` is resolved: the question, then the outcome.
pub fn resolved_text(question: &Question) -> String {
    render::resolved_text(question, MESSAGE_LIMIT - OUTCOME_ROOM)
}

/// The inline keyboard for `question` with `selection` (1-based option numbers) chosen.
pub fn keyboard(question: &Question, selection: &[usize]) -> InlineKeyboardMarkup {
    let buttons = render::buttons(question, selection);
    if question.is_batch() {
        return batch_keyboard(buttons);
    }
    keyboard_of(buttons, question.kind, question.multi)
}

/// Most buttons Telegram takes on one inline keyboard.
const MAX_BUTTONS: usize = 100;

/// A batch's keyboard: a row per undecided action with the decisions it offers, then "Approve
/// all" and "Reject all". Past Telegram's 100 buttons, each action keeps its first allowing
/// decision and Reject; the others are typed (the message lists the commands).
fn batch_keyboard(buttons: Vec<render::Button>) -> InlineKeyboardMarkup {
    let buttons = if buttons.len() > MAX_BUTTONS {
        let mut kept: Vec<render::Button> = Vec::new();
        for button in buttons {
            let first_accept = button.role == ButtonRole::Accept
                && !kept
                    .iter()
                    .any(|k| k.number == button.number && k.role == ButtonRole::Accept);
            if button.number.is_none() || button.role == ButtonRole::Refuse || first_accept {
                kept.push(button);
            }
        }
        kept
    } else {
        buttons
    };
    let mut rows: Vec<Vec<InlineKeyboardButton>> = Vec::new();
    let mut row_of = None;
    for button in buttons {
        let tg_button = InlineKeyboardButton::callback(button.label, button.payload);
        match rows.last_mut() {
            Some(row) if row_of == Some(button.number) => row.push(tg_button),
            _ => rows.push(vec![tg_button]),
        }
        row_of = Some(button.number);
    }
    InlineKeyboardMarkup::new(rows)
}

/// The inline keyboard of `buttons` (a form field's, say), laid out as for a question of `kind`.
pub(crate) fn keyboard_of(
    buttons: Vec<render::Button>,
    kind: Kind,
    multi: bool,
) -> InlineKeyboardMarkup {
    let mut rows: Vec<Vec<InlineKeyboardButton>> = Vec::new();
    let mut last_row = Vec::new();
    for button in buttons {
        let label = match button.number {
            Some(_) if multi => render::shorten(&button.label, BUTTON_LABEL_CHARS),
            Some(number) => format!(
                "{number}. {}",
                render::shorten(&button.label, BUTTON_LABEL_CHARS)
            ),
            None => button.label.clone(),
        };
        let tg_button = InlineKeyboardButton::callback(label, button.payload);
        match (button.role, kind) {
            (ButtonRole::Choice { .. }, _) => rows.push(vec![tg_button]),
            // Yes/No and Allow once/Always allow sit side by side; Reject and Decline close.
            (ButtonRole::Accept, Kind::Confirm | Kind::Approval) => last_row.push(tg_button),
            (ButtonRole::Refuse, Kind::Confirm) => last_row.push(tg_button),
            (ButtonRole::Refuse, Kind::Approval) => {
                rows.push(std::mem::take(&mut last_row));
                rows.push(vec![tg_button]);
            }
            (ButtonRole::Accept | ButtonRole::Refuse, Kind::Ask | Kind::Form) => {
                last_row.push(tg_button)
            }
        }
    }
    if !last_row.is_empty() {
        rows.push(last_row);
    }
    InlineKeyboardMarkup::new(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::question::DEFAULT_TIMEOUT;
    use askbridge_core::{Millis, NewQuestion, QuestionId};
    use teloxide::types::InlineKeyboardButtonKind;

    fn rows(markup: &InlineKeyboardMarkup) -> Vec<Vec<(String, String)>> {
        markup
            .inline_keyboard
            .iter()
            .map(|row| {
                row.iter()
                    .map(|b| match &b.kind {
                        InlineKeyboardButtonKind::CallbackData(data) => {
                            (b.text.clone(), data.clone())
                        }
                        other => panic!("unexpected {other:?}"),
                    })
                    .collect()
            })
            .collect()
    }

    fn question(request: NewQuestion) -> Question {
        request
            .session("s")
            .into_question(
                QuestionId::parse("k3f9x2m8qa").unwrap(),
                Millis(0),
                DEFAULT_TIMEOUT,
            )
            .unwrap()
    }

    #[test]
    fn single_choice_has_a_row_per_option_then_decline() {
        let long = "a very long option label that will not fit on a phone button at all";
        let q = question(NewQuestion::ask("Which?").options(["dayjs", long]));
        let rows = rows(&keyboard(&q, &[]));
        assert_eq!(
            rows[0],
            vec![("1. dayjs".to_owned(), "/answer k3f9x2m8qa 1".to_owned())]
        );
        assert!(rows[1][0].0.ends_with('…') && rows[1][0].0.chars().count() <= 44);
        assert_eq!(
            rows[2],
            vec![("Decline".to_owned(), "/decline k3f9x2m8qa".to_owned())]
        );
        assert!(message_text(&q).contains(long), "whole in the text");
    }

    #[test]
    fn multi_choice_toggles_and_submits() {
        let q = question(NewQuestion::ask("Which?").options(["a", "b", "c"]).multi());
        let rows = rows(&keyboard(&q, &[1, 3]));
        assert_eq!(
            rows[0],
            vec![("☑ a".to_owned(), "/pick k3f9x2m8qa 3".to_owned())]
        );
        assert_eq!(
            rows[1],
            vec![("☐ b".to_owned(), "/pick k3f9x2m8qa 1-3".to_owned())]
        );
        assert_eq!(
            rows[3][0],
            ("Submit (2)".to_owned(), "/answer k3f9x2m8qa 1,3".to_owned())
        );
        assert_eq!(rows[3][1].0, "Decline");
    }

    #[test]
    fn confirm_and_approval_layouts() {
        let confirm = question(NewQuestion::confirm("Ship?"));
        let rows_confirm = rows(&keyboard(&confirm, &[]));
        assert_eq!(rows_confirm.len(), 1);
        assert_eq!(
            rows_confirm[0][0],
            ("Yes".to_owned(), "/answer k3f9x2m8qa yes".to_owned())
        );
        assert_eq!(
            rows_confirm[0][1],
            ("No".to_owned(), "/answer k3f9x2m8qa no".to_owned())
        );
        let action =
            askbridge_core::Action::new("shell", serde_json::json!({"command": "rm -rf build/"}));
        let digest = action.short_digest();
        let approval = question(NewQuestion::ask("Run it?").approve(action));
        let rows_approval = rows(&keyboard(&approval, &[]));
        assert_eq!(rows_approval[0].len(), 2);
        assert_eq!(
            rows_approval[1],
            vec![(
                "Reject".to_owned(),
                format!("/answer k3f9x2m8qa reject #{digest}")
            )]
        );
    }

    #[test]
    fn twenty_actions_fit_telegrams_hundred_buttons() {
        use askbridge_core::batch::BatchAction;
        use askbridge_core::decision::ALL_DECISIONS;
        let actions = (0..20).map(|i| BatchAction {
            allowed: ALL_DECISIONS.to_vec(),
            ..BatchAction::new(askbridge_core::Action::new(
                "t",
                serde_json::json!({"i": i}),
            ))
        });
        let q = NewQuestion::ask("Twenty")
            .session("s")
            .approve_all(actions)
            .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
            .unwrap();
        let rows = rows(&keyboard(&q, &[]));
        assert_eq!(rows.len(), 21, "a row per action, then the two for all");
        assert!(rows.iter().map(Vec::len).sum::<usize>() <= 100);
        assert!(rows.iter().all(|row| row.len() <= 8));
        let labels =
            |row: &Vec<(String, String)>| row.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>();
        assert_eq!(labels(&rows[19]), ["20: Allow", "20: Reject"]);
        assert_eq!(labels(&rows[20]), ["Approve all", "Reject all"]);
        assert!(rows.iter().flatten().all(|(_, data)| data.len() <= 64));
    }
}
