//! What the reply path reads: an [`Attempt`] (who said what about which question), and what it
//! comes to once read against the question ([`Reading`]: a [`Checked`] claim, or a form field),
//! or why it was refused ([`Refusal`]).

use crate::Error;
use askbridge_core::batch::{self, BatchReply, DecideOutcome};
use askbridge_core::quorum::Vote;
use askbridge_core::tally::{self, VoteOutcome};
use askbridge_core::{
    Actor, Answer, Claim, ClaimOutcome, Question, QuestionId, Target, Transition,
};

/// A reply given by a program (HTTP API, Rust API) rather than typed.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramReply {
    /// The answer: a label, labels, a boolean; for approvals `once`, `always`,
    /// `always everywhere` or `reject`.
    pub answer: Answer,
    /// An approval rejection's feedback, or its response's text (with the answer `respond`).
    pub message: Option<String>,
    /// The action digest the replier saw; refused when it is not the question's.
    pub digest: Option<String>,
    /// An approval's edited arguments (with the answer `edit`).
    pub args: Option<serde_json::Value>,
}

impl From<Answer> for ProgramReply {
    fn from(answer: Answer) -> Self {
        ProgramReply {
            answer,
            message: None,
            digest: None,
            args: None,
        }
    }
}

/// What someone said about a question.
#[derive(Clone, Debug, PartialEq)]
pub enum Said {
    /// The `<choice>` of `/answer <id> <choice>`, a button's payload, or a plain reply.
    Typed(String),
    /// A program's reply.
    Program(ProgramReply),
    /// A decline (or an approval's rejection), maybe saying why.
    Decline(Option<String>),
    /// A program's decisions on a batch's actions.
    Batch(BatchReply),
    /// A transition already made by the caller (the Rust API), applied as it is.
    Transition(Transition),
}

/// An attempt to resolve question `id`: what `actor`, writing in `chat` (a target, or `api` for
/// the HTTP API), said about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    /// The question.
    pub id: QuestionId,
    /// What was said.
    pub said: Said,
    /// Who said it, through which surface.
    pub actor: Actor,
    /// Where.
    pub chat: Target,
}

impl Attempt {
    /// A transition the caller made (the Rust API), applied as it is: `Answer`s must already
    /// fit.
    pub fn transition(
        id: &QuestionId,
        transition: Transition,
        actor: Actor,
        chat: &Target,
    ) -> Self {
        Attempt {
            id: id.clone(),
            said: Said::Transition(transition),
            actor,
            chat: chat.clone(),
        }
    }

    /// A program's reply, checked against the question.
    pub fn reply(id: &QuestionId, reply: ProgramReply, actor: Actor, chat: &Target) -> Self {
        Attempt {
            id: id.clone(),
            said: Said::Program(reply),
            actor,
            chat: chat.clone(),
        }
    }
}

/// An attempt read and checked against its question: the claim it makes.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub(super) question: Question,
    pub(super) claim: Claim,
}

impl Checked {
    /// The vote this attempt casts, when its question has a quorum and it is a vote (see
    /// [`tally::vote_of`]) made before the deadline; a late one claims, and so expires it.
    pub(super) fn vote(&self) -> Option<Vote> {
        tally::vote_of(&self.question, &self.claim)
            .filter(|_| self.claim.at < self.question.expires_at)
    }

    /// The decisions this attempt records, when its question is a batch without a quorum.
    fn decisions(&self) -> Option<Vec<batch::Entry>> {
        let Transition::Decide { choices } = &self.claim.transition else {
            return None;
        };
        let question = &self.question;
        (question.is_batch() && question.quorum.is_none())
            .then(|| question.entries_of(choices, &self.claim.decider, self.claim.at))
    }

    /// The question as claiming would leave it, unless someone else wins first (computed on a
    /// copy: [`Question::apply`] is pure). A claim that would lose gives the error it would.
    pub(crate) fn predicted(&self) -> Result<Question, Error> {
        let mut copy = self.question.clone();
        if let Some(vote) = self.vote() {
            return match tally::apply_vote(&mut copy, &vote) {
                VoteOutcome::Counted => Ok(copy),
                VoteOutcome::Met => {
                    let claim = tally::completing_claim(&copy).expect("a met quorum claims");
                    copy.apply(&claim);
                    Ok(copy)
                }
                VoteOutcome::Duplicate => Err(Error::AlreadyVoted(Box::new(copy))),
                VoteOutcome::AlreadyResolved => Err(Error::AlreadyResolved(Box::new(copy))),
            };
        }
        if let Some(entries) = self.decisions() {
            return match batch::apply_decisions(&mut copy, &entries) {
                DecideOutcome::Recorded => Ok(copy),
                DecideOutcome::Complete => {
                    let claim = batch::completing_claim(&copy).expect("a complete batch claims");
                    copy.apply(&claim);
                    Ok(copy)
                }
                DecideOutcome::Decided(_) | DecideOutcome::AlreadyResolved => {
                    Err(Error::AlreadyResolved(Box::new(copy)))
                }
            };
        }
        match copy.apply(&self.claim) {
            ClaimOutcome::Won => Ok(copy),
            ClaimOutcome::Expired | ClaimOutcome::AlreadyResolved => {
                Err(Error::AlreadyResolved(Box::new(copy)))
            }
        }
    }
}

/// What a sender's words come to, read against their question.
#[allow(clippy::large_enum_variant)] // made and matched once per message
pub(crate) enum Reading {
    /// A claim on the question.
    Claim(Checked),
    /// Typed words on a form that are not the whole form's answer: in a chat, the value of the
    /// field asked now (forms are filled one field at a time there). `not_whole` says why they
    /// do not answer the form whole, for a caller that fills no fields.
    Field {
        question: Question,
        text: String,
        not_whole: askbridge_core::Error,
    },
}

/// A refused attempt, with the question when it was read (for the audit record).
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) error: Error,
    pub(crate) question: Option<Question>,
}

impl Refusal {
    /// The store failed, so nothing was decided (unlike a refusal, which is an answer).
    pub(crate) fn is_store_failure(&self) -> bool {
        matches!(self.error, Error::Store(_))
    }
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        let question = match &error {
            Error::AlreadyResolved(question) => Some((**question).clone()),
            _ => None,
        };
        Refusal { error, question }
    }
}
