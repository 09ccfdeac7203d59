//! The runs role: runs stored without overwriting, taken once, recovered after their lease,
//! written only by their holder.

use super::Fixture;
use askbridge::store::{AheadRun, ClaimOptions, TakeRun};
use askbridge::store::{Inserted, ListFilter, Parked, Saved};
use askbridge_core::run::{Acquire, JournalEntry, Origin, Run, RunState};
use askbridge_core::{Millis, RunId};

fn run() -> Run {
    let origin = Origin {
        chat: Some("chat:1".into()),
        user: "chat:7".into(),
        user_name: None,
    };
    Run::new(
        "deploy",
        "staging",
        origin,
        "p1",
        Millis(1_000),
        Millis(31_000),
    )
}

async fn runs_are_stored_without_overwriting(f: Fixture) {
    let r = run();
    f.store.insert_run(&r).await.unwrap();
    assert_eq!(f.store.get_run(&r.id).await.unwrap(), Some(r.clone()));
    assert!(f.store.get_run(&RunId::random()).await.unwrap().is_none());
    let mut other = run();
    other.id = r.id.clone();
    other.flow = "other".into();
    assert_eq!(f.store.insert_run(&other).await.unwrap(), Inserted::Taken);
}

async fn a_run_is_taken_for_its_answer_once(f: Fixture) {
    let mut r = run();
    let question = r.question_id(0);
    f.store.insert_run(&r).await.unwrap();
    r.state = RunState::Waiting;
    r.waiting_on = Some(question.clone());
    r.owner = None;
    r.lease_until = None;
    assert_eq!(f.store.save_run(&r, "p1").await.unwrap(), Saved::Written);
    assert!(
        f.store
            .expired_runs(Millis(u64::MAX / 2), 10)
            .await
            .unwrap()
            .is_empty(),
        "waiting runs need no executor"
    );
    let mut tasks = Vec::new();
    for n in 0..20 {
        let (store, id, question) = (f.store.clone(), r.id.clone(), question.clone());
        tasks.push(tokio::spawn(async move {
            store
                .acquire_run(
                    &id,
                    Acquire::Answer(&question),
                    &format!("p{n}"),
                    Millis(2_000),
                    Millis(32_000),
                )
                .await
                .unwrap()
        }));
    }
    let mut taken = Vec::new();
    for task in tasks {
        taken.extend(task.await.unwrap());
    }
    assert_eq!(taken.len(), 1, "one of 20 processes takes the run");
    assert_eq!(taken[0].state, RunState::Running);
    assert_eq!(
        f.store.get_run(&r.id).await.unwrap().unwrap().owner,
        taken[0].owner
    );
    let other = r.question_id(1);
    assert!(
        f.store
            .acquire_run(
                &r.id,
                Acquire::Answer(&other),
                "p9",
                Millis(2_000),
                Millis(3_000)
            )
            .await
            .unwrap()
            .is_none()
    );
}

