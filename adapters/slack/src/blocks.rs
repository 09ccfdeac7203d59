//! How a question looks on Slack: one message of Block Kit blocks, its text from
//! `render::question_text` and its elements from `render::buttons`.
//!
//! Slack refuses a whole message (`invalid_blocks`) when one element breaks a limit, and the
//! client crate checks none of them, so they are kept here and tested: button text of at most 75
//! characters, `value` of at most 2,000, `action_id` of at most 255 and unique in the message, at
//! most 25 elements in an actions block, 50 blocks in a message, 100 options in a select.
//! Single-choice questions with a few options get a button each; more options get a static
//! select, and a multi-choice question a multi-static select, whose options' values are the
//! plain-text commands for each option (`/answer <id> 2`): a chosen option is a typed command, and
//! several chosen ones make one command with their numbers joined (see [`select_command`]).
//! An approval's Edit button keeps its command but, with a flat `args_schema`, its own action id
//! ([`EDIT_ACTION`]): the click opens the modal that edits the arguments (`modals.rs`).
//!
//! Text from outside (a prompt, a detail, an option, a name) is escaped for mrkdwn, so that a
//! question cannot ping `@channel` (`<!channel>`) or show a link other than what it says.

pub use crate::limits::{ACTIONS_ELEMENTS, BUTTON_TEXT_CHARS, EDIT_ACTION, REASON_ACTION};
use askbridge_core::command::{Command, CommandLine};
use askbridge_core::render::{self, Button, ButtonRole};
use askbridge_core::{Kind, Question};
use slack_morphism::prelude::*;

/// Slack's limit on a button's or an option's `value`, in characters.
pub const VALUE_CHARS: usize = 2000;
/// Slack's limit on an `action_id`, in characters.
pub const ACTION_ID_CHARS: usize = 255;
/// Slack's limit on the blocks of one message.
pub const MESSAGE_BLOCKS: usize = 50;
/// Slack's limit on the options of a select menu.
pub const SELECT_OPTIONS: usize = 100;
/// Slack's limit on an option's text, in characters.
pub const OPTION_TEXT_CHARS: usize = 75;
/// Slack's limit on a section's text, in characters.
pub const SECTION_CHARS: usize = 3000;
/// The most options shown as buttons; more get a select menu.
pub const MAX_OPTION_BUTTONS: usize = 5;
/// The action id of "Fill in the form…".
pub const FORM_ACTION: &str = "askbridge-modal-form";
/// Characters of the prompt in a message's notification text.
const FALLBACK_CHARS: usize = 150;

/// `text` escaped for mrkdwn: `&`, `<` and `>` lose their meaning, so no mention, ping or link
/// can come out of it.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` escaped, in at most `max` characters.
pub(crate) fn escaped_within(text: &str, max: usize) -> String {
    let escaped = escape(text);
    if escaped.chars().count() <= max {
        return escaped;
    }
    // Escaping lengthens: shorten the raw text until its escaped form fits.
    let mut room = max;
    loop {
        room = room * 9 / 10;
        let escaped = escape(&render::shorten(text, room));
        if escaped.chars().count() <= max {
            return escaped;
        }
    }
}

/// `text` escaped, within Slack's limit on a section's text.
fn section_text(text: &str) -> String {
    escaped_within(text, SECTION_CHARS)
}

fn section(text: &str) -> SlackBlock {
    SlackSectionBlock::new()
        .with_text(SlackBlockText::MarkDown(SlackBlockMarkDownText::new(
            section_text(text),
        )))
        .into()
}

/// The message's notification text (what a phone shows): the prompt, escaped.
pub fn fallback_text(question: &Question) -> String {
    escape(&format!(
        "❓ {}",
        render::shorten(&question.prompt, FALLBACK_CHARS)
    ))
}

/// The text of the message showing `question`.
pub fn message_text(question: &Question) -> String {
    let mut text = render::question_text(question, SECTION_CHARS - 200);
    if question.allow_custom && !question.options.is_empty() {
        text.push_str("\nYou may also answer in your own words.");
    }
    text
}

/// The text replacing the message once `question` is resolved: the question, then the outcome.
pub fn resolved_text(question: &Question) -> String {
    render::resolved_text(question, SECTION_CHARS - 400)
}

