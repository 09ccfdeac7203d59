//! The quorum rules that need the question: which claims are votes, the pure vote state machine
//! every store applies, and the claim that ends a question whose quorum is met.
//!
//! Votes are kept apart from [`Question::apply`] on purpose: a vote changes a pending question
//! without resolving it, and only the claim built by [`completing_claim`] resolves it, through the
//! same claim-once path as any answer. So "first answer wins" keeps one meaning, and a process
//! that dies between the vote that completes a quorum and its claim leaves a question any
//! sweeper can finish ([`completing_claim`] needs nothing but the question).

use crate::actor::{Actor, Decider};
use crate::approval::ApprovalReply;
use crate::decision::Decision;
use crate::identity::Identity;
use crate::question::Choice;
use crate::question::{Claim, Kind, Question, Transition};
use crate::quorum::{Vote, count};
use crate::value::Answer;

/// What [`apply_vote`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteOutcome {
    /// Recorded; the quorum is not met yet.
    Counted,
    /// Recorded, and with it `needs` votes agree: [`completing_claim`] ends the question.
    Met,
    /// This person has voted already; nothing changed.
    Duplicate,
    /// The question is no longer pending; nothing changed.
    AlreadyResolved,
}

impl VoteOutcome {
    /// True when the vote was recorded (whether or not it met the quorum): the store writes it
    /// and announces it.
    pub fn is_counted(self) -> bool {
        matches!(self, VoteOutcome::Counted | VoteOutcome::Met)
    }
}

/// The vote `claim` casts on `question`, if it is one: an answer by a person on a question with a
/// quorum. Declines (and approval rejections) are not votes: one member's "no" ends the question
/// at once. For confirms, "yes" is a vote and "no" ends it.
pub fn vote_of(question: &Question, claim: &Claim) -> Option<Vote> {
    question.quorum.as_ref()?;
    let actor = claim.decider.actor()?;
    if let Transition::Decide { choices } = &claim.transition {
        return batch_vote(question, choices, actor, claim);
    }
    let Transition::Answer { value } = &claim.transition else {
        return None;
    };
    let tally = match question.kind {
        Kind::Approval => {
            ApprovalReply::of_answer(value)?;
            "allow".to_owned()
        }
        Kind::Confirm if *value == Answer::Bool(true) => "yes".to_owned(),
        Kind::Confirm => return None,
        Kind::Ask | Kind::Form => format!("{value:?}"),
    };
    Some(Vote {
        by: actor.by.clone(),
        by_name: actor.by_name.clone(),
        via: actor.via.clone(),
        at: claim.at,
        value: value.clone(),
        tally,
    })
}

/// A member's decisions on a batch with a quorum, when they decide every action: their vote,
/// its value the decisions' words in order, counted with the votes of the same list (once and
/// always agree, as they do on one approval).
fn batch_vote(
    question: &Question,
    choices: &[Choice],
    actor: &Actor,
    claim: &Claim,
) -> Option<Vote> {
    if choices.len() != question.actions.len() {
        return None;
    }
    let mut words = vec![String::new(); choices.len()];
    let mut tally = vec![""; choices.len()];
    for choice in choices {
        let at = choice.action.checked_sub(1).filter(|i| *i < words.len())?;
        (words[at], tally[at]) = match &choice.then {
            Transition::Answer { value } => (
                ApprovalReply::of_answer(value)?.as_str().to_owned(),
                "allow",
            ),
            Transition::Decline { .. } => (Decision::Reject.as_str().to_owned(), "reject"),
            _ => return None,
        };
    }
    Some(Vote {
        by: actor.by.clone(),
        by_name: actor.by_name.clone(),
        via: actor.via.clone(),
        at: claim.at,
        value: Answer::List(words),
        tally: tally.join(","),
    })
}

/// The choices a batch's agreeing votes make: per action, "always" only when every agreeing
/// vote said the same "always"; otherwise "once", or "reject".
fn batch_choices(agreeing: &[&Vote]) -> Vec<Choice> {
    let words = |v: &Vote| match &v.value {
        Answer::List(words) => words.clone(),
        _ => Vec::new(),
    };
    let first = words(agreeing[0]);
    (0..first.len())
        .map(|i| {
            let same = agreeing.iter().all(|v| words(v).get(i) == first.get(i));
            let word = if same { first[i].as_str() } else { "once" };
            let then = if word == Decision::Reject.as_str() {
                Transition::Decline { message: None }
            } else {
                let parts: Vec<&str> = word.split(' ').collect();
                let reply = ApprovalReply::from_words(&parts).unwrap_or(ApprovalReply::Once);
                Transition::Answer {
                    value: reply.into(),
                }
            };
            Choice {
                action: i + 1,
                then,
            }
        })
        .collect()
}

