//! How a question looks on Discord: one message, its text from `render::question_text` and its
//! components from `render::buttons`.
//!
//! Discord rejects a whole message (400, code 50035) when one component breaks a limit, and
//! serenity checks none of them, so the limits are kept here: at most 5 buttons per row and 5
//! rows, labels of 1-80 characters, custom_ids of 1-100 characters unique in the message, at most
//! 25 options in a select menu (labels and values of at most 100 characters), content of at most
//! 2000 characters. Single-choice questions with up to 24 options get one button per option plus
//! Decline (25 buttons fill the 5 rows); more options, or a multi-choice question, get a select
//! menu instead, whose custom_id is `/answer <id>` and whose chosen values (option numbers) are
//! appended to it, so a selection is still a plain-text command.

use askbridge_core::render::{self, Button, ButtonRole};
use askbridge_core::{Kind, Question};
use serenity::builder::{
    CreateActionRow, CreateAllowedMentions, CreateButton, CreateMessage, CreateSelectMenu,
    CreateSelectMenuKind, CreateSelectMenuOption, EditMessage,
};
use serenity::model::application::ButtonStyle;

/// Discord's limit on message content, in characters.
pub(crate) const CONTENT_CHARS: usize = 2000;
/// Discord's limit on a button label, in characters.
pub(crate) const BUTTON_LABEL_CHARS: usize = 80;
/// Discord's limit on a select option's label, in characters.
pub(crate) const OPTION_LABEL_CHARS: usize = 100;
/// Buttons in one action row.
pub(crate) const BUTTONS_PER_ROW: usize = 5;
/// Action rows in one message.
pub(crate) const ROWS: usize = 5;
/// The most options shown as buttons: with Decline they fill the 5 rows of 5.
pub(crate) const MAX_OPTION_BUTTONS: usize = BUTTONS_PER_ROW * ROWS - 1;

/// What [`components`] decided, kept plain so that it can be tested without serenity's builders
/// (which expose nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// A button: label (already shortened), custom_id, style.
    Button {
        label: String,
        custom_id: String,
        style: Style,
    },
    /// A string select menu.
    Select {
        custom_id: String,
        placeholder: String,
        /// (label, value) pairs; values are option numbers.
        options: Vec<(String, String)>,
        min: u8,
        max: u8,
    },
}

/// A button's colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    Primary,
    Secondary,
    Success,
    Danger,
}

/// The custom_id of a question's select menu: the chosen numbers are appended to it.
pub(crate) fn select_custom_id(question: &Question) -> String {
    format!("/answer {}", question.id)
}

fn button(button: Button, kind: Kind) -> Part {
    let style = match button.role {
        ButtonRole::Choice { .. } => Style::Primary,
        ButtonRole::Accept => Style::Success,
        // Declining to answer is a normal choice; rejecting an approval or answering "no" is the
        // one that stops something.
        ButtonRole::Refuse if matches!(kind, Kind::Ask | Kind::Form) => Style::Secondary,
        ButtonRole::Refuse => Style::Danger,
    };
    Part::Button {
        label: render::shorten(&button.label, BUTTON_LABEL_CHARS),
        custom_id: button.payload,
        style,
    }
}

/// The rows of components for `question`, each a list of parts.
pub(crate) fn rows(question: &Question) -> Vec<Vec<Part>> {
    let uses_select = question.kind == Kind::Ask
        && (question.multi || question.options.len() > MAX_OPTION_BUTTONS);
    if !uses_select {
        let parts: Vec<Part> = render::buttons(question, &[])
            .into_iter()
            .map(|b| button(b, question.kind))
            .collect();
        return parts
            .chunks(BUTTONS_PER_ROW)
            .map(<[Part]>::to_vec)
            .collect();
    }
    let count = question.options.len();
    let options = question
        .options
        .iter()
        .enumerate()
        .map(|(index, label)| {
            (
                render::shorten(label, OPTION_LABEL_CHARS),
                (index + 1).to_string(),
            )
        })
        .collect();
    let (placeholder, max) = if question.multi {
        ("Choose one or more, then close the menu", count)
    } else {
        ("Choose one", 1)
    };
    let select = Part::Select {
        custom_id: select_custom_id(question),
        placeholder: placeholder.to_owned(),
        options,
        min: 1,
        // At most 25 options (the core's limit), so this fits.
        max: u8::try_from(max).unwrap_or(u8::MAX),
    };
    // The Decline button `render::buttons` ends every ask question with.
    let decline = render::buttons(question, &[])
        .pop()
        .filter(|b| b.role == ButtonRole::Refuse)
        .expect("ask questions end with Decline");
    vec![vec![select], vec![button(decline, question.kind)]]
}

