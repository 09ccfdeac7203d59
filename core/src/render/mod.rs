//! How questions and outcomes read as text, and which buttons a question gets.
//!
//! Every surface shows the same words, so a person who has seen a question on Telegram recognises
//! it on Discord or in the console; only the frame (keyboard, components, terminal) differs. The
//! buttons are listed here, not in the adapters, so that one property test can check every payload
//! any adapter will send against the platforms' limits.
//!
//! The parts: this module holds the texts (a question, its outcome, a reminder); `buttons.rs`
//! the buttons.

mod buttons;

pub use buttons::buttons;

use crate::actor::Decider;
use crate::approval::ApprovalReply;
pub use crate::button::{Button, ButtonRole};
use crate::decision::Decision;
use crate::question::{Kind, Question, Resolution, Status};
pub use crate::tally::progress_line;
use crate::text::lowercase_first;
pub use crate::text::shorten;
use crate::time::Millis;
use crate::value::Answer;

/// The question as a chat message of at most `max_chars` characters: prompt, detail, numbered
/// options, and the exact commands to type. When it does not fit, the detail and then the option
/// labels are shortened and the text points to `/show <id>`.
pub fn question_text(question: &Question, max_chars: usize) -> String {
    fit(question, max_chars, true)
}

/// Like [`question_text`] without the command lines: how a closed question is remembered in the
/// message that showed it.
pub fn question_body(question: &Question, max_chars: usize) -> String {
    fit(question, max_chars, false)
}

fn fit(question: &Question, max_chars: usize, hints: bool) -> String {
    let compose = |detail: Option<&str>, label_chars: Option<usize>| {
        compose(question, detail, label_chars, hints)
    };
    let full = compose(question.detail.as_deref(), None);
    if full.chars().count() <= max_chars {
        return full;
    }
    let without_detail = compose(Some(""), None).chars().count();
    if let Some(detail) = &question.detail {
        let room = max_chars.saturating_sub(without_detail + 60);
        if room >= 80 {
            let text = compose(Some(&shorten(detail, room)), None);
            if text.chars().count() <= max_chars {
                return with_show_hint(text, question);
            }
        }
    }
    for label_chars in [60, 40, 24, 12] {
        let text = compose(None, Some(label_chars));
        if text.chars().count() + 60 <= max_chars {
            return with_show_hint(text, question);
        }
    }
    shorten(
        &with_show_hint(compose(None, Some(12)), question),
        max_chars,
    )
}

fn with_show_hint(mut text: String, question: &Question) -> String {
    text.push_str(&format!(
        "\n(Shortened: /show {} shows all of it.)",
        question.id
    ));
    text
}

fn compose(
    question: &Question,
    detail: Option<&str>,
    label_chars: Option<usize>,
    hints: bool,
) -> String {
    let mut text = format!("❓ {}", question.prompt);
    if let Some(detail) = detail.filter(|d| !d.is_empty()) {
        text.push_str("\n\n");
        text.push_str(detail);
    }
    if question.is_batch() {
        text.push_str("\n\n");
        text.push_str(&crate::batch::render::block(question, label_chars));
    }
    if let Some(action) = &question.action {
        text.push_str("\n\n");
        // Shortened with the labels, whole when the message has room (`/show` always is).
        text.push_str(&action.block(label_chars.is_none() && detail.is_some()));
    }
    if !question.options.is_empty() {
        text.push('\n');
        for (index, label) in question.options.iter().enumerate() {
            let label = label_chars.map_or_else(|| label.clone(), |max| shorten(label, max));
            text.push_str(&format!("\n{}. {label}", index + 1));
        }
    }
    if let Some(form) = question.form.as_ref().filter(|_| hints) {
        text.push_str("\n\n");
        text.push_str(&crate::fill::field_line(question, form, 0));
    }
    if let Some(progress) = progress_line(question) {
        text.push_str("\n\n🗳 ");
        text.push_str(&progress);
    }
    if hints {
        text.push_str("\n\n");
        text.push_str(&commands_hint(question));
    }
    text
}

