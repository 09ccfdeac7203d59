//! Which buttons a question gets, and the command each one sends: the one list every adapter
//! draws from (a keyboard, components, blocks), so that the property test in `mod.rs` checks every
//! payload any adapter will send against the platforms' limits. Apart from the question's text:
//! buttons are commands, not words.

use crate::approval::{ApprovalReply, REJECT};
use crate::button::{Button, ButtonRole};
use crate::command::{AnswerCommand, DeclineCommand, PickCommand};
use crate::decision::Decision;
use crate::id::IdRef;
use crate::question::{Kind, Question};

/// The buttons for `question`. For multi-choice questions they are toggles: each carries the
/// selection tapping it leads to (so the message itself holds the state), and Submit appears
/// once something is selected. `selection` is the current one (1-based option numbers).
pub fn buttons(question: &Question, selection: &[usize]) -> Vec<Button> {
    let id = &question.id;
    let mut buttons = match question.kind {
        // Their own refusal (No, Reject) stands for Decline.
        Kind::Confirm => return confirm_buttons(question),
        Kind::Approval if question.is_batch() => return crate::batch::render::buttons(question),
        Kind::Approval => return approval_buttons(question),
        // The first field's buttons: tapping one starts filling the form in.
        Kind::Form => match &question.form {
            Some(form) => crate::fill::field_buttons(question, form, 0),
            None => Vec::new(),
        },
        Kind::Ask if question.multi => toggle_buttons(question, selection),
        Kind::Ask => option_buttons(question),
    };
    buttons.push(Button::new(
        "Decline",
        DeclineCommand::button(id),
        ButtonRole::Refuse,
    ));
    buttons
}

/// Yes and No.
fn confirm_buttons(question: &Question) -> Vec<Button> {
    let id = &question.id;
    vec![
        Button::new("Yes", AnswerCommand::word(id, "yes"), ButtonRole::Accept),
        Button::new("No", AnswerCommand::word(id, "no"), ButtonRole::Refuse),
    ]
}

/// Allow once, Always allow, Reject. Each payload names the action's digest: the tap approves
/// what the message showed.
fn approval_buttons(question: &Question) -> Vec<Button> {
    let id = &question.id;
    // Each payload names the action's digest: the tap approves what the message showed.
    let bound = |word: &str| match &question.action {
        Some(action) => AnswerCommand::word(id, &format!("{word} #{}", action.short_digest())),
        None => AnswerCommand::word(id, word),
    };
    // Exactly the decisions this approval offers. Edit and Respond start a conversation (the
    // fields one by one, or a request for the text).
    question
        .decisions()
        .iter()
        .map(|decision| {
            let (label, word, role) = match decision {
                Decision::Once => (
                    "Allow once",
                    ApprovalReply::Once.as_str(),
                    ButtonRole::Accept,
                ),
                Decision::Always => (
                    "Always allow",
                    ApprovalReply::AlwaysInSession.as_str(),
                    ButtonRole::Accept,
                ),
                Decision::Edit => ("Edit", "edit", ButtonRole::Accept),
                Decision::Respond => ("Respond", "respond", ButtonRole::Accept),
                Decision::Reject => ("Reject", REJECT, ButtonRole::Refuse),
            };
            Button::new(label, bound(word), role)
        })
        .collect()
}

/// A multi-choice question's toggles, each carrying the selection tapping it leads to, and
/// Submit once something is selected.
fn toggle_buttons(question: &Question, selection: &[usize]) -> Vec<Button> {
    let id = &question.id;
    let mut buttons = Vec::new();
    for (index, label) in question.options.iter().enumerate() {
        let number = index + 1;
        let selected = selection.contains(&number);
        let mut next: Vec<usize> = selection.iter().copied().filter(|n| *n != number).collect();
        if !selected {
            next.push(number);
        }
        next.sort_unstable();
        let mark = if selected { "☑" } else { "☐" };
        let pick = PickCommand {
            id: IdRef::Full(id.clone()),
            numbers: next,
        };
        buttons.push(
            Button::new(
                format!("{mark} {label}"),
                pick,
                ButtonRole::Choice { selected },
            )
            .for_option(number),
        );
    }
    if !selection.is_empty() {
        let submit = AnswerCommand::numbers(id, selection);
        buttons.push(Button::new(
            format!("Submit ({})", selection.len()),
            submit,
            ButtonRole::Accept,
        ));
    }
    buttons
}

/// One button per option, answering with it.
fn option_buttons(question: &Question) -> Vec<Button> {
    let id = &question.id;
    let choice = |(index, label): (usize, &String)| {
        let answer = AnswerCommand::numbers(id, &[index + 1]);
        Button::new(
            label.clone(),
            answer,
            ButtonRole::Choice { selected: false },
        )
        .for_option(index + 1)
    };
    question.options.iter().enumerate().map(choice).collect()
}
