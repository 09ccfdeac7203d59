//! The mails askbridge writes: a question (text and HTML alternatives, a link per choice: a
//! `mailto:` reply, or a one-click link to the confirmation page) and the short confirmation or
//! refusal a reply gets. Pure: values in, text out.

use crate::links::{OneClick, percent_encode};
use askbridge_core::command::{Command, CommandLine};
use askbridge_core::render::{self, shorten};
use askbridge_core::{Kind, Question, QuestionId};

/// Prompt characters in a subject.
const SUBJECT_PROMPT_CHARS: usize = 100;
/// A question's whole text is sent: mail has no practical length limit.
const BODY_CHARS: usize = 100_000;

/// The start of every `Message-ID` we write about `question` (without `<`), so a reply's
/// `In-Reply-To` and `References` can be recognised.
pub fn message_id_prefix(question: &QuestionId) -> String {
    format!("askbridge.{question}.")
}

/// A new `Message-ID` (without `<>`) for a mail about `question`.
pub(crate) fn message_id(question: &QuestionId, domain: &str) -> String {
    let mut random = [0u8; 8];
    // Without randomness the id is still unique enough per question and second.
    if getrandom::fill(&mut random).is_err() {
        random = askbridge_core::Millis::now().0.to_be_bytes();
    }
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}{hex}@{domain}", message_id_prefix(question))
}

/// `❓ <prompt> [#<id>]`.
pub fn subject(question: &Question) -> String {
    format!(
        "❓ {} [#{}]",
        shorten(&single_line(&question.prompt), SUBJECT_PROMPT_CHARS),
        question.id
    )
}

fn single_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How to answer by mail, in words.
pub(crate) fn how_to_answer(question: &Question) -> String {
    let id = &question.id;
    if question.is_batch() {
        return format!(
            "Reply to this mail with one line per action: its number and your decision \
             (2 reject too broad, 3 edit {{\"replicas\": 3}}), or all once / all reject <why>; \
             /answer {id} 2 reject ... works too. Several lines decide several actions. \
             Your reply's own text is read; what it quotes is not."
        );
    }
    let what = match question.kind {
        Kind::Confirm => "yes or no".to_owned(),
        // Exactly the decisions this approval offers.
        Kind::Approval => askbridge_core::decision::words(question.decisions()),
        Kind::Form => "the value of the field asked".to_owned(),
        Kind::Ask if question.options.is_empty() => "your answer".to_owned(),
        Kind::Ask if question.multi => "the numbers (e.g. 1,3)".to_owned(),
        Kind::Ask => "the number or the option".to_owned(),
    };
    format!(
        "Reply to this mail with {what} on the first line, or with /answer {id} <choice>. \
         Your reply's own text is read; what it quotes is not."
    )
}

/// The text/plain body.
pub fn text_body(question: &Question) -> String {
    format!(
        "{}\n\n{}\n\n{}\n",
        render::question_body(question, BODY_CHARS),
        how_to_answer(question),
        render::commands_hint(question)
    )
}

/// The commands offered as links: the question's own buttons that answer or decline (a
/// multi-choice toggle is not an answer by itself), but not an approval's edit or respond, which
/// need words a link cannot carry (the arguments, the response; `reply_command::runs_on`): the
/// mail's text says how to reply with them. A link names its command by its place in this list,
/// so a batch's list is the one it had when mailed, every action undecided: a decision since
/// must not shift another action's link onto it (a link to a decided action is refused).
pub(crate) fn linked_commands(question: &Question) -> Vec<(String, String)> {
    let mut as_mailed;
    let question = if question.is_batch() {
        as_mailed = question.clone();
        for item in &mut as_mailed.actions {
            item.decision = None;
        }
        &as_mailed
    } else {
        question
    };
    render::buttons(question, &[])
        .into_iter()
        .filter(|button| {
            matches!(
                CommandLine::parse(&button.payload),
                Ok(Some(CommandLine {
                    command: Command::Answer(_) | Command::Decline(_),
                    ..
                }))
            ) && !crate::reply_command::runs_on(question, &button.payload)
        })
        .map(|button| (button.label, button.payload))
        .collect()
}