/// The lines telling a person exactly what to type.
pub fn commands_hint(question: &Question) -> String {
    let id = &question.id;
    let answer = match question.kind {
        Kind::Form => {
            format!("Fill it in field by field: reply with each value, or /answer {id} <value>.")
        }
        Kind::Confirm => format!("Answer: /answer {id} yes  or  /answer {id} no"),
        Kind::Approval if question.is_batch() => crate::batch::render::hint(question),
        Kind::Approval => approval_hint(question),
        Kind::Ask if question.options.is_empty() => format!("Answer: /answer {id} <your answer>"),
        Kind::Ask => {
            let n = question.options.len();
            let what = if question.multi {
                format!("<numbers, e.g. 1,3 (any of 1-{n})>")
            } else if n == 1 {
                "1".to_owned()
            } else {
                format!("<1-{n} or name>")
            };
            let mut line = format!("Answer: /answer {id} {what}");
            if question.allow_custom {
                line.push_str("\nOr answer in your own words: /answer ");
                line.push_str(id.as_str());
                line.push_str(" <text>");
            }
            line
        }
    };
    if question.kind == Kind::Approval {
        answer
    } else {
        format!("{answer}\nDecline: /decline {id} [reason]")
    }
}

/// One line per decision an approval offers, with exactly what to type.
fn approval_hint(question: &Question) -> String {
    let id = &question.id;
    let decisions = question.decisions();
    let mut lines = Vec::new();
    let allow: Vec<String> = decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Once => Some(format!("/answer {id} once")),
            Decision::Always => Some(format!("/answer {id} always [everywhere]")),
            _ => None,
        })
        .collect();
    if !allow.is_empty() {
        lines.push(format!("Allow: {}", allow.join("  or  ")));
    }
    if decisions.contains(&Decision::Edit) {
        let how = if question.edits_in_fields() {
            format!("/answer {id} edit (field by field)  or  /answer {id} edit {{json}}")
        } else {
            format!("/answer {id} edit {{json}}")
        };
        lines.push(format!("Edit: {how}"));
    }
    if decisions.contains(&Decision::Respond) {
        lines.push(format!("Respond: /answer {id} respond <text>"));
    }
    if decisions.contains(&Decision::Reject) {
        lines.push(format!("Reject: /answer {id} reject [reason]"));
    }
    lines.join("\n")
}

/// Who resolved it, for people: the display name when known.
pub fn who(resolution: &Resolution) -> String {
    resolution
        .by_name()
        .map_or_else(|| resolution.by().to_string(), str::to_owned)
}

/// What replaces a message showing `question` once it is resolved: the question (its body within
/// `body_chars`), then a mark for how it ended and the outcome line. One text for every chat
/// surface that edits its message, so they agree on how an ending looks.
pub fn resolved_text(question: &Question, body_chars: usize) -> String {
    let mark = match question.status {
        Status::Answered => "✅",
        Status::Declined => "🚫",
        Status::Expired => "⌛",
        Status::Cancelled => "✖️",
        Status::Pending => "❓",
    };
    let asked = question_body(question, body_chars);
    format!("{asked}\n\n{mark} {}", outcome_line(question))
}

/// One line saying how a resolved question ended, e.g. "Answered: dayjs, by @alice via discord".
pub fn outcome_line(question: &Question) -> String {
    let Some(resolution) = &question.resolution else {
        return "Pending".to_owned();
    };
    let by = who(resolution);
    let via = resolution.via();
    match question.status {
        Status::Pending => "Pending".to_owned(),
        Status::Answered if question.is_batch() => {
            crate::batch::render::outcome(question, &by, &via)
        }
        Status::Answered => {
            if let (Kind::Approval, Decider::Rule(rule)) = (question.kind, &resolution.decider) {
                return format!("Allowed by rule {rule}");
            }
            if let (Kind::Approval, Some(edited)) = (question.kind, &resolution.edited) {
                let args = crate::text::visible(&edited.approved.args.to_string()).into_owned();
                return format!(
                    "Approved with changes: {} (digest {}), by {by} via {via}",
                    shorten(&args, 200),
                    edited.approved.short_digest()
                );
            }
            let responded = Some(Answer::Text(Decision::Respond.as_str().into()));
            if question.kind == Kind::Approval && resolution.value == responded {
                let text = resolution.message.as_deref().unwrap_or_default();
                return format!("Responded: {}, by {by} via {via}", shorten(text, 200));
            }
            let reply = resolution.value.as_ref().and_then(ApprovalReply::of_answer);
            let value = match (question.kind, reply) {
                (Kind::Approval, Some(ApprovalReply::Once)) => "allowed once".to_owned(),
                (Kind::Approval, Some(ApprovalReply::AlwaysInSession)) => {
                    "always allowed in this session".to_owned()
                }
                (Kind::Approval, Some(ApprovalReply::AlwaysEverywhere)) => {
                    "always allowed everywhere".to_owned()
                }
                _ => resolution
                    .value
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
            };
            format!("Answered: {value}, by {by} via {via}")
        }
        Status::Declined => {
            let verb = if question.kind == Kind::Approval {
                "Rejected"
            } else {
                "Declined"
            };
            match &resolution.message {
                Some(message) => format!("{verb}: {message} (by {by} via {via})"),
                None => format!("{verb} by {by} via {via}"),
            }
        }
        Status::Expired => match &resolution.value {
            Some(value) => format!("Expired: default used ({value})"),
            None => "Expired: no answer".to_owned(),
        },
        Status::Cancelled => match &resolution.message {
            Some(reason) => format!("Cancelled: {reason}"),
            None => "Cancelled: the run that asked it was stopped".to_owned(),
        },
    }
}