/// The blocks of the message showing `question`: its text, then its elements.
pub fn question_blocks(question: &Question) -> Vec<SlackBlock> {
    let mut blocks = vec![section(&message_text(question))];
    if question.is_batch() {
        blocks.extend(crate::batch::action_blocks(question));
        return blocks;
    }
    let Elements { before, elements } = elements(question);
    blocks.extend(before);
    for chunk in elements.chunks(ACTIONS_ELEMENTS) {
        if blocks.len() == MESSAGE_BLOCKS {
            break;
        }
        blocks.push(SlackActionsBlock::new(chunk.to_vec()).into());
    }
    blocks
}

/// The blocks replacing the message once `question` is resolved: text only, no elements.
pub fn resolved_blocks(question: &Question) -> Vec<SlackBlock> {
    vec![section(&resolved_text(question))]
}

/// The blocks of a line of text.
pub fn text_blocks(text: &str) -> Vec<SlackBlock> {
    vec![section(text)]
}

fn action_id(index: usize) -> SlackActionId {
    SlackActionId(format!("askbridge-{index}"))
}

/// True when `button` is an approval's Edit and its arguments are edited in a modal (a flat
/// `args_schema`): the button then opens the modal, carrying its command for the submission.
/// Without one it stays a command (edit as JSON).
pub fn opens_edit(question: &Question, button: &Button) -> bool {
    question.edits_in_fields()
        && matches!(
            CommandLine::parse(&button.payload),
            Ok(Some(line)) if matches!(&line.command, Command::Answer(a) if question.starts_edit(&a.choice))
        )
}

fn button(index: usize, button: Button, question: &Question) -> SlackActionBlockElement {
    let kind = question.kind;
    let action = if opens_edit(question, &button) {
        SlackActionId(EDIT_ACTION.to_owned())
    } else {
        action_id(index)
    };
    let text = match button.number {
        Some(number) => format!("{number}. {}", button.label),
        None => button.label,
    };
    let style = match button.role {
        ButtonRole::Accept if kind != Kind::Ask => Some(SlackBlockButtonStyle::Primary),
        ButtonRole::Refuse if matches!(kind, Kind::Confirm | Kind::Approval) => {
            Some(SlackBlockButtonStyle::Danger)
        }
        _ => None,
    };
    let element = SlackBlockButtonElement::new(SlackBlockPlainTextOnly::from(render::shorten(
        &text,
        BUTTON_TEXT_CHARS,
    )))
    .with_action_id(action)
    .with_value(button.payload);
    SlackActionBlockElement::Button(match style {
        Some(style) => element.with_style(style),
        None => element,
    })
}

/// The button opening a modal for `question`, if its kind has one: "Reject with a reason…" on
/// an approval, "Fill in the form…" on a form.
pub fn opener(question: &Question) -> Option<SlackActionBlockElement> {
    let (text, action, value) = match question.kind {
        Kind::Approval => {
            let reject = render::buttons(question, &[])
                .into_iter()
                .find(|b| b.role == ButtonRole::Refuse)?;
            ("Reject with a reason…", REASON_ACTION, reject.payload)
        }
        Kind::Form if question.form.is_some() => (
            "Fill in the form…",
            FORM_ACTION,
            format!("/show {}", question.id),
        ),
        _ => return None,
    };
    let button = SlackBlockButtonElement::new(SlackBlockPlainTextOnly::from(text))
        .with_action_id(SlackActionId(action.to_owned()))
        .with_value(value);
    Some(SlackActionBlockElement::Button(button))
}

/// A question's interactive parts: a section holding a multi-select, then the elements of its
/// actions blocks.
struct Elements {
    before: Option<SlackBlock>,
    elements: Vec<SlackActionBlockElement>,
}

