//! What a reply to an approval means: the decision typed (`once`, `always [everywhere]`,
//! `edit <json>`, `respond <text>`, `reject [why]`, with the digest buttons carry) or sent by a
//! program, each checked against the decisions the approval offers ([`crate::decision`]).
//! Apart from the other answers because an approval's reply is a decision, not a value.

use super::decline_message;
use crate::Error;
use crate::approval::{ApprovalReply, REJECT};
use crate::decision::Decision;
use crate::question::{Answer, Kind, MAX_ANSWER_CHARS, Question, Transition};

impl Question {
    /// The transition a program's reply asks for: the checked answer, or for approvals also
    /// `reject` with `message` as its feedback, `edit` with `args`, `respond` with `message` as
    /// its text. `digest`, when given, must be this approval's.
    pub fn reply_transition(
        &self,
        answer: Answer,
        message: Option<String>,
        digest: Option<&str>,
        args: Option<serde_json::Value>,
    ) -> Result<Transition, Error> {
        if self.is_batch() {
            return Err(self.batch_needs_numbers());
        }
        if let Some(digest) = digest {
            self.check_digest(digest)?;
        }
        let decision = match (&self.kind, &answer) {
            (Kind::Approval, Answer::Text(text)) => Decision::parse(text),
            _ => None,
        };
        if args.is_some() && decision != Some(Decision::Edit) {
            return Err(Error::NotFit {
                reason: "Arguments go with the decision \"edit\" only.".into(),
            });
        }
        match decision {
            Some(Decision::Reject) => {
                self.allows(Decision::Reject)?;
                let message = message
                    .map(|m| truncate_chars(m.trim()))
                    .filter(|m| !m.is_empty());
                feedback(message)
            }
            Some(Decision::Edit) => {
                let Some(args) = args else {
                    return Err(Error::NotFit {
                        reason: "An edit needs the arguments to run with: {\"decision\": \"edit\", \"args\": {...}}.".into(),
                    });
                };
                let args = self.check_edit(args)?;
                Ok(Transition::Edit { args })
            }
            Some(Decision::Respond) => {
                let text = self.check_response(message.as_deref().unwrap_or_default())?;
                Ok(Transition::Respond { text })
            }
            _ => Ok(Transition::Answer {
                value: self.check_answer(answer)?,
            }),
        }
    }

    /// A decline (an approval's rejection) with `message`: refused on an approval that does not
    /// offer reject.
    pub fn decline_transition(&self, message: Option<&str>) -> Result<Transition, Error> {
        if self.is_batch() {
            return self.reject_all(message);
        }
        if self.kind == Kind::Approval {
            self.allows(Decision::Reject)?;
        }
        decline_message(message).map(|message| Transition::Decline { message })
    }

    /// Refuses a transition a program made itself (the Rust API) that this question does not
    /// offer: an edit or a response anywhere but on an approval allowing it, with arguments
    /// that fit; a rejection an approval does not allow.
    pub fn check_transition(&self, transition: &Transition) -> Result<(), Error> {
        if self.is_batch() {
            return self.check_choices(transition);
        }
        match transition {
            Transition::Decide { .. } => Err(Error::NotFit {
                reason: "Decisions per action are for an approval of several actions.".into(),
            }),
            Transition::Edit { args } => self.check_edit(args.clone()).map(|_| ()),
            Transition::Respond { text } => self.check_response(text).map(|_| ()),
            Transition::Decline { .. } if self.kind == Kind::Approval => {
                self.allows(Decision::Reject)
            }
            _ => Ok(()),
        }
    }

    /// `once`, `always [everywhere|session]`, `reject [feedback]`, `edit <json>` or `respond
    /// <text>`, optionally with the action's digest (`#3fa9c1d2`, as buttons carry it) before
    /// the feedback, the arguments or the text.
    pub(super) fn read_approval(&self, raw: &str) -> Result<Transition, Error> {
        if let Some((decision, rest)) = self.answer_words(raw)? {
            return match decision {
                Decision::Edit if rest.is_empty() => Err(self.not_fit(
                    "An edit needs the arguments to run with, as JSON: edit {\"name\": \"value\"}.",
                )),
                Decision::Edit => {
                    self.allows(Decision::Edit)?;
                    let args = serde_json::from_str(rest).map_err(|e| Error::Argument {
                        field: "args".into(),
                        reason: format!("is not JSON ({e})"),
                    })?;
                    Ok(Transition::Edit {
                        args: self.check_edit(args)?,
                    })
                }
                _ if rest.is_empty() => {
                    self.allows(Decision::Respond)?;
                    Err(Error::NotFit {
                        reason: format!(
                            "What is your response? Reply /answer {} respond <your text>: it becomes the tool's result.",
                            self.id
                        ),
                    })
                }
                _ => Ok(Transition::Respond {
                    text: self.check_response(rest)?,
                }),
            };
        }
        let mut words: Vec<&str> = raw.split_whitespace().collect();
        let digest_at = words.iter().position(|w| w.starts_with('#'));
        if let Some(at) = digest_at.filter(|at| *at <= 2) {
            self.check_digest(&words[at][1..])?;
            words.remove(at);
        }
        let first = words.first().map(|w| w.to_lowercase()).unwrap_or_default();
        if first == REJECT {
            self.allows(Decision::Reject)?;
            let text = words[1..].join(" ");
            return feedback((!text.is_empty()).then(|| truncate_chars(&text)));
        }
        let lowered: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
        let lowered: Vec<&str> = lowered.iter().map(String::as_str).collect();
        let value = self.approval_value(&lowered)?;
        Ok(Transition::Answer {
            value: value.into(),
        })
    }