/// The reply to someone who tries to resolve a question that is no longer pending.
pub fn already_resolved_line(question: &Question) -> String {
    match question.status {
        Status::Expired => format!("This question has expired. {}", outcome_line(question)),
        Status::Cancelled => format!("This question was withdrawn. {}", outcome_line(question)),
        _ => format!("Already {}", lowercase_first(&outcome_line(question))),
    }
}

/// A reminder of a question still unanswered at `now`: reminder `number` of `of`, then what to
/// type (the buttons are on the message it replies to, where the platform can reply).
pub fn reminder(question: &Question, number: u32, of: u32, now: Millis) -> String {
    let count = if of > 1 {
        format!(" {number} of {of}")
    } else {
        String::new()
    };
    format!(
        "⏰ Reminder{count}: still waiting for an answer to \"{}\" ({}). It expires {}.\n{}",
        shorten(&question.prompt, 120),
        question.id,
        time_left(question, now),
        commands_hint(question)
    )
}

/// "in 29 min", "in 40 s": how long until `expires_at`.
pub fn time_left(question: &Question, now: Millis) -> String {
    let secs = question.remaining(now).as_secs();
    match secs {
        0 => "now".to_owned(),
        1..=99 => format!("in {secs} s"),
        100..=5999 => format!("in {} min", secs.div_ceil(60)),
        _ => format!("in {} h", secs.div_ceil(3600)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, CommandLine, DISCORD_PAYLOAD_CHARS, TELEGRAM_PAYLOAD_BYTES};
    use crate::id::QuestionId;
    use crate::question::{Answer, DEFAULT_TIMEOUT, MAX_LABEL_CHARS, MAX_OPTIONS};
    use crate::request::NewQuestion;

    /// A small deterministic generator: the property test must be reproducible without a crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn random_label(rng: &mut Rng, index: usize) -> String {
        const PIECES: [&str; 6] = ["a", "Zürich", "日本語", "🚀", "date-fns", "x y"];
        let len = 1 + rng.below(MAX_LABEL_CHARS);
        let mut label = format!("{index}");
        while label.chars().count() < len {
            label.push_str(PIECES[rng.below(PIECES.len())]);
        }
        label
            .chars()
            .take(MAX_LABEL_CHARS)
            .collect::<String>()
            .trim()
            .to_owned()
    }

    fn random_question(rng: &mut Rng) -> Question {
        let kind = [Kind::Ask, Kind::Ask, Kind::Confirm, Kind::Approval][rng.below(4)];
        let count = if kind == Kind::Ask {
            1 + rng.below(MAX_OPTIONS)
        } else {
            0
        };
        let action = (kind == Kind::Approval).then(|| {
            crate::approval::Action::new(
                "shell",
                serde_json::json!({"command": random_label(rng, 0)}),
            )
        });
        // Any non-empty set of decisions on an approval.
        let allowed = (kind == Kind::Approval).then(|| {
            let mut set = crate::decision::ALL_DECISIONS.to_vec();
            set.retain(|_| rng.below(2) == 0);
            if set.is_empty() {
                set.push(crate::decision::ALL_DECISIONS[rng.below(5)]);
            }
            set
        });
        NewQuestion {
            kind,
            options: (0..count).map(|i| random_label(rng, i)).collect(),
            multi: kind == Kind::Ask && rng.below(2) == 0,
            action,
            allowed,
            ..NewQuestion::new("s", "q")
        }
        .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
        .unwrap()
    }

    #[test]
    fn every_payload_fits_both_platforms_and_parses_back() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..3000 {
            let question = random_question(&mut rng);
            let selection: Vec<usize> = (1..=question.options.len())
                .filter(|_| rng.below(2) == 0)
                .collect();
            for button in buttons(&question, &selection) {
                let payload = &button.payload;
                assert!(
                    payload.len() <= TELEGRAM_PAYLOAD_BYTES,
                    "{payload} is {} bytes",
                    payload.len()
                );
                assert!(payload.chars().count() <= DISCORD_PAYLOAD_CHARS);
                let line = CommandLine::parse(payload).unwrap().unwrap();
                assert_eq!(line.command.to_string(), *payload, "round trip");
                if let Command::Answer(answer) = line.command {
                    // Edit and Respond start a conversation: the fields, or a request for text.
                    let talk = ["edit", "respond"]
                        .iter()
                        .any(|w| answer.choice.starts_with(w));
                    if talk {
                        assert!(
                            question.starts_edit(&answer.choice)
                                || answer.choice.starts_with("respond")
                        );
                    } else {
                        question
                            .read_typed(&answer.choice)
                            .expect("every answer button fits its question");
                    }
                }
            }
        }
    }

    #[test]
    fn worst_case_multi_selection_still_fits() {
        let question = NewQuestion {
            options: (1..=MAX_OPTIONS).map(|n| format!("option {n}")).collect(),
            multi: true,
            ..NewQuestion::new("s", "q")
        }
        .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
        .unwrap();
        // Pairs separated by gaps defeat range compression best: 1,2,4,5,7,8,...
        let selection: Vec<usize> = (1..=MAX_OPTIONS).filter(|n| n % 3 != 0).collect();
        for button in buttons(&question, &selection) {
            assert!(
                button.payload.len() <= TELEGRAM_PAYLOAD_BYTES,
                "{}",
                button.payload
            );
        }
    }

    fn asked(kind: Kind, options: &[&str]) -> Question {
        NewQuestion {
            kind,
            options: options.iter().map(|o| o.to_string()).collect(),
            ..NewQuestion::new("s", "Which library?")
        }
        .into_question(
            QuestionId::parse("k3f9x2m8qa").unwrap(),
            Millis(0),
            DEFAULT_TIMEOUT,
        )
        .unwrap()
    }

    #[test]
    fn question_text_lists_options_and_exact_commands() {
        let text = question_text(&asked(Kind::Ask, &["dayjs", "date-fns", "luxon"]), 4096);
        assert!(text.contains("1. dayjs\n2. date-fns\n3. luxon"), "{text}");
        assert!(text.contains("/answer k3f9x2m8qa <1-3 or name>"), "{text}");
        assert!(text.contains("/decline k3f9x2m8qa"), "{text}");
        let body = question_body(&asked(Kind::Ask, &["dayjs", "date-fns", "luxon"]), 4096);
        assert!(
            body.ends_with("3. luxon") && !body.contains("/answer"),
            "{body}"
        );
    }

    #[test]
    fn long_questions_are_shortened_to_the_budget() {
        let mut question = asked(Kind::Ask, &[]);
        question.options = (0..MAX_OPTIONS)
            .map(|n| format!("{n}{}", "x".repeat(99)))
            .collect();
        question.detail = Some("d".repeat(8000));
        let text = question_text(&question, 2000);
        assert!(text.chars().count() <= 2000);
        assert!(text.contains("/show k3f9x2m8qa"));
    }

    #[test]
    fn outcome_lines() {
        let mut question = asked(Kind::Ask, &["dayjs"]);
        question.status = Status::Answered;
        question.resolution = Some(Resolution {
            value: Some(Answer::Text("dayjs".into())),
            decider: crate::actor::Actor::new("discord:1", "discord")
                .named(Some("@alice".into()))
                .into(),
            at: Millis(0),
            message: None,
            rule_id: None,
            votes: Vec::new(),
            edited: None,
            decisions: Vec::new(),
        });
        assert_eq!(
            outcome_line(&question),
            "Answered: dayjs, by @alice via discord"
        );
        assert_eq!(
            already_resolved_line(&question),
            "Already answered: dayjs, by @alice via discord"
        );
        question.status = Status::Expired;
        question.resolution.as_mut().unwrap().message = None;
        assert_eq!(outcome_line(&question), "Expired: default used (dayjs)");
        question.status = Status::Declined;
        question.resolution.as_mut().unwrap().message = Some("not now".into());
        assert_eq!(
            outcome_line(&question),
            "Declined: not now (by @alice via discord)"
        );
    }
}
