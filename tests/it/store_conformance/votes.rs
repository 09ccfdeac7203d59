//! The votes role: one vote per person on a pending question with a quorum, store-side; the
//! quorum met makes the question due; votes read back with the question; a resolved question
//! takes none.

use super::{Fixture, SETTLE, claim};
use askbridge::store::ClaimOptions;
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::quorum::Vote;
use askbridge_core::tally::{self, VoteOutcome};
use askbridge_core::{Answer, Millis, NewQuestion, Question, QuestionId, Transition};
use std::time::Duration;

fn two_of_three() -> Question {
    NewQuestion::confirm("Deploy?")
        .session("s1")
        .quorum(2, ["chat:1", "chat:2", "api"])
        .into_question(QuestionId::random(), Millis::now(), DEFAULT_TIMEOUT)
        .unwrap()
}

fn yes(question: &Question, by: &str) -> Vote {
    let claim = askbridge_core::Claim::new(
        Transition::Answer {
            value: Answer::Bool(true),
        },
        askbridge_core::Actor::new(by, "test"),
        Millis::now(),
    );
    tally::vote_of(question, &claim).expect("a yes is a vote")
}

async fn one_vote_per_person_and_the_quorum_makes_it_due(f: Fixture) {
    let q = two_of_three();
    f.store.insert(&q).await.unwrap();
    let due = Millis::now().after(Duration::from_secs(10));
    let (outcome, voted) = f
        .store
        .vote(&q, &yes(&q, "chat:1"), due)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, VoteOutcome::Counted);
    assert_eq!(voted.votes.len(), 1);
    let (outcome, again) = f
        .store
        .vote(&q, &yes(&q, "chat:1"), due)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome,
        VoteOutcome::Duplicate,
        "a second vote by one person"
    );
    assert_eq!(again.votes.len(), 1, "changes nothing");
    let stored = f.store.get(&q.id).await.unwrap().unwrap();
    assert_eq!(
        stored.votes, voted.votes,
        "votes read back with the question"
    );
    assert!(stored.is_pending());
    let (outcome, met) = f
        .store
        .vote(&q, &yes(&q, "api"), due)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, VoteOutcome::Met);
    assert_eq!(met.votes.len(), 2);
    assert_eq!(
        f.store.next_due().await.unwrap(),
        Some(due),
        "due for the completing claim"
    );
    let completing = tally::completing_claim(&met).unwrap();
    let claimed = f
        .store
        .claim(&met, &completing, ClaimOptions::new(SETTLE))
        .await
        .unwrap()
        .unwrap();
    let resolution = claimed.question.resolution.clone().unwrap();
    assert_eq!(resolution.votes.len(), 2, "the resolution lists every vote");
    let (outcome, _) = f
        .store
        .vote(&q, &yes(&q, "chat:2"), due)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, VoteOutcome::AlreadyResolved);
    let read = f.store.get(&q.id).await.unwrap().unwrap();
    assert_eq!(read.resolution.unwrap().votes.len(), 2);
}

async fn votes_race_and_each_person_counts_once(f: Fixture) {
    let q = two_of_three();
    f.store.insert(&q).await.unwrap();
    let due = Millis::now();
    let store = f.store.clone();
    // Ten attempts by the same two people at once: two votes are counted, one of them meets it.
    let attempts = (0..10).map(|n| {
        let (store, q) = (store.clone(), q.clone());
        let by = if n % 2 == 0 { "chat:1" } else { "chat:2" };
        async move { store.vote(&q, &yes(&q, by), due).await.unwrap().unwrap().0 }
    });
    let outcomes = futures_util::future::join_all(attempts).await;
    let counted = |o: VoteOutcome| outcomes.iter().filter(|x| **x == o).count();
    assert_eq!(counted(VoteOutcome::Counted), 1, "{outcomes:?}");
    assert_eq!(counted(VoteOutcome::Met), 1, "{outcomes:?}");
    assert_eq!(counted(VoteOutcome::Duplicate), 8, "{outcomes:?}");
    let expire = claim(Transition::Expire, "askbridge");
    let stored = f.store.get(&q.id).await.unwrap().unwrap();
    assert_eq!(stored.votes.len(), 2);
    f.store
        .claim(&stored, &expire, ClaimOptions::new(SETTLE))
        .await
        .unwrap();
}

/// Forms' drafts: one per person and form, read back as written, replaced by the next write.
async fn drafts_are_kept_per_person_and_form(f: Fixture) {
    use askbridge_core::form::Draft;
    let (q, other) = (two_of_three(), two_of_three());
    let (alice, bob) = (
        askbridge_core::Identity::new("chat:1"),
        askbridge_core::Identity::new("chat:2"),
    );
    assert_eq!(f.store.draft(&q.id, &alice).await.unwrap(), None);
    let mut draft = Draft {
        at: 1,
        ..Draft::default()
    };
    draft
        .values
        .insert("env".into(), serde_json::json!("staging"));
    let ttl = Duration::from_secs(60);
    f.store
        .save_draft(&q.id, &alice, &draft, ttl)
        .await
        .unwrap();
    assert_eq!(
        f.store.draft(&q.id, &alice).await.unwrap().as_ref(),
        Some(&draft)
    );
    assert_eq!(
        f.store.draft(&q.id, &bob).await.unwrap(),
        None,
        "each person has their own"
    );
    assert_eq!(
        f.store.draft(&other.id, &alice).await.unwrap(),
        None,
        "and each form"
    );
    draft.at = 2;
    f.store
        .save_draft(&q.id, &alice, &draft, ttl)
        .await
        .unwrap();
    assert_eq!(f.store.draft(&q.id, &alice).await.unwrap().unwrap().at, 2);
}

/// A draft does not outlive its question's record: once its time is up and the question,
/// resolved, is purged, the draft is gone too (Redis by its TTL, the others with the purge). A
/// pending form's draft stays.
async fn purge_takes_forms_drafts_with_their_question(f: Fixture) {
    use askbridge_core::form::Draft;
    let (q, pending) = (
        super::question("s1", &[], DEFAULT_TIMEOUT),
        super::question("s1", &[], DEFAULT_TIMEOUT),
    );
    let alice = askbridge_core::Identity::new("chat:1");
    let draft = Draft {
        at: 1,
        ..Draft::default()
    };
    for (question, ttl) in [(&q, 500), (&pending, 60_000)] {
        f.store.insert(question).await.unwrap();
        f.store
            .save_draft(&question.id, &alice, &draft, Duration::from_millis(ttl))
            .await
            .unwrap();
    }
    f.store
        .claim(
            &q,
            &claim(Transition::Cancel { reason: None }, "api"),
            ClaimOptions::new(SETTLE),
        )
        .await
        .unwrap();
    f.store
        .finish(&q.id, Some(&q), &[], None, None)
        .await
        .unwrap();
    // The fixture's retention is 1 s.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    f.store.purge(Millis::now()).await.unwrap();
    assert_eq!(f.store.get(&q.id).await.unwrap(), None);
    assert_eq!(f.store.draft(&q.id, &alice).await.unwrap(), None);
    assert_eq!(
        f.store.draft(&pending.id, &alice).await.unwrap(),
        Some(draft),
        "a pending form's draft is kept"
    );
}

conformance!(
    drafts_are_kept_per_person_and_form,
    purge_takes_forms_drafts_with_their_question,
    one_vote_per_person_and_the_quorum_makes_it_due,
    votes_race_and_each_person_counts_once,
);