/// How the HTML mail's links answer.
#[derive(Clone, Copy, Debug)]
pub enum Answering<'a> {
    /// A `mailto:` link per choice, opening a reply to this address with the command filled in.
    Mailto(&'a str),
    /// A one-click link per choice to the confirmation page, for `recipient`.
    OneClick {
        /// The signer of the links.
        links: &'a OneClick,
        /// Whom the mail goes to (the only person its links answer for).
        recipient: &'a str,
    },
}

impl Answering<'_> {
    fn intro(&self) -> &'static str {
        match self {
            Answering::Mailto(_) => {
                "Answer with a link (it opens a reply with the command filled in; send it):"
            }
            Answering::OneClick { .. } => {
                "Answer with a link (it opens a page where you confirm your answer):"
            }
        }
    }

    fn href(&self, question: &Question, subject: &str, choice: usize, command: &str) -> String {
        match self {
            Answering::Mailto(reply_to) => format!(
                "mailto:{}?subject={}&body={}",
                reply_to,
                percent_encode(subject),
                percent_encode(command)
            ),
            Answering::OneClick { links, recipient } => {
                links.href(&question.id, choice, recipient, question.expires_at)
            }
        }
    }
}

/// The text/html alternative: the same content, every value escaped, a link per choice (see
/// [`Answering`]).
pub fn html_body(question: &Question, answering: Answering<'_>) -> String {
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head>\
         <body style=\"font-family:sans-serif;line-height:1.4\">\n",
    );
    html.push_str(&format!(
        "<p style=\"font-size:1.15em\"><b>❓ {}</b></p>\n",
        escape(&question.prompt)
    ));
    if let Some(detail) = question.detail.as_deref().filter(|d| !d.is_empty()) {
        html.push_str(&format!(
            "<p style=\"white-space:pre-wrap\">{}</p>\n",
            escape(detail)
        ));
    }
    if let Some(action) = &question.action {
        html.push_str(&format!("<pre>{}</pre>\n", escape(&action.block(true))));
    }
    if !question.options.is_empty() {
        html.push_str("<ol>\n");
        for label in &question.options {
            html.push_str(&format!("<li>{}</li>\n", escape(label)));
        }
        html.push_str("</ol>\n");
    }
    let subject = format!("Re: {}", subject(question));
    let links = linked_commands(question);
    if !links.is_empty() {
        html.push_str(&format!("<p>{}</p>\n<ul>\n", answering.intro()));
        for (choice, (label, command)) in links.into_iter().enumerate() {
            let href = answering.href(question, &subject, choice, &command);
            html.push_str(&format!(
                "<li><a href=\"{}\">{}</a> <code>{}</code></li>\n",
                escape(&href),
                escape(&label),
                escape(&command)
            ));
        }
        html.push_str("</ul>\n");
    }
    html.push_str(&format!("<p>{}</p>\n", escape(&how_to_answer(question))));
    html.push_str(&format!(
        "<p style=\"color:#555;white-space:pre-wrap\">{}</p>\n</body></html>\n",
        escape(&render::commands_hint(question))
    ));
    html
}

/// `Re: <subject>` for a reply to `subject` (kept as is when it already starts with `Re:`).
pub(crate) fn reply_subject(subject: Option<&str>) -> String {
    let subject = subject.unwrap_or("your answer").trim();
    if subject.len() >= 3 && subject[..3].eq_ignore_ascii_case("re:") {
        subject.to_owned()
    } else {
        format!("Re: {subject}")
    }
}