/// The elements for `question`, in order, with unique action ids.
fn elements(question: &Question) -> Elements {
    let uses_select = question.kind == Kind::Ask
        && (question.multi || question.options.len() > MAX_OPTION_BUTTONS);
    let mut buttons = render::buttons(question, &[]);
    if !uses_select {
        let mut elements: Vec<_> = buttons
            .into_iter()
            .enumerate()
            .map(|(index, b)| button(index, b, question))
            .collect();
        // A modal for a rejection's reason or a whole form, beside the buttons.
        elements.extend(opener(question));
        return Elements {
            before: None,
            elements,
        };
    }
    // The Decline button every ask question ends with stays a button after the select.
    let decline = buttons.pop().filter(|b| b.role == ButtonRole::Refuse);
    let options: Vec<SlackBlockChoiceItem<SlackBlockPlainTextOnly>> = question
        .options
        .iter()
        .take(SELECT_OPTIONS)
        .enumerate()
        .map(|(index, label)| {
            let text = format!("{}. {label}", index + 1);
            SlackBlockChoiceItem::new(
                SlackBlockPlainTextOnly::from(render::shorten(&text, OPTION_TEXT_CHARS)),
                format!("/answer {} {}", question.id, index + 1),
            )
        })
        .collect();
    let decline = decline.map(|d| button(1, d, question));
    if question.multi {
        // Slack takes a multi-select in a section (or an input), not in an actions block.
        let select = SlackBlockMultiStaticSelectElement::new()
            .with_action_id(action_id(0))
            .with_placeholder(SlackBlockPlainTextOnly::from("Choose"))
            .with_options(options);
        let chooser: SlackBlock = SlackSectionBlock::new()
            .with_text(SlackBlockText::MarkDown(SlackBlockMarkDownText::new(
                "Choose one or more, then close the menu:".to_owned(),
            )))
            .with_accessory(SlackSectionBlockElement::MultiStaticSelect(select))
            .into();
        return Elements {
            before: Some(chooser),
            elements: decline.into_iter().collect(),
        };
    }
    let select = SlackActionBlockElement::StaticSelect(
        SlackBlockStaticSelectElement::new()
            .with_action_id(action_id(0))
            .with_placeholder(SlackBlockPlainTextOnly::from("Choose one"))
            .with_options(options),
    );
    let mut elements = vec![select];
    elements.extend(decline);
    Elements {
        before: None,
        elements,
    }
}