async fn runs_are_recovered_only_after_their_lease(f: Fixture) {
    let r = run();
    f.store.insert_run(&r).await.unwrap();
    assert!(
        f.store
            .expired_runs(Millis(30_000), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        f.store
            .acquire_run(
                &r.id,
                Acquire::Recovery,
                "p2",
                Millis(30_000),
                Millis(60_000)
            )
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        f.store.expired_runs(Millis(31_000), 10).await.unwrap(),
        vec![r.id.clone()]
    );
    let taken = f
        .store
        .acquire_run(
            &r.id,
            Acquire::Recovery,
            "p2",
            Millis(31_000),
            Millis(61_000),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (taken.owner.as_deref(), taken.lease_until),
        (Some("p2"), Some(Millis(61_000)))
    );
    assert!(
        f.store
            .expired_runs(Millis(40_000), 10)
            .await
            .unwrap()
            .is_empty(),
        "the new lease counts"
    );
}

async fn saving_a_run_is_fenced_by_its_owner(f: Fixture) {
    let mut r = run();
    f.store.insert_run(&r).await.unwrap();
    r.journal.push(JournalEntry::Step {
        name: "s".into(),
        value: serde_json::json!(1),
    });
    assert!(
        f.store.save_run(&r, "p2").await.unwrap() == Saved::Lost,
        "a process that does not hold it cannot write"
    );
    assert_eq!(f.store.save_run(&r, "p1").await.unwrap(), Saved::Written);
    assert_eq!(
        f.store.get_run(&r.id).await.unwrap().unwrap().journal.len(),
        1
    );
    r.state = RunState::Done;
    r.result = Some("ok".into());
    assert_eq!(f.store.save_run(&r, "p1").await.unwrap(), Saved::Written);
    assert_eq!(
        f.store
            .expired_runs(Millis(u64::MAX / 2), 10)
            .await
            .unwrap(),
        vec![r.id.clone()],
        "done but not reported"
    );
    r.reported = true;
    r.owner = None;
    assert_eq!(f.store.save_run(&r, "p1").await.unwrap(), Saved::Written);
    assert!(
        f.store
            .expired_runs(Millis(u64::MAX / 2), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.store.get_run(&r.id).await.unwrap().unwrap(), r);
}

async fn an_abandoned_run_leaves_recovery(f: Fixture) {
    let r = run();
    f.store.insert_run(&r).await.unwrap();
    assert_eq!(
        f.store.expired_runs(Millis(31_000), 10).await.unwrap(),
        vec![r.id.clone()]
    );
    f.store.abandon_run(&r.id, "does not read").await.unwrap();
    assert!(
        f.store
            .expired_runs(Millis(u64::MAX / 2), 10)
            .await
            .unwrap()
            .is_empty(),
        "recovery no longer retries it"
    );
}

conformance!(
    a_claim_saves_a_run_carried_ahead_with_its_next_question,
    runs_are_stored_without_overwriting,
    a_run_is_taken_for_its_answer_once,
    runs_are_recovered_only_after_their_lease,
    saving_a_run_is_fenced_by_its_owner,
    an_abandoned_run_leaves_recovery,
    a_parking_run_learns_its_question_was_answered_meanwhile,
    parking_stores_the_new_question_with_the_run,
    a_new_run_is_stored_parked_on_its_first_question_at_once,
);

/// `r` parked on `q` as of `at`.
fn parked_on(r: &Run, q: &askbridge_core::Question, at: Millis) -> Run {
    let mut parked = r.clone();
    parked.park_on(q.id.clone(), at);
    parked
}

/// Stores `started` parked on `question` at once (`insert_parked`), which must succeed: the
/// run as stored.
async fn insert_parked_on(f: &Fixture, started: &Run, question: &askbridge_core::Question) -> Run {
    let parked = parked_on(started, question, started.updated_at);
    assert_eq!(
        f.store
            .insert_parked(started, &parked, "p1", question)
            .await
            .unwrap(),
        Parked::Saved(Saved::Written)
    );
    parked
}

/// The question a run asks first.
fn first_question(r: &Run) -> askbridge_core::Question {
    askbridge_core::NewQuestion::ask("Go?")
        .session(r.session_id())
        .into_question(
            r.question_id(0),
            Millis::now(),
            askbridge_core::question::DEFAULT_TIMEOUT,
        )
        .unwrap()
}

async fn a_parking_run_learns_its_question_was_answered_meanwhile(f: Fixture) {
    let mut r = run();
    f.store.insert_run(&r).await.unwrap();
    let question = first_question(&r);
    f.store.insert(&question).await.unwrap();
    r.state = RunState::Waiting;
    r.waiting_on = Some(question.id.clone());
    assert_eq!(f.store.save_run(&r, "p1").await.unwrap(), Saved::Written);
    // Answered while the run (taken again) still executes towards it, then parked again.
    r.state = RunState::Running;
    assert_eq!(f.store.save_run(&r, "p1").await.unwrap(), Saved::Written);
    f.store
        .claim(
            &question,
            &super::claim(super::answer("yes"), "api"),
            ClaimOptions::new(super::SETTLE),
        )
        .await
        .unwrap();
    r.state = RunState::Waiting;
    assert_eq!(
        f.store.save_run(&r, "p1").await.unwrap(),
        Saved::WaitsOnResolved
    );
}

async fn parking_stores_the_new_question_with_the_run(f: Fixture) {
    let mut r = run();
    f.store.insert_run(&r).await.unwrap();
    let question = first_question(&r);
    r.state = RunState::Waiting;
    r.waiting_on = Some(question.id.clone());
    // A stranger to the run writes nothing: neither the run nor the question.
    assert_eq!(
        f.store.park_run(&r, "p2", &question).await.unwrap(),
        Parked::Saved(Saved::Lost)
    );
    assert!(f.store.get(&question.id).await.unwrap().is_none());
    assert_eq!(
        f.store.park_run(&r, "p1", &question).await.unwrap(),
        Parked::Saved(Saved::Written)
    );
    assert_eq!(
        f.store.get(&question.id).await.unwrap(),
        Some(question.clone())
    );
    assert_eq!(f.store.get_run(&r.id).await.unwrap(), Some(r.clone()));
    // It is in the indexes like any asked question.
    let listed = f
        .store
        .list(&ListFilter {
            session_id: Some(r.session_id()),
            ..ListFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    // Parking on an id that is taken writes nothing, not even the run.
    let mut again = r.clone();
    again.state = RunState::Running;
    assert_eq!(
        f.store.save_run(&again, "p1").await.unwrap(),
        Saved::Written
    );
    assert_eq!(
        f.store.park_run(&r, "p1", &question).await.unwrap(),
        Parked::QuestionTaken
    );
    assert_eq!(
        f.store.get_run(&r.id).await.unwrap().unwrap().state,
        RunState::Running
    );
}

/// A claim with the run carried ahead (`ClaimOptions::ahead`) stores the answer, the run parked
/// on its next question and that question in one step when the run is still stored as it was
/// carried; when it has changed since, the claim takes the run as usual and stores nothing of
/// what was carried.
async fn a_claim_saves_a_run_carried_ahead_with_its_next_question(f: Fixture) {
    assert!(f.store.claims_ahead(), "every store carries runs ahead");
    for changed in [false, true] {
        let started = run();
        let mut question = first_question(&started);
        question.run_id = Some(started.id.clone());
        let parked = insert_parked_on(&f, &started, &question).await;
        let mut next = askbridge_core::NewQuestion::ask("And then?")
            .session(started.session_id())
            .into_question(
                started.question_id(1),
                Millis::now(),
                askbridge_core::question::DEFAULT_TIMEOUT,
            )
            .unwrap();
        next.run_id = Some(started.id.clone());
        let carried = parked_on(&parked, &next, Millis(parked.updated_at.0 + 1));
        let was = if changed {
            Millis(parked.updated_at.0 - 1)
        } else {
            parked.updated_at
        };
        let claimed = f
            .store
            .claim(
                &question,
                &super::claim(super::answer("yes"), "api"),
                ClaimOptions {
                    take_run: Some(TakeRun {
                        owner: "p2",
                        lease_until: Millis(40_000),
                    }),
                    ahead: Some(AheadRun {
                        was,
                        run: &carried,
                        next: &next,
                    }),
                    ..ClaimOptions::new(super::SETTLE)
                },
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(claimed.outcome, askbridge_core::ClaimOutcome::Won);
        if changed {
            assert!(!claimed.ahead);
            let taken = claimed.run.expect("taken as usual instead");
            assert_eq!(
                (taken.state, taken.owner.as_deref()),
                (RunState::Running, Some("p2"))
            );
            assert_eq!(f.store.get(&next.id).await.unwrap(), None);
        } else {
            assert!(claimed.ahead && claimed.run.is_none());
            assert_eq!(f.store.get(&next.id).await.unwrap(), Some(next.clone()));
            assert_eq!(f.store.get_run(&carried.id).await.unwrap(), Some(carried));
        }
    }
}

async fn a_new_run_is_stored_parked_on_its_first_question_at_once(f: Fixture) {
    let started = run();
    let question = first_question(&started);
    let parked = insert_parked_on(&f, &started, &question).await;
    assert_eq!(
        f.store.get_run(&parked.id).await.unwrap(),
        Some(parked.clone())
    );
    assert_eq!(
        f.store.get(&question.id).await.unwrap(),
        Some(question.clone())
    );
    // Parked, not executing: nothing for recovery, and its question is answered like any.
    assert!(
        f.store
            .expired_runs(Millis(u64::MAX / 2), 10)
            .await
            .unwrap()
            .is_empty()
    );
    // A second run under the same id writes nothing, not even its question.
    let mut other = started.clone();
    other.flow = "other".into();
    let mut second = first_question(&other);
    second.id = other.question_id(1);
    assert_eq!(
        f.store
            .insert_parked(
                &other,
                &parked_on(&other, &second, other.updated_at),
                "p2",
                &second
            )
            .await
            .unwrap(),
        Parked::Saved(Saved::Lost)
    );
    assert!(f.store.get(&second.id).await.unwrap().is_none());
    assert_eq!(f.store.get_run(&parked.id).await.unwrap(), Some(parked));
    // A question id that is taken: the new run is stored as it started, and its executor checks
    // the stored question (as after a crash) before parking on it.
    let fresh = run();
    let mut taken = first_question(&fresh);
    taken.id = question.id.clone();
    assert_eq!(
        f.store
            .insert_parked(
                &fresh,
                &parked_on(&fresh, &taken, fresh.updated_at),
                "p1",
                &taken
            )
            .await
            .unwrap(),
        Parked::QuestionTaken
    );
    assert_eq!(f.store.get_run(&fresh.id).await.unwrap(), Some(fresh));
}