/// The state machine of a vote, as every store applies it atomically: a pending question takes
/// one vote per person.
pub fn apply_vote(question: &mut Question, vote: &Vote) -> VoteOutcome {
    if !question.is_pending() {
        return VoteOutcome::AlreadyResolved;
    }
    if has_voted(question, &vote.by) {
        return VoteOutcome::Duplicate;
    }
    question.votes.push(vote.clone());
    if is_met(question) {
        VoteOutcome::Met
    } else {
        VoteOutcome::Counted
    }
}

/// Has `who` voted on `question` already? (Each person votes once.)
pub fn has_voted(question: &Question, who: &Identity) -> bool {
    question.votes.iter().any(|v| v.by == *who)
}

/// True when `needs` of the question's votes agree, or every action of a batch without a
/// quorum is decided ([`crate::batch::is_complete`]): the question is ready for its
/// completing claim.
pub fn is_met(question: &Question) -> bool {
    let Some(quorum) = &question.quorum else {
        return crate::batch::is_complete(question);
    };
    question
        .votes
        .iter()
        .any(|v| count(&question.votes, &v.tally) >= quorum.needs)
}

/// The claim that resolves a question whose quorum is met: decided by the member whose vote
/// completed it, answering what the agreeing votes answered (for approvals, "always" only when
/// every agreeing vote said the same "always"; otherwise "once"), listing every vote. `None` while
/// the quorum is not met.
pub fn completing_claim(question: &Question) -> Option<Claim> {
    let Some(quorum) = question.quorum.as_ref() else {
        return crate::batch::completing_claim(question);
    };
    let agreeing: Vec<&Vote> = {
        let tally = question
            .votes
            .iter()
            .find(|v| count(&question.votes, &v.tally) >= quorum.needs)?
            .tally
            .clone();
        question.votes.iter().filter(|v| v.tally == tally).collect()
    };
    let last = agreeing.iter().max_by_key(|v| v.at)?;
    let actor = Actor {
        by: last.by.clone(),
        by_name: last.by_name.clone(),
        via: last.via.clone(),
    };
    if question.is_batch() {
        let choices = batch_choices(&agreeing);
        return Some(Claim::new(
            Transition::Decide { choices },
            Decider::Actor(actor),
            last.at,
        ));
    }
    let first_value = &agreeing[0].value;
    let value = if agreeing.iter().all(|v| &v.value == first_value) {
        first_value.clone()
    } else {
        Answer::Text(ApprovalReply::Once.as_str().to_owned())
    };
    // The resolution lists the question's votes (`Question::resolution_for`).
    Some(Claim::new(
        Transition::Answer { value },
        Decider::Actor(actor),
        last.at,
    ))
}

