//! A batch of actions on Slack: one message, its text listing the actions, then one actions
//! block per undecided action (its decisions' buttons and "Reject with a reason…") and a last
//! one with "Approve all" / "Reject all". At most 20 actions make at most 22 blocks of at most
//! 6 elements, within Slack's 50 blocks and 25 elements a block, so nothing needs paging.
//!
//! Action ids are unique in a message, so a modal opener on action `n` carries `:<n>` after its
//! id ([`opener_kind`] reads it back); the modal it opens is the one of the single approval the
//! action stands for ([`subject`]): an Edit button opens the fields of that action's flat
//! `args_schema`, and the submitted command (`/answer <id> <n> edit #<digest>` + the JSON) is
//! the one a person could type.

use crate::limits::{ACTIONS_ELEMENTS, BUTTON_TEXT_CHARS, EDIT_ACTION, REASON_ACTION};
use askbridge_core::command::{Command, CommandLine};
use askbridge_core::render::{self, Button, ButtonRole};
use askbridge_core::{Decision, Question};
use slack_morphism::prelude::*;

/// The actions blocks of a pending batch, after its text's section.
pub(crate) fn action_blocks(question: &Question) -> Vec<SlackBlock> {
    let mut per_action: Vec<(usize, Vec<SlackActionBlockElement>)> = Vec::new();
    let mut all = Vec::new();
    for (index, button) in render::buttons(question, &[]).into_iter().enumerate() {
        let Some(n) = button.number else {
            all.push(element(format!("askbridge-{index}"), &button));
            continue;
        };
        if per_action.last().is_none_or(|(last, _)| *last != n) {
            per_action.push((n, Vec::new()));
        }
        let Some((_, elements)) = per_action.last_mut() else {
            continue;
        };
        let edits_here = question
            .action_view(n)
            .is_ok_and(|view| view.edits_in_fields());
        let id = if edits_here && is_word(&button, Decision::Edit) {
            format!("{EDIT_ACTION}:{n}")
        } else {
            format!("askbridge-{index}")
        };
        elements.push(element(id, &button));
        if button.role == ButtonRole::Refuse {
            let reason = Button {
                label: format!("{n}: Reject with a reason…"),
                ..button
            };
            elements.push(element(format!("{REASON_ACTION}:{n}"), &reason));
        }
    }
    let mut blocks: Vec<SlackBlock> = per_action
        .into_iter()
        .map(|(_, mut elements)| {
            elements.truncate(ACTIONS_ELEMENTS);
            SlackActionsBlock::new(elements).into()
        })
        .collect();
    if !all.is_empty() {
        blocks.push(SlackActionsBlock::new(all).into());
    }
    blocks
}

fn is_word(button: &Button, decision: Decision) -> bool {
    button
        .payload
        .split_whitespace()
        .any(|word| word == decision.as_str())
}

fn element(action_id: String, button: &Button) -> SlackActionBlockElement {
    let text = SlackBlockPlainTextOnly::from(render::shorten(&button.label, BUTTON_TEXT_CHARS));
    let element = SlackBlockButtonElement::new(text)
        .with_action_id(SlackActionId(action_id))
        .with_value(button.payload.clone());
    SlackActionBlockElement::Button(match button.role {
        ButtonRole::Refuse => element.with_style(SlackBlockButtonStyle::Danger),
        ButtonRole::Accept if button.number.is_none() => {
            element.with_style(SlackBlockButtonStyle::Primary)
        }
        _ => element,
    })
}

/// The modal opener an action id names (`askbridge-modal-edit:3` is the edit opener), if any.
pub(crate) fn opener_kind(action_id: &str) -> &str {
    action_id
        .split_once(':')
        .map_or(action_id, |(kind, _)| kind)
}

/// What a modal opened by `command` is about: for a batch, the single approval of the action
/// the command names (`/answer <id> 3 edit #<digest>`); otherwise the question itself.
pub(crate) fn subject(question: &Question, command: Option<&str>) -> Option<Question> {
    if !question.is_batch() {
        return Some(question.clone());
    }
    let line = CommandLine::parse(command?).ok()??;
    let Command::Answer(answer) = line.command else {
        return None;
    };
    let n = answer.choice.split_whitespace().next()?.parse().ok()?;
    question.action_view(n).ok()
}