fn build_row(parts: Vec<Part>) -> CreateActionRow {
    let mut buttons = Vec::new();
    for part in parts {
        match part {
            Part::Button {
                label,
                custom_id,
                style,
            } => {
                let style = match style {
                    Style::Primary => ButtonStyle::Primary,
                    Style::Secondary => ButtonStyle::Secondary,
                    Style::Success => ButtonStyle::Success,
                    Style::Danger => ButtonStyle::Danger,
                };
                buttons.push(CreateButton::new(custom_id).label(label).style(style));
            }
            Part::Select {
                custom_id,
                placeholder,
                options,
                min,
                max,
            } => {
                let options = options
                    .into_iter()
                    .map(|(label, value)| CreateSelectMenuOption::new(label, value))
                    .collect();
                let menu =
                    CreateSelectMenu::new(custom_id, CreateSelectMenuKind::String { options })
                        .placeholder(placeholder)
                        .min_values(min)
                        .max_values(max);
                return CreateActionRow::SelectMenu(menu);
            }
        }
    }
    CreateActionRow::Buttons(buttons)
}

/// The components of a reply's buttons (a form's next field).
pub(crate) fn reply_components(buttons: &[Button]) -> Vec<CreateActionRow> {
    let parts: Vec<Part> = buttons
        .iter()
        .map(|b| button(b.clone(), Kind::Form))
        .collect();
    parts
        .chunks(BUTTONS_PER_ROW)
        .map(|row| build_row(row.to_vec()))
        .collect()
}

/// The components of `question`'s message.
pub(crate) fn components(question: &Question) -> Vec<CreateActionRow> {
    rows(question).into_iter().map(build_row).collect()
}

/// Nobody is pinged by what askbridge writes: prompts, labels and decline messages come from
/// programs and people, and an `@everyone` in one must stay text.
pub(crate) fn no_pings() -> CreateAllowedMentions {
    CreateAllowedMentions::new().replied_user(false)
}

/// A reminder: `text` as a reply to message `to` in `channel`, followed by a mention of each of
/// `people` (Discord user ids), who alone are pinged; the reply still sends if `to` is gone.
pub(crate) fn reminder_message(
    text: &str,
    channel: u64,
    to: Option<u64>,
    people: &[u64],
) -> CreateMessage {
    let mentions: Vec<String> = people
        .iter()
        .take(10)
        .map(|id| format!("<@{id}>"))
        .collect();
    let content = match mentions.is_empty() {
        true => text.to_owned(),
        false => format!("{text}\n👤 {}", mentions.join(" ")),
    };
    let allowed = CreateAllowedMentions::new()
        .users(
            people
                .iter()
                .take(10)
                .map(|id| serenity::all::UserId::new(*id)),
        )
        .replied_user(false);
    let message = CreateMessage::new()
        .content(fit(&content))
        .allowed_mentions(allowed);
    match to {
        Some(to) => {
            let mut reference = serenity::all::MessageReference::from((
                serenity::all::ChannelId::new(channel),
                serenity::all::MessageId::new(to),
            ));
            reference.fail_if_not_exists = Some(false);
            message.reference_message(reference)
        }
        None => message,
    }
}

