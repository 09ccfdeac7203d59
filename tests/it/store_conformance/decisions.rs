//! A batch's decisions, on every store: one per action, all of a write or none, the first
//! winning (under a race too); read back with the question; the last one makes the question due
//! for its completing claim, whose resolution lists them in order; a resolved batch takes none.
//! The rule is core's `batch::apply_decisions`; each case's outcome is checked against it.

use super::{Fixture, SETTLE};
use askbridge::store::ClaimOptions;
use askbridge_core::batch::{self, BatchAction, Choice, DecideOutcome, Entry};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::{
    Action, Actor, Decider, Millis, NewQuestion, Question, QuestionId, Transition,
};
use std::time::Duration;

fn three() -> Question {
    NewQuestion::ask("Three actions")
        .session("s1")
        .approve_all(
            (1..=3).map(|n| BatchAction::new(Action::new("tool", serde_json::json!({"n": n})))),
        )
        .into_question(QuestionId::random(), Millis::now(), DEFAULT_TIMEOUT)
        .unwrap()
}

fn entries(question: &Question, by: &str, said: &[(usize, &str)]) -> Vec<Entry> {
    let choices: Vec<Choice> = said
        .iter()
        .map(|(n, word)| {
            let then = match *word {
                "reject" => Transition::Decline {
                    message: Some(format!("no {n}")),
                },
                word => Transition::Answer {
                    value: askbridge_core::Answer::Text(word.into()),
                },
            };
            Choice { action: *n, then }
        })
        .collect();
    question.entries_of(
        &choices,
        &Decider::Actor(Actor::new(by, "test")),
        Millis::now(),
    )
}

async fn decide(
    f: &Fixture,
    q: &Question,
    by: &str,
    said: &[(usize, &str)],
    due: Millis,
) -> (DecideOutcome, Question) {
    let entries = entries(q, by, said);
    let mut model = f.store.get(&q.id).await.unwrap().unwrap();
    let expected = batch::apply_decisions(&mut model, &entries);
    let (outcome, decided) = f.store.decide(q, &entries, due).await.unwrap().unwrap();
    assert_eq!(outcome, expected, "the store agrees with core on {said:?}");
    if outcome.is_recorded() {
        assert_eq!(decided.actions, model.actions, "as core records them");
    }
    (outcome, decided)
}

async fn the_first_decision_per_action_wins_and_the_last_makes_it_due(f: Fixture) {
    let q = three();
    f.store.insert(&q).await.unwrap();
    let due = Millis::now().after(Duration::from_secs(10));
    let (outcome, _) = decide(&f, &q, "chat:1", &[(2, "reject")], due).await;
    assert_eq!(outcome, DecideOutcome::Recorded);
    // A stale snapshot (the question as asked) still meets the stored decisions.
    let (outcome, same) = decide(&f, &q, "chat:2", &[(3, "once"), (2, "once")], due).await;
    assert_eq!(outcome, DecideOutcome::Decided(2), "all or none");
    assert!(
        same.actions[2].decision.is_none(),
        "action 3 stays undecided"
    );
    let stored = f.store.get(&q.id).await.unwrap().unwrap();
    assert!(stored.is_pending());
    assert_eq!(
        stored.actions[1]
            .decision
            .as_ref()
            .unwrap()
            .message
            .as_deref(),
        Some("no 2")
    );
    assert!(batch::completing_claim(&stored).is_none());
    let (outcome, complete) = decide(&f, &q, "chat:2", &[(1, "always"), (3, "once")], due).await;
    assert_eq!(outcome, DecideOutcome::Complete);
    assert_eq!(
        f.store.next_due().await.unwrap(),
        Some(due),
        "due for the completing claim"
    );
    let claim = batch::completing_claim(&complete).unwrap();
    let claimed = f
        .store
        .claim(&complete, &claim, ClaimOptions::new(SETTLE))
        .await
        .unwrap()
        .unwrap();
    let resolution = claimed.question.resolution.clone().unwrap();
    let words: Vec<&str> = resolution
        .decisions
        .iter()
        .map(|e| e.decision.as_str())
        .collect();
    assert_eq!(words, ["always", "reject", "once"]);
    assert!(resolution.creates_rules());
    let read = f.store.get(&q.id).await.unwrap().unwrap();
    assert_eq!(
        read.resolution.unwrap().decisions.len(),
        3,
        "read back resolved"
    );
    let (outcome, _) = decide(&f, &q, "chat:1", &[(1, "once")], due).await;
    assert_eq!(outcome, DecideOutcome::AlreadyResolved);
}

async fn decisions_race_and_each_action_is_decided_once(f: Fixture) {
    let q = three();
    f.store.insert(&q).await.unwrap();
    let due = Millis::now();
    // Twelve attempts at once, four per action, from the question as asked.
    let attempts = (0..12).map(|i| {
        let (store, q) = (f.store.clone(), q.clone());
        let n = 1 + i % 3;
        let by = format!("chat:{i}");
        async move {
            let entries = entries(&q, &by, &[(n, "once")]);
            store.decide(&q, &entries, due).await.unwrap().unwrap().0
        }
    });
    let outcomes = futures_util::future::join_all(attempts).await;
    let count = |o: fn(&DecideOutcome) -> bool| outcomes.iter().filter(|x| o(x)).count();
    assert_eq!(count(|o| o.is_recorded()), 3, "{outcomes:?}");
    assert_eq!(count(|o| *o == DecideOutcome::Complete), 1, "{outcomes:?}");
    assert_eq!(
        count(|o| matches!(o, DecideOutcome::Decided(_))),
        9,
        "{outcomes:?}"
    );
    let stored = f.store.get(&q.id).await.unwrap().unwrap();
    assert!(batch::is_complete(&stored));
    let expire = super::claim(Transition::Expire, "askbridge");
    f.store
        .claim(&stored, &expire, ClaimOptions::new(SETTLE))
        .await
        .unwrap();
}

conformance!(
    the_first_decision_per_action_wins_and_the_last_makes_it_due,
    decisions_race_and_each_action_is_decided_once,
);
