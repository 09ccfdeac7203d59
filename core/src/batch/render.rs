//! How a batch reads and which buttons it gets: the actions numbered, each with its decision
//! once made, the commands to type, and per action the buttons of the decisions it offers
//! (each payload `/answer <id> <n> <decision> #<batch digest>`, within Telegram's 64 bytes),
//! then "Approve all" and "Reject all". Apart from [`crate::render`], which calls it, so each
//! file reads at a glance.

use super::Entry;
use crate::approval::{ApprovalReply, REJECT};
use crate::button::{Button, ButtonRole};
use crate::command::AnswerCommand;
use crate::decision::Decision;
use crate::question::Question;
use crate::text::shorten;

/// Longest argument value shown per action when the message has room.
const ARG_CHARS: usize = 120;

/// The actions, numbered, each with its arguments (values within `value_chars`, 120 when
/// `None`) and its decision once made.
pub fn block(question: &Question, value_chars: Option<usize>) -> String {
    let max = value_chars.unwrap_or(ARG_CHARS);
    let mut text = format!(
        "{} actions (digest {}):",
        question.actions.len(),
        question.batch_short_digest()
    );
    for item in &question.actions {
        text.push_str(&format!("\n{}. {}", item.n, item.action.tool_shown()));
        for (name, value) in item.action.arguments() {
            text.push_str(&format!("\n   {name}: {}", shorten(&value, max)));
        }
        match &item.decision {
            Some(entry) => text.push_str(&format!("\n   {}", decision_line(entry))),
            None if question.is_pending() => {
                let offers = crate::decision::words(&item.allowed);
                text.push_str(&format!("\n   (undecided: {offers})"));
            }
            None => text.push_str("\n   (undecided)"),
        }
    }
    text
}

/// How one decision reads: "✅ allowed once by @alice", "🚫 rejected: too broad (by @bob)".
pub fn decision_line(entry: &Entry) -> String {
    let who = entry.who();
    let shown = |v: &serde_json::Value| shorten(&crate::text::visible(&v.to_string()), 200);
    match entry.decision {
        _ if entry.by_rule => format!("✅ allowed by {who}"),
        Decision::Once => format!("✅ allowed once by {who}"),
        Decision::Always if entry.everywhere => format!("✅ always allowed everywhere by {who}"),
        Decision::Always => format!("✅ always allowed in this session by {who}"),
        Decision::Edit => format!(
            "✏️ approved with changes: {} (by {who})",
            entry.args.as_ref().map(shown).unwrap_or_default()
        ),
        Decision::Respond => format!(
            "💬 responded: {} (by {who})",
            shorten(entry.text.as_deref().unwrap_or_default(), 200)
        ),
        Decision::Reject => match &entry.message {
            Some(message) => format!("🚫 rejected: {} (by {who})", shorten(message, 200)),
            None => format!("🚫 rejected by {who}"),
        },
    }
}

/// A resolved batch's outcome: each decision, short, in order.
pub fn outcome(question: &Question, by: &str, via: &str) -> String {
    let decisions = question
        .resolution
        .as_ref()
        .map(|r| r.decisions.clone())
        .unwrap_or_default();
    let parts: Vec<String> = decisions
        .iter()
        .map(|e| {
            let word = match e.decision {
                _ if e.by_rule => "allowed by rule",
                Decision::Once => "allowed once",
                Decision::Always => "always allowed",
                Decision::Edit => "approved with changes",
                Decision::Respond => "responded",
                Decision::Reject => "rejected",
            };
            format!("{} {word}", e.action)
        })
        .collect();
    format!("Decided: {}, by {by} via {via}", parts.join("; "))
}

/// How far a pending batch is: "2 of 3 actions decided; 3 is still undecided."
pub fn progress(question: &Question) -> String {
    let undecided: Vec<String> = question
        .actions
        .iter()
        .filter(|a| a.decision.is_none())
        .map(|a| a.n.to_string())
        .collect();
    let total = question.actions.len();
    let decided = total - undecided.len();
    let still = match undecided.len() {
        0 => String::new(),
        1 => format!("; {} is still undecided", undecided[0]),
        _ => format!(
            "; {} are still undecided",
            crate::decision::words_of(&undecided.iter().map(String::as_str).collect::<Vec<_>>())
        ),
    };
    format!("{decided} of {total} actions decided{still}.")
}

/// The commands to type.
pub fn hint(question: &Question) -> String {
    let id = &question.id;
    let mut words: Vec<&str> = Vec::new();
    for item in question.actions.iter().filter(|a| a.decision.is_none()) {
        for decision in &item.allowed {
            let word = match decision {
                Decision::Once => "once",
                Decision::Always => "always",
                Decision::Edit => "edit {json}",
                Decision::Respond => "respond <text>",
                Decision::Reject => "reject [reason]",
            };
            if !words.contains(&word) {
                words.push(word);
            }
        }
    }
    format!(
        "Decide each: /answer {id} <n> {}\nOr all at once: /answer {id} all once  or  /answer {id} all reject [reason]",
        words.join(" | ")
    )
}

/// Per undecided action the decisions it offers, then "Approve all" and "Reject all" when
/// every undecided action offers them.
pub fn buttons(question: &Question) -> Vec<Button> {
    let id = &question.id;
    let digest = question.batch_short_digest();
    let command = |what: String| AnswerCommand::word(id, &format!("{what} #{digest}"));
    let undecided: Vec<_> = question
        .actions
        .iter()
        .filter(|a| a.decision.is_none())
        .collect();
    let mut buttons = Vec::new();
    for item in &undecided {
        let n = item.n;
        for decision in &item.allowed {
            let (label, word, role) = match decision {
                Decision::Once => ("Allow", ApprovalReply::Once.as_str(), ButtonRole::Accept),
                Decision::Always => ("Always", "always", ButtonRole::Accept),
                Decision::Edit => ("Edit", "edit", ButtonRole::Accept),
                Decision::Respond => ("Respond", "respond", ButtonRole::Accept),
                Decision::Reject => ("Reject", REJECT, ButtonRole::Refuse),
            };
            buttons.push(
                Button::new(
                    format!("{n}: {label}"),
                    command(format!("{n} {word}")),
                    role,
                )
                .for_option(n),
            );
        }
    }
    let all = |d: Decision| undecided.len() > 1 && undecided.iter().all(|a| a.allowed.contains(&d));
    if all(Decision::Once) {
        let approve = command("all once".into());
        buttons.push(Button::new("Approve all", approve, ButtonRole::Accept));
    }
    if all(Decision::Reject) {
        let reject = command("all reject".into());
        buttons.push(Button::new("Reject all", reject, ButtonRole::Refuse));
    }
    buttons
}