/// HTML-escapes text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::decision::Decision;
    use askbridge_core::question::DEFAULT_TIMEOUT;
    use askbridge_core::{Millis, NewQuestion};

    fn question() -> Question {
        NewQuestion {
            options: vec!["dayjs".into(), "<b>date-fns</b> & \"co\"".into()],
            detail: Some("Pick one <script>alert(1)</script>".into()),
            ..NewQuestion::new("s", "Which <date> library?")
        }
        .into_question(
            QuestionId::parse("k3f9x2m8qa").unwrap(),
            Millis(0),
            DEFAULT_TIMEOUT,
        )
        .unwrap()
    }

    #[test]
    fn the_subject_has_the_prompt_and_the_id() {
        assert_eq!(
            subject(&question()),
            "❓ Which <date> library? [#k3f9x2m8qa]"
        );
    }

    #[test]
    fn the_text_body_says_how_to_answer() {
        let text = text_body(&question());
        assert!(text.starts_with("❓ Which <date> library?"), "{text}");
        assert!(text.contains("\n1. dayjs\n2. <b>date-fns</b>"), "{text}");
        assert!(
            text.contains("Reply to this mail with the number or the option"),
            "{text}"
        );
        assert!(text.contains("/answer k3f9x2m8qa <1-2 or name>"), "{text}");
    }

    #[test]
    fn the_html_escapes_every_value_and_links_each_choice() {
        let html = html_body(
            &question(),
            Answering::Mailto("askbridge+k3f9x2m8qa.0123@example.com"),
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("<b>date-fns"), "{html}");
        assert!(
            html.contains("&lt;b&gt;date-fns&lt;/b&gt; &amp; &quot;co&quot;"),
            "{html}"
        );
        assert!(html.contains("Which &lt;date&gt; library?"), "{html}");
        assert!(
            html.contains("href=\"mailto:askbridge+k3f9x2m8qa.0123@example.com?subject=Re%3A%20"),
            "{html}"
        );
        assert!(
            html.contains("&amp;body=%2Fanswer%20k3f9x2m8qa%202\""),
            "{html}"
        );
        assert!(
            html.contains("&amp;body=%2Fdecline%20k3f9x2m8qa\""),
            "{html}"
        );
    }

    #[test]
    fn an_approvals_edit_and_respond_are_not_links() {
        let args = r#"{"env": "staging"}"#.parse().unwrap();
        let approval = NewQuestion::new("s", "Deploy?")
            .approve(askbridge_core::Action::new("deploy", args))
            .allow([
                Decision::Once,
                Decision::Edit,
                Decision::Respond,
                Decision::Reject,
            ])
            .targets(["email:a@example.com"])
            .into_question(
                QuestionId::parse("k3f9x2m8qb").unwrap(),
                Millis(0),
                DEFAULT_TIMEOUT,
            )
            .unwrap();
        let commands: Vec<String> = linked_commands(&approval)
            .into_iter()
            .map(|(_, command)| command)
            .collect();
        assert!(
            commands.iter().any(|c| c.contains(" once ")),
            "{commands:?}"
        );
        assert!(
            commands
                .iter()
                .all(|c| !c.contains(" edit") && !c.contains(" respond")),
            "{commands:?}"
        );
        let text = text_body(&approval);
        assert!(text.contains("respond"), "the text still says how: {text}");
    }

    #[test]
    fn a_batchs_links_keep_their_places_as_actions_are_decided() {
        let actions = (1..=3).map(|n| {
            askbridge_core::BatchAction::new(askbridge_core::Action::new(
                format!("tool-{n}"),
                Default::default(),
            ))
        });
        let mut batch = NewQuestion::ask("Three?")
            .approve_all(actions)
            .session("s")
            .targets(["email:a@example.com"])
            .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
            .unwrap();
        let before = linked_commands(&batch);
        assert!(before.iter().any(|(label, _)| label == "Approve all"));
        let by = askbridge_core::Actor::new("email:a@example.com", "email").into();
        for n in 1..=2 {
            let once = askbridge_core::question::Choice {
                action: n,
                then: askbridge_core::Transition::Answer {
                    value: askbridge_core::Answer::Text("once".into()),
                },
            };
            batch.actions[n - 1].decision = Some(batch.entry_of(&once, &by, Millis(1)));
        }
        assert_eq!(linked_commands(&batch), before);
    }

    #[test]
    fn message_ids_are_recognisable_and_unique() {
        let id = QuestionId::parse("k3f9x2m8qa").unwrap();
        let (a, b) = (
            message_id(&id, "example.com"),
            message_id(&id, "example.com"),
        );
        assert!(a.starts_with("askbridge.k3f9x2m8qa.") && a.ends_with("@example.com"));
        assert_ne!(a, b);
        assert_eq!(reply_subject(Some("RE: x")), "RE: x");
        assert_eq!(reply_subject(Some("x")), "Re: x");
    }
}