    /// `edit ...` or `respond ...` (a digest before or after the word checked and dropped):
    /// the decision and the raw rest, which JSON and free text need kept as typed.
    fn answer_words<'a>(&self, raw: &'a str) -> Result<Option<(Decision, &'a str)>, Error> {
        let (mut head, mut rest) = split_word(raw);
        let mut digest = None;
        if head.starts_with('#') {
            digest = Some(head);
            (head, rest) = split_word(rest);
        }
        let Some(decision) = Decision::parse(head).filter(|d| d.carries_words()) else {
            return Ok(None);
        };
        let (next, after) = split_word(rest);
        if digest.is_none() && next.starts_with('#') {
            digest = Some(next);
            rest = after;
        }
        if let Some(digest) = digest {
            self.check_digest(digest)?;
        }
        Ok(Some((decision, rest)))
    }

    /// True when `raw` is a bare `edit` (with this approval's digest, if any): the start of
    /// editing field by field in chat.
    pub fn starts_edit(&self, raw: &str) -> bool {
        matches!(self.answer_words(raw), Ok(Some((Decision::Edit, ""))))
    }

    /// True when `raw` is a bare `respond` (with this approval's digest, if any) on a single
    /// approval offering it: the Respond button, which asks for the text in the next message.
    pub fn starts_response(&self, raw: &str) -> bool {
        self.kind == Kind::Approval
            && !self.is_batch()
            && self.allows(Decision::Respond).is_ok()
            && matches!(self.answer_words(raw), Ok(Some((Decision::Respond, ""))))
    }

    pub(super) fn approval_value(&self, words: &[&str]) -> Result<ApprovalReply, Error> {
        let reply = ApprovalReply::from_words(words).ok_or_else(|| self.not_fit(""))?;
        self.allows(if reply.creates_rule() {
            Decision::Always
        } else {
            Decision::Once
        })?;
        Ok(reply)
    }

    /// What an approval takes, in words, from its decisions.
    pub(super) fn decisions_hint(&self) -> String {
        let parts: Vec<&str> = self
            .decisions()
            .iter()
            .map(|d| match d {
                Decision::Once => "once",
                Decision::Always => "always (or always everywhere)",
                Decision::Edit => "edit with the arguments as JSON",
                Decision::Respond => "respond with your text",
                Decision::Reject => "reject with an optional reason",
            })
            .collect();
        format!("Reply {}.", crate::decision::words_of(&parts))
    }

    /// Refuses a reply bound to another action than this approval's.
    pub fn check_digest(&self, digest: &str) -> Result<(), Error> {
        let Some(action) = &self.action else {
            return Ok(());
        };
        let digest = digest.trim().trim_start_matches('#').to_lowercase();
        let full = action.digest();
        if digest.len() >= 4 && full.starts_with(&digest) {
            Ok(())
        } else {
            Err(Error::NotFit {
                reason: format!(
                    "This reply is for another action (digest {digest}); this approval is for digest {}. Nothing was approved.",
                    action.short_digest()
                ),
            })
        }
    }
}

/// A rejection with `message` as its feedback, which every surface shows: held to the text
/// policy like any answer.
fn feedback(message: Option<String>) -> Result<Transition, Error> {
    if let Some(why) = message
        .as_deref()
        .and_then(|m| crate::text::refusal(m, crate::text::Lines::Many))
    {
        return Err(Error::NotFit {
            reason: format!("That message {why}."),
        });
    }
    Ok(Transition::Decline { message })
}

/// The first word of `text` and the rest, both trimmed.
fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim();
    match text.find(char::is_whitespace) {
        Some(at) => (&text[..at], text[at..].trim()),
        None => (text, ""),
    }
}

fn truncate_chars(text: &str) -> String {
    text.chars().take(MAX_ANSWER_CHARS).collect()
}