/// The message showing `question` in channel `channel_id`. Its nonce makes a re-sent show (after
/// a timeout whose request did reach Discord) return the first message instead of posting a
/// second one. Discord checks nonces per author, not per channel, so the nonce names both the
/// question and the channel (10 + at most 13 characters, within Discord's 25).
pub(crate) fn question_message(question: &Question, channel_id: u64) -> CreateMessage {
    CreateMessage::new()
        .content(render::question_text(question, CONTENT_CHARS))
        .components(components(question))
        .allowed_mentions(no_pings())
        .nonce(serenity::model::channel::Nonce::String(format!(
            "{}{}",
            question.id,
            base36(channel_id)
        )))
        .enforce_nonce(true)
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The text of a resolved question: what was asked, then how it ended.
pub(crate) fn outcome_text(question: &Question) -> String {
    // A decline message can be long; the question must still show above it.
    let outcome = render::shorten(&render::outcome_line(question), CONTENT_CHARS / 2);
    let room = CONTENT_CHARS.saturating_sub(outcome.chars().count() + 2);
    format!("{}\n\n{outcome}", render::question_text(question, room))
}

/// The edit that withdraws `question`'s components and writes its outcome.
pub(crate) fn outcome_edit(question: &Question) -> EditMessage {
    EditMessage::new()
        .content(outcome_text(question))
        .components(Vec::new())
        .allowed_mentions(no_pings())
}

/// The edit that redraws a pending `question` as it stands (a quorum's progress), buttons kept.
pub(crate) fn progress_edit(question: &Question) -> EditMessage {
    EditMessage::new()
        .content(render::question_text(question, CONTENT_CHARS))
        .components(components(question))
        .allowed_mentions(no_pings())
}

/// `text` cut to fit a message.
pub(crate) fn fit(text: &str) -> String {
    render::shorten(text, CONTENT_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::question::{DEFAULT_TIMEOUT, MAX_OPTIONS};
    use askbridge_core::{Millis, NewQuestion, QuestionId};
    use std::collections::HashSet;

    fn question(kind: Kind, options: usize, multi: bool, label_chars: usize) -> Question {
        NewQuestion {
            kind,
            options: (1..=options)
                .map(|n| format!("{n}{}", "x".repeat(label_chars.saturating_sub(3))))
                .collect(),
            multi,
            action: (kind == Kind::Approval).then(|| {
                askbridge_core::Action::new("shell", serde_json::json!({"command": "make"}))
            }),
            ..NewQuestion::new("s", "Which?")
        }
        .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
        .unwrap()
    }

    /// Discord's limits, checked on every layout the adapter can produce.
    fn assert_within_limits(question: &Question) {
        let rows = rows(question);
        assert!(
            !rows.is_empty() && rows.len() <= ROWS,
            "{} rows",
            rows.len()
        );
        let mut ids = HashSet::new();
        for row in &rows {
            let selects = row
                .iter()
                .filter(|p| matches!(p, Part::Select { .. }))
                .count();
            assert!(
                selects == 0 || row.len() == 1,
                "a select is alone in its row"
            );
            assert!(row.len() <= BUTTONS_PER_ROW);
            for part in row {
                let custom_id = match part {
                    Part::Button {
                        label, custom_id, ..
                    } => {
                        let n = label.chars().count();
                        assert!((1..=BUTTON_LABEL_CHARS).contains(&n), "label {label}");
                        custom_id
                    }
                    Part::Select {
                        custom_id,
                        options,
                        min,
                        max,
                        ..
                    } => {
                        assert!(options.len() <= 25 && !options.is_empty());
                        assert!(*min >= 1 && usize::from(*max) <= options.len());
                        for (label, value) in options {
                            assert!(label.chars().count() <= OPTION_LABEL_CHARS);
                            assert!(value.chars().count() <= 100);
                        }
                        custom_id
                    }
                };
                assert!((1..=100).contains(&custom_id.chars().count()));
                assert!(ids.insert(custom_id.clone()), "{custom_id} repeated");
            }
        }
    }

    #[test]
    fn every_kind_and_size_fits_discords_limits() {
        for options in 0..=MAX_OPTIONS {
            for multi in [false, true] {
                if multi && options == 0 {
                    continue;
                }
                for label_chars in [3, 80, 100] {
                    assert_within_limits(&question(Kind::Ask, options, multi, label_chars));
                }
            }
        }
        assert_within_limits(&question(Kind::Confirm, 0, false, 3));
        assert_within_limits(&question(Kind::Approval, 0, false, 3));
        // Every decision offered: five buttons, one each.
        let mut all = question(Kind::Approval, 0, false, 3);
        all.allowed = askbridge_core::decision::ALL_DECISIONS.to_vec();
        assert_within_limits(&all);
        assert_eq!(rows(&all).concat().len(), 5);
    }

    #[test]
    fn up_to_24_options_are_buttons_and_more_are_a_select() {
        let q = question(Kind::Ask, 24, false, 3);
        let buttons = rows(&q);
        assert_eq!(buttons.len(), 5);
        assert!(buttons.iter().all(|r| r.len() == 5));
        let last = buttons[4].last().unwrap();
        assert!(
            matches!(last, Part::Button { custom_id, .. } if *custom_id == format!("/decline {}", q.id))
        );
        let q = question(Kind::Ask, 25, false, 3);
        let select = rows(&q);
        let Part::Select {
            custom_id,
            min,
            max,
            options,
            ..
        } = &select[0][0]
        else {
            panic!("a select first: {select:?}")
        };
        assert_eq!(*custom_id, format!("/answer {}", q.id));
        assert_eq!((min, max, options.len()), (&1, &1, 25));
        assert_eq!(options[16].1, "17");
    }

    #[test]
    fn nonces_fit_and_differ_per_channel() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(u64::MAX).len(), 13);
        assert_ne!(base36(1_234_567_890_123), base36(1_234_567_890_124));
    }

    #[test]
    fn outcome_text_stays_within_a_message() {
        let mut q = question(Kind::Ask, 25, false, 100);
        q.detail = Some("d".repeat(8000));
        q.status = askbridge_core::Status::Declined;
        q.resolution = Some(askbridge_core::Resolution {
            value: None,
            decider: askbridge_core::Actor::new("discord:1", "discord").into(),
            at: Millis(0),
            message: Some("m".repeat(4000)),
            rule_id: None,
            votes: Vec::new(),
            edited: None,
            decisions: Vec::new(),
        });
        assert!(outcome_text(&q).chars().count() <= CONTENT_CHARS);
    }
}