/// A quorum's progress, as every surface shows it: "1 of 2 approved: @alice". `None` without a
/// quorum.
pub fn progress_line(question: &Question) -> Option<String> {
    let quorum = question.quorum.as_ref()?;
    let votes = &question.votes;
    // The leading answer: the one most votes share (the earliest, on a tie).
    let leading = votes
        .iter()
        .max_by_key(|v| (count(votes, &v.tally), std::cmp::Reverse(v.at)));
    let (n, names, value) = match leading {
        None => (0, String::new(), None),
        Some(lead) => {
            let agreeing: Vec<String> = votes
                .iter()
                .filter(|v| v.tally == lead.tally)
                .map(|v| v.who())
                .collect();
            (agreeing.len(), agreeing.join(", "), Some(&lead.value))
        }
    };
    let needs = quorum.needs;
    let mut line = match (question.kind, value) {
        (Kind::Approval, _) => format!("{n} of {needs} approved"),
        (Kind::Confirm, _) => format!("{n} of {needs} said yes"),
        (Kind::Ask, Some(value)) => format!("{n} of {needs} agree on \"{value}\""),
        (Kind::Ask | Kind::Form, None) => format!("0 of {needs} agree"),
        (Kind::Form, Some(_)) => format!("{n} of {needs} agree"),
    };
    if !names.is_empty() {
        line.push_str(": ");
        line.push_str(&names);
    }
    if question.is_pending() {
        let members: Vec<String> = quorum.of.iter().map(|m| m.to_string()).collect();
        line.push_str(&format!(" (needs {needs} of {})", members.join(", ")));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Action;
    use crate::id::QuestionId;
    use crate::request::NewQuestion;
    use crate::time::Millis;
    use crate::{ClaimOutcome, Status};
    use std::time::Duration;

    fn approval(needs: u32) -> Question {
        NewQuestion::ask("Deploy?")
            .session("s")
            .approve(Action {
                tool: "shell".into(),
                args: serde_json::json!({"command": "make deploy"}),
            })
            .quorum(needs, ["telegram:42", "discord:7", "api"])
            .into_question(
                QuestionId::random(),
                Millis(1_000),
                Duration::from_secs(600),
            )
            .unwrap()
    }

    fn said(question: &Question, by: &str, answer: &str, at: u64) -> Claim {
        let value = Answer::Text(answer.into());
        let transition = question
            .check_answer(value)
            .map(|value| Transition::Answer { value });
        Claim::new(transition.unwrap(), Actor::new(by, "test"), Millis(at))
    }

    #[test]
    fn two_of_three_resolve_once_and_a_second_vote_by_one_person_changes_nothing() {
        let mut q = approval(2);
        assert_eq!(q.answerers.len(), 3, "the members are the answerers");
        let alice = vote_of(&q, &said(&q, "telegram:42", "always", 2_000)).unwrap();
        assert_eq!(apply_vote(&mut q, &alice), VoteOutcome::Counted);
        assert_eq!(apply_vote(&mut q, &alice), VoteOutcome::Duplicate);
        assert!(completing_claim(&q).is_none());
        let bob = vote_of(&q, &said(&q, "discord:7", "once", 3_000)).unwrap();
        assert_eq!(apply_vote(&mut q, &bob), VoteOutcome::Met);
        let claim = completing_claim(&q).unwrap();
        assert_eq!(claim.decider.actor().unwrap().by, "discord:7");
        assert_eq!(
            claim.transition,
            Transition::Answer {
                value: Answer::Text("once".into())
            },
            "one 'once' makes the quorum's answer 'once'"
        );
        assert_eq!(q.apply(&claim), ClaimOutcome::Won);
        let resolution = q.resolution.as_ref().unwrap();
        assert_eq!(resolution.votes.len(), 2);
        assert!(resolution.rule_to_create().is_none());
        assert_eq!(apply_vote(&mut q, &alice), VoteOutcome::AlreadyResolved);
    }

    #[test]
    fn a_rejection_and_a_confirms_no_are_not_votes() {
        let q = approval(2);
        let reject = Claim::new(
            Transition::Decline { message: None },
            Actor::new("api", "api"),
            Millis(2_000),
        );
        assert!(vote_of(&q, &reject).is_none());
        let mut confirm = NewQuestion::confirm("Go?")
            .session("s")
            .quorum(2, ["api", "telegram:1"])
            .into_question(QuestionId::random(), Millis(0), Duration::from_secs(60))
            .unwrap();
        let no = Claim::new(
            Transition::Answer {
                value: Answer::Bool(false),
            },
            Actor::new("api", "api"),
            Millis(1),
        );
        assert!(vote_of(&confirm, &no).is_none());
        let yes = Claim::new(
            Transition::Answer {
                value: Answer::Bool(true),
            },
            Actor::new("api", "api"),
            Millis(1),
        );
        let vote = vote_of(&confirm, &yes).unwrap();
        assert_eq!(apply_vote(&mut confirm, &vote), VoteOutcome::Counted);
        assert_eq!(confirm.status, Status::Pending);
    }

    #[test]
    fn a_quorum_batch_takes_each_members_whole_list_as_a_vote() {
        let mut q = NewQuestion::ask("x")
            .session("s")
            .approve_all([
                crate::batch::tests::item("a", serde_json::json!({}), &[]),
                crate::batch::tests::item("b", serde_json::json!({}), &[]),
            ])
            .quorum(2, ["telegram:1", "telegram:2", "api"])
            .into_question(
                QuestionId::random(),
                Millis(0),
                crate::question::DEFAULT_TIMEOUT,
            )
            .unwrap();
        let vote = |q: &Question, by: &str, raw: &str, at: u64| {
            let claim = Claim::new(q.read_typed(raw).unwrap(), Actor::new(by, "t"), Millis(at));
            super::vote_of(q, &claim)
        };
        assert!(
            vote(&q, "telegram:1", "1 once", 1).is_none(),
            "a partial list"
        );
        let mut choices = crate::batch::tests::choices(&q, "all once").unwrap();
        choices[1].then = Transition::Decline { message: None };
        let claim = |by: &str, at| {
            Claim::new(
                Transition::Decide {
                    choices: choices.clone(),
                },
                Actor::new(by, "t"),
                Millis(at),
            )
        };
        let a = super::vote_of(&q, &claim("telegram:1", 1)).unwrap();
        assert_eq!(super::apply_vote(&mut q, &a), super::VoteOutcome::Counted);
        let b = vote(&q, "telegram:2", "all once", 2).unwrap();
        assert_eq!(super::apply_vote(&mut q, &b), super::VoteOutcome::Counted);
        let c = super::vote_of(&q, &claim("api", 3)).unwrap();
        assert_eq!(super::apply_vote(&mut q, &c), super::VoteOutcome::Met);
        let done = super::completing_claim(&q).unwrap();
        q.apply(&done);
        let r = q.resolution.unwrap();
        assert_eq!(
            r.value,
            Some(Answer::List(vec!["once".into(), "reject".into()]))
        );
        assert_eq!(r.decisions.len(), 2);
        assert_eq!(r.by(), "api");
    }
}
