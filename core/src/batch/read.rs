//! What a reply to a batch means: typed (`2 reject too broad`, `3 edit {json}`, `1 once #<batch
//! digest>`, `all once`, `all reject <why>`) or sent by a program (`action`, `decisions` or
//! `all`). Each decision is read by the single approval its action stands for
//! ([`Question::action_view`]), so every check is that approval's; a refusal names the action.

use super::Choice;
use crate::Error;
use crate::decision::Decision;
use crate::question::{Answer, Question, Transition};
use serde_json::Value;

/// One decision a program asks for (`action` `None`: every action still undecided).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BatchReply {
    /// The decisions, each for an action or for all.
    pub items: Vec<BatchItem>,
    /// The batch digest the replier saw; refused when it is not this batch's.
    pub digest: Option<String>,
}

/// One decision of a [`BatchReply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchItem {
    /// The action's number; `None` for every action still undecided.
    pub action: Option<usize>,
    /// The decision.
    pub decision: Decision,
    /// A rejection's feedback, or a response's text.
    pub message: Option<String>,
    /// Edited arguments (with `edit`).
    pub args: Option<Value>,
}

impl Question {
    /// Reads a typed reply to a batch: `<n> <decision ...>` or `all <once|always|reject ...>`,
    /// with the batch digest (`#3fa9c1d2`) anywhere before the decision's own words.
    pub(crate) fn read_batch(&self, raw: &str) -> Result<Transition, Error> {
        let mut rest = raw.trim();
        let (mut which, mut digest) = (None, None);
        while which.is_none() || digest.is_none() {
            let (head, tail) = split_word(rest);
            match head {
                "" => break,
                _ if head.starts_with('#') && digest.is_none() => digest = Some(head),
                _ if which.is_none() => which = Some(head),
                _ => break,
            }
            rest = tail;
        }
        // A button's digest comes after the decision word: `1 once #3fa9c1d2`.
        let (word, after) = split_word(rest);
        let (next, tail) = split_word(after);
        let owned;
        if digest.is_none() && next.starts_with('#') {
            digest = Some(next);
            owned = format!("{word} {tail}");
            rest = owned.trim();
        }
        if let Some(digest) = digest {
            self.check_batch_digest(digest)?;
        }
        let Some(which) = which else {
            return Err(self.batch_usage());
        };
        let choices = if which.eq_ignore_ascii_case("all") {
            let decision = Decision::parse(split_word(rest).0);
            self.for_all(decision, |view| view.read_typed(rest))?
        } else {
            let n = which.parse::<usize>().map_err(|_| self.batch_usage())?;
            let view = self.undecided(n)?;
            self.words_needed(&view, n, rest)?;
            let then = view.read_typed(rest).map_err(|e| at_action(n, e))?;
            vec![Choice { action: n, then }]
        };
        Ok(Transition::Decide { choices })
    }

    /// Reads a program's decisions on a batch.
    pub fn batch_transition(&self, reply: &BatchReply) -> Result<Transition, Error> {
        if let Some(digest) = &reply.digest {
            self.check_batch_digest(digest)?;
        }
        if reply.items.is_empty() {
            return Err(self.batch_usage());
        }
        let mut choices: Vec<Choice> = Vec::new();
        for item in &reply.items {
            let read = |view: &Question| {
                view.reply_transition(
                    Answer::Text(item.decision.as_str().to_owned()),
                    item.message.clone(),
                    None,
                    item.args.clone(),
                )
            };
            match item.action {
                None => choices.extend(self.for_all(Some(item.decision), read)?),
                Some(n) => {
                    let view = self.undecided(n)?;
                    if choices.iter().any(|c| c.action == n) {
                        return Err(Error::NotFit {
                            reason: format!(
                                "Action {n} is named twice; give one decision per action. Nothing was decided."
                            ),
                        });
                    }
                    let then = read(&view).map_err(|e| at_action(n, e))?;
                    choices.push(Choice { action: n, then });
                }
            }
        }
        Ok(Transition::Decide { choices })
    }

    /// A rejection of every action still undecided, with `message` as each one's feedback: a
    /// batch's decline (`/decline`, the HTTP API's reject).
    pub(crate) fn reject_all(&self, message: Option<&str>) -> Result<Transition, Error> {
        let message = crate::answer::decline_message(message)?;
        let reply = BatchReply {
            items: vec![BatchItem {
                action: None,
                decision: Decision::Reject,
                message,
                args: None,
            }],
            digest: None,
        };
        self.batch_transition(&reply)
    }

    /// Refuses a transition a program made itself (the Rust API) on a batch unless it decides
    /// undecided actions, each as its single approval would take it.
    pub(crate) fn check_choices(&self, transition: &Transition) -> Result<(), Error> {
        let Transition::Decide { choices } = transition else {
            return Err(self.batch_needs_numbers());
        };
        if choices.is_empty() {
            return Err(self.batch_usage());
        }
        for (index, choice) in choices.iter().enumerate() {
            let n = choice.action;
            let view = self.undecided(n)?;
            if choices[..index].iter().any(|c| c.action == n) {
                return Err(Error::NotFit {
                    reason: format!("Action {n} is named twice. Nothing was decided."),
                });
            }
            if matches!(
                choice.then,
                Transition::Decide { .. } | Transition::Expire | Transition::Cancel { .. }
            ) {
                return Err(Error::NotFit {
                    reason: format!(
                        "Action {n} takes once, always, edit, respond or reject. Nothing was decided."
                    ),
                });
            }
            if let Transition::Answer { value } = &choice.then {
                view.check_answer(value.clone())
                    .map_err(|e| at_action(n, e))?;
            }
            view.check_transition(&choice.then)
                .map_err(|e| at_action(n, e))?;
        }
        Ok(())
    }