/// The command a multi-static select's chosen options make: their values are each
/// `/answer <id> <n>`, and together they are `/answer <id> <n>,<m>`. `None` when nothing is
/// chosen or the values are not of one question.
pub fn select_command(values: &[String]) -> Option<String> {
    let mut prefix: Option<&str> = None;
    let mut numbers = Vec::with_capacity(values.len());
    for value in values {
        let (head, number) = value.rsplit_once(' ')?;
        if *prefix.get_or_insert(head) != head {
            return None;
        }
        numbers.push(number);
    }
    Some(format!("{} {}", prefix?, numbers.join(",")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use askbridge_core::question::{DEFAULT_TIMEOUT, MAX_LABEL_CHARS, MAX_OPTIONS};
    use askbridge_core::{Millis, NewQuestion, QuestionId};
    use serde_json::Value;
    use std::collections::HashSet;

    /// A question with a fixed id (`k3f9x2m8qa`) asked at 0.
    pub(crate) fn question(request: NewQuestion) -> Question {
        request
            .session("s")
            .into_question(
                QuestionId::parse("k3f9x2m8qa").unwrap(),
                Millis(0),
                DEFAULT_TIMEOUT,
            )
            .unwrap()
    }

    /// Every limit Slack checks on a message's blocks, as the fake Slack checks them.
    pub(crate) fn check_limits(blocks: &[SlackBlock]) {
        let blocks = serde_json::to_value(blocks).unwrap();
        let blocks = blocks.as_array().unwrap();
        assert!(blocks.len() <= MESSAGE_BLOCKS);
        let mut ids = HashSet::new();
        for block in blocks {
            if let Some(text) = block.pointer("/text/text").and_then(Value::as_str) {
                assert!(text.chars().count() <= SECTION_CHARS);
            }
            let elements = match (block["elements"].as_array(), block.get("accessory")) {
                (Some(elements), _) => elements.clone(),
                (None, Some(accessory)) => vec![accessory.clone()],
                (None, None) => continue,
            };
            assert!(elements.len() <= ACTIONS_ELEMENTS);
            for element in &elements {
                let id = element["action_id"].as_str().unwrap();
                assert!(id.chars().count() <= ACTION_ID_CHARS);
                assert!(ids.insert(id.to_owned()), "{id} twice");
                if let Some(text) = element.pointer("/text/text").and_then(Value::as_str) {
                    assert!(text.chars().count() <= BUTTON_TEXT_CHARS, "{text}");
                }
                if let Some(value) = element["value"].as_str() {
                    assert!(value.chars().count() <= VALUE_CHARS);
                }
                if let Some(options) = element["options"].as_array() {
                    assert!(options.len() <= SELECT_OPTIONS);
                    for option in options {
                        let text = option.pointer("/text/text").unwrap().as_str().unwrap();
                        assert!(text.chars().count() <= OPTION_TEXT_CHARS, "{text}");
                        assert!(option["value"].as_str().unwrap().len() <= VALUE_CHARS);
                    }
                }
            }
        }
    }

    fn elements_json(q: &Question) -> Vec<Value> {
        let blocks = serde_json::to_value(question_blocks(q)).unwrap();
        blocks.as_array().unwrap()[1..]
            .iter()
            .flat_map(|b| match b["elements"].as_array() {
                Some(elements) => elements.clone(),
                None => vec![b["accessory"].clone()],
            })
            .collect()
    }

    #[test]
    fn few_options_are_buttons_carrying_the_commands() {
        let long = "l".repeat(MAX_LABEL_CHARS);
        let q = question(NewQuestion::ask("Which?").options(["dayjs", long.as_str()]));
        let elements = elements_json(&q);
        assert_eq!(elements[0]["type"], "button");
        assert_eq!(elements[0]["text"]["text"], "1. dayjs");
        assert_eq!(elements[0]["value"], "/answer k3f9x2m8qa 1");
        assert!(elements[1]["text"]["text"].as_str().unwrap().ends_with('…'));
        assert_eq!(elements[2]["value"], "/decline k3f9x2m8qa");
        check_limits(&question_blocks(&q));
    }

    #[test]
    fn many_options_or_multi_get_a_select_and_decline() {
        let options: Vec<String> = (1..=MAX_OPTIONS)
            .map(|n| format!("{n}{}", "x".repeat(MAX_LABEL_CHARS - 3)))
            .collect();
        let one = question(NewQuestion::ask("Which?").options(options.clone()));
        let elements = elements_json(&one);
        assert_eq!(elements[0]["type"], "static_select");
        assert_eq!(
            elements[0]["options"].as_array().unwrap().len(),
            MAX_OPTIONS
        );
        assert_eq!(elements[0]["options"][24]["value"], "/answer k3f9x2m8qa 25");
        assert_eq!(elements[1]["value"], "/decline k3f9x2m8qa");
        check_limits(&question_blocks(&one));
        let multi = question(NewQuestion::ask("Which?").options(["a", "b"]).multi());
        assert_eq!(elements_json(&multi)[0]["type"], "multi_static_select");
        check_limits(&question_blocks(&multi));
    }

    #[test]
    fn confirm_and_approval_buttons() {
        let confirm = question(NewQuestion::confirm("Ship?"));
        let values: Vec<Value> = elements_json(&confirm)
            .iter()
            .map(|e| e["value"].clone())
            .collect();
        assert_eq!(values, ["/answer k3f9x2m8qa yes", "/answer k3f9x2m8qa no"]);
        let action =
            askbridge_core::Action::new("shell", serde_json::json!({"command": "rm -rf build/"}));
        let approval = question(NewQuestion::ask("Run it?").approve(action));
        let texts: Vec<Value> = elements_json(&approval)
            .iter()
            .map(|e| e["text"]["text"].clone())
            .collect();
        assert_eq!(
            texts,
            [
                "Allow once",
                "Always allow",
                "Reject",
                "Reject with a reason…"
            ]
        );
        check_limits(&question_blocks(&approval));
    }

    #[test]
    fn text_from_outside_cannot_ping_or_link() {
        let q = question(
            NewQuestion::ask("<!channel> deploy & <https://evil|click>?").options(["<@U1>"]),
        );
        let blocks = serde_json::to_value(question_blocks(&q)).unwrap();
        let text = blocks[0]["text"]["text"].as_str().unwrap();
        assert!(text.contains("&lt;!channel&gt; deploy &amp; &lt;https://evil|click&gt;?"));
        assert!(text.contains("1. &lt;@U1&gt;"));
        assert!(!text.contains('<'), "{text}");
        assert_eq!(escape("a<b>&c"), "a&lt;b&gt;&amp;c");
    }

    #[test]
    fn a_long_escaped_text_still_fits_a_section() {
        let mut q = question(NewQuestion::ask("Which?"));
        q.detail = Some("<&>".repeat(3000));
        check_limits(&question_blocks(&q));
        check_limits(&resolved_blocks(&q));
    }

    #[test]
    fn chosen_options_make_one_command() {
        let values = [
            "/answer k3f9x2m8qa 1".to_owned(),
            "/answer k3f9x2m8qa 3".to_owned(),
        ];
        assert_eq!(
            select_command(&values).as_deref(),
            Some("/answer k3f9x2m8qa 1,3")
        );
        assert_eq!(select_command(&[]), None);
        let mixed = ["/answer a 1".to_owned(), "/answer b 2".to_owned()];
        assert_eq!(select_command(&mixed), None);
    }

    #[test]
    fn resolved_blocks_have_no_elements() {
        let q = question(NewQuestion::ask("Which?").options(["a"]));
        let blocks = serde_json::to_value(resolved_blocks(&q)).unwrap();
        assert_eq!(blocks.as_array().unwrap().len(), 1);
        assert_eq!(blocks[0]["type"], "section");
    }

    /// A batch's blocks ([`crate::batch`]).
    mod batch {
        use super::{check_limits, question};
        use crate::batch::{opener_kind, subject};
        use crate::blocks::{EDIT_ACTION, REASON_ACTION, question_blocks};
        use askbridge_core::Question;
        use askbridge_core::batch::BatchAction;
        use askbridge_core::decision::ALL_DECISIONS;
        use askbridge_core::{Action, NewQuestion};
        use serde_json::{Value, json};

        fn batch(count: usize) -> Question {
            let actions = (1..=count).map(|n| {
                let mut item = BatchAction::new(Action::new(
                    "deploy",
                    json!({"service": format!("svc-{n}"), "replicas": 2}),
                ));
                item.allowed = ALL_DECISIONS.to_vec();
                item.args_schema = Some(json!({"type": "object", "properties": {
                "service": {"type": "string"}, "replicas": {"type": "integer"}}}));
                item
            });
            question(NewQuestion::new("s", "The agent proposes these").approve_all(actions))
        }

        #[test]
        fn twenty_actions_fit_one_message_with_a_block_each() {
            let q = batch(20);
            let blocks = question_blocks(&q);
            check_limits(&blocks);
            let blocks = serde_json::to_value(&blocks).unwrap();
            let blocks = blocks.as_array().unwrap();
            // The text, one block per action, the "all" block.
            assert_eq!(blocks.len(), 22);
            let third: Vec<&str> = blocks[3]["elements"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["action_id"].as_str().unwrap())
                .collect();
            assert!(third.contains(&"askbridge-modal-edit:3"), "{third:?}");
            assert!(third.contains(&"askbridge-modal-reason:3"), "{third:?}");
            let last: Vec<&Value> = blocks[21]["elements"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| &e["text"]["text"])
                .collect();
            assert_eq!(last, ["Approve all", "Reject all"]);
        }

        #[test]
        fn an_opener_names_the_action_whose_modal_it_opens() {
            let q = batch(3);
            assert_eq!(opener_kind("askbridge-modal-edit:3"), EDIT_ACTION);
            assert_eq!(opener_kind(REASON_ACTION), REASON_ACTION);
            let command = format!("/answer {} 2 edit #{}", q.id, q.batch_short_digest());
            let view = subject(&q, Some(&command)).unwrap();
            assert_eq!(view.action.unwrap().args["service"], "svc-2");
            assert!(subject(&q, Some("/pending")).is_none());
            assert!(subject(&q, None).is_none());
        }
    }
}