    /// The refusal of a reply that names no action on a batch.
    pub(crate) fn batch_needs_numbers(&self) -> Error {
        Error::NotFit {
            reason: format!(
                "This approval has {} actions: decide each by its number ({{\"action\": 2, \"decision\": \"reject\"}}), several in \"decisions\", or every one with \"all\". Nothing was decided.",
                self.actions.len()
            ),
        }
    }

    /// Refuses a reply bound to another batch than this one.
    pub fn check_batch_digest(&self, digest: &str) -> Result<(), Error> {
        let full = self.batch_digest.as_deref().unwrap_or_default();
        let digest = digest.trim().trim_start_matches('#').to_lowercase();
        if digest.len() >= 4 && full.starts_with(&digest) {
            return Ok(());
        }
        Err(Error::NotFit {
            reason: format!(
                "This reply is for other actions (digest {}); these actions have digest {}. Nothing was decided.",
                crate::text::shorten(&crate::text::printable(&digest), 20),
                self.batch_short_digest()
            ),
        })
    }

    /// Action `n` as a single approval, refused when there is no such action or it was decided.
    fn undecided(&self, n: usize) -> Result<Question, Error> {
        let view = self.action_view(n)?;
        if let Some(entry) = &self.actions[n - 1].decision {
            return Err(Error::AlreadyDecided {
                action: n,
                reason: format!(
                    "Action {n} was decided already ({} by {}). Nothing was decided.",
                    entry.decision.as_str(),
                    entry.who()
                ),
            });
        }
        Ok(view)
    }

    /// `read` applied to every action still undecided: "all" takes once, always or reject
    /// (edit and respond carry one action's own words).
    fn for_all(
        &self,
        decision: Option<Decision>,
        read: impl Fn(&Question) -> Result<Transition, Error>,
    ) -> Result<Vec<Choice>, Error> {
        if decision.is_none_or(|d| d.carries_words()) {
            return Err(Error::NotFit {
                reason: format!(
                    "\"all\" takes once, always or reject; edit and respond are given per action (/answer {} 2 edit {{...}}). Nothing was decided.",
                    self.id
                ),
            });
        }
        let mut choices = Vec::new();
        for item in self.actions.iter().filter(|a| a.decision.is_none()) {
            let view = self.action_view(item.n)?;
            let then = read(&view).map_err(|e| at_action(item.n, e))?;
            choices.push(Choice {
                action: item.n,
                then,
            });
        }
        if choices.is_empty() {
            return Err(Error::AlreadyDecided {
                action: 0,
                reason: "Every action was decided already. Nothing was decided.".into(),
            });
        }
        Ok(choices)
    }

    /// Refuses a bare `edit` or `respond` (an Edit or Respond button) with exactly what to type
    /// for action `n`: the proposed arguments to change, or the response.
    fn words_needed(&self, view: &Question, n: usize, rest: &str) -> Result<(), Error> {
        let (word, after) = split_word(rest);
        let decision = Decision::parse(word).filter(|d| d.carries_words() && after.is_empty());
        let Some(decision) = decision else {
            return Ok(());
        };
        view.allows(decision).map_err(|e| at_action(n, e))?;
        let id = &self.id;
        let reason = match decision {
            Decision::Edit => {
                let args = &self.actions[n - 1].action.args;
                let args = crate::text::visible(&args.to_string()).into_owned();
                format!(
                    "To edit action {n}, send its arguments with your changes: /answer {id} {n} edit {args}"
                )
            }
            _ => format!(
                "What is your response to action {n}? Reply /answer {id} {n} respond <your text>: it becomes the tool's result."
            ),
        };
        Err(Error::NotFit { reason })
    }

    fn batch_usage(&self) -> Error {
        Error::NotFit {
            reason: format!(
                "This approval has {} actions: decide one by its number (/answer {id} 2 reject <why>, /answer {id} 3 edit {{...}}) or all at once (/answer {id} all once).",
                self.actions.len(),
                id = self.id
            ),
        }
    }
}

/// `error`, naming action `n`: "Action 2 does not offer ..." for a single approval's "This
/// approval does not offer ...", `action 2 args.replicas` for an argument.
fn at_action(n: usize, error: Error) -> Error {
    match error {
        Error::NotFit { reason } => Error::NotFit {
            reason: match reason.strip_prefix("This approval") {
                Some(rest) => format!("Action {n}{rest}"),
                None => format!("Action {n}: {reason}"),
            },
        },
        Error::Argument { field, reason } => Error::Argument {
            field: format!("action {n} {field}"),
            reason,
        },
        other => other,
    }
}

/// The first word of `text` and the rest, both trimmed.
fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim();
    match text.find(char::is_whitespace) {
        Some(at) => (&text[..at], text[at..].trim()),
        None => (text, ""),
    }
}
