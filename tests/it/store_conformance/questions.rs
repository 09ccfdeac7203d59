//! The questions role: insert, get, claim (claim-once, with its event and audit record), list,
//! count, purge.

use super::{Fixture, Pair, SETTLE, answer, claim, question};
use askbridge::store::ClaimOptions;
use askbridge::store::{EventKind, Inserted, ListFilter};
use askbridge_core::audit::{AuditEvent, AuditFilter};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::{Answer, ClaimOutcome, Millis, Question, QuestionId, Status, Transition};
use std::time::Duration;

async fn insert_then_get_round_trips(f: Fixture) {
    let q = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    assert_eq!(f.store.get(&q.id).await.unwrap(), Some(q.clone()));
    assert_eq!(f.store.get(&QuestionId::random()).await.unwrap(), None);
}

async fn insert_never_overwrites(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    let mut other = question("s2", &[], DEFAULT_TIMEOUT);
    other.id = q.id.clone();
    assert_eq!(f.store.insert(&other).await.unwrap(), Inserted::Taken);
    assert_eq!(f.store.get(&q.id).await.unwrap().unwrap().session_id, "s1");
}

async fn first_claim_wins_and_later_claims_change_nothing(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    let (outcome, won) = f
        .store
        .claim(
            &q,
            &claim(answer("dayjs"), "telegram:1"),
            ClaimOptions::new(SETTLE),
        )
        .await
        .unwrap()
        .unwrap()
        .pair();
    assert_eq!(outcome, ClaimOutcome::Won);
    assert_eq!(won.status, Status::Answered);
    for late in [
        answer("luxon"),
        Transition::Decline { message: None },
        Transition::Expire,
        Transition::Cancel { reason: None },
    ] {
        let (outcome, seen) = f
            .store
            .claim(&q, &claim(late, "discord:2"), ClaimOptions::new(SETTLE))
            .await
            .unwrap()
            .unwrap()
            .pair();
        assert_eq!(outcome, ClaimOutcome::AlreadyResolved);
        assert_eq!(seen, won, "a later claim reports the winner");
    }
    let stored = f.store.get(&q.id).await.unwrap().unwrap();
    assert_eq!(stored, won);
    let resolution = stored.resolution.unwrap();
    assert_eq!(resolution.by(), "telegram:1");
    assert_eq!(resolution.value, Some(Answer::Text("dayjs".into())));
}

async fn a_late_claim_expires_the_question_with_its_default(f: Fixture) {
    let mut q = question("s1", &[], Duration::from_millis(1));
    q.default = Some(Answer::Text("luxon".into()));
    f.store.insert(&q).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let (outcome, seen) = f
        .store
        .claim(
            &q,
            &claim(answer("dayjs"), "telegram:1"),
            ClaimOptions::new(SETTLE),
        )
        .await
        .unwrap()
        .unwrap()
        .pair();
    assert_eq!(outcome, ClaimOutcome::Expired);
    assert_eq!(seen.status, Status::Expired);
    assert_eq!(
        seen.resolution.unwrap().value,
        Some(Answer::Text("luxon".into()))
    );
}

async fn claiming_a_missing_question_says_so(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    assert!(
        f.store
            .claim(
                &q,
                &claim(answer("dayjs"), "x:1"),
                ClaimOptions::new(SETTLE)
            )
            .await
            .unwrap()
            .is_none()
    );
}

async fn concurrent_claims_have_exactly_one_winner(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    let mut tasks = Vec::new();
    for n in 0..50 {
        let (store, q) = (f.store.clone(), q.clone());
        tasks.push(tokio::spawn(async move {
            let label = if n % 2 == 0 { "dayjs" } else { "luxon" };
            store
                .claim(
                    &q,
                    &claim(answer(label), &format!("telegram:{n}")),
                    ClaimOptions::new(SETTLE),
                )
                .await
                .unwrap()
                .unwrap()
                .pair()
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (outcome, seen) = task.await.unwrap();
        if outcome == ClaimOutcome::Won {
            winners.push(seen);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one of 50 concurrent claims wins");
    assert_eq!(f.store.get(&q.id).await.unwrap().unwrap(), winners[0]);
}

async fn lists_filter_by_status_session_and_target(f: Fixture) {
    let a = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    let b = question("s1", &["chat:2"], DEFAULT_TIMEOUT);
    let c = question("s2", &["chat:1"], DEFAULT_TIMEOUT);
    for q in [&a, &b, &c] {
        f.store.insert(q).await.unwrap();
    }
    f.store
        .claim(
            &b,
            &claim(answer("dayjs"), "x:1"),
            ClaimOptions::new(SETTLE),
        )
        .await
        .unwrap();
    // As the bridge does once a resolution's effects are done.
    f.store
        .finish(&b.id, Some(&b), &[], None, None)
        .await
        .unwrap();
    let ids = |questions: Vec<Question>| {
        let mut ids: Vec<String> = questions.into_iter().map(|q| q.id.to_string()).collect();
        ids.sort();
        ids
    };
    let sorted = |list: &[&Question]| {
        let mut ids: Vec<String> = list.iter().map(|q| q.id.to_string()).collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(f.store.list(&ListFilter::pending()).await.unwrap()),
        sorted(&[&a, &c])
    );
    let by_session = ListFilter {
        session_id: Some("s1".into()),
        ..ListFilter::pending()
    };
    assert_eq!(ids(f.store.list(&by_session).await.unwrap()), sorted(&[&a]));
    let answered = ListFilter {
        status: Some(Status::Answered),
        ..ListFilter::default()
    };
    assert_eq!(ids(f.store.list(&answered).await.unwrap()), sorted(&[&b]));
    let answered_s1 = ListFilter {
        session_id: Some("s1".into()),
        ..answered.clone()
    };
    assert_eq!(
        ids(f.store.list(&answered_s1).await.unwrap()),
        sorted(&[&b])
    );
    let in_chat_1 = ListFilter {
        target: Some("chat:1".into()),
        ..ListFilter::pending()
    };
    assert_eq!(
        ids(f.store.list(&in_chat_1).await.unwrap()),
        sorted(&[&a, &c])
    );
    assert_eq!(f.store.counts(Millis::now()).await.unwrap().pending, 2);
    let newest_first = f.store.list(&ListFilter::pending()).await.unwrap();
    assert!(newest_first[0].created_at >= newest_first[1].created_at);
}

async fn purge_forgets_old_resolved_questions_only(f: Fixture) {
    let old = question("s1", &[], DEFAULT_TIMEOUT);
    let pending = question("s1", &[], DEFAULT_TIMEOUT);
    f.store.insert(&old).await.unwrap();
    f.store.insert(&pending).await.unwrap();
    f.store
        .claim(
            &old,
            &claim(answer("dayjs"), "x:1"),
            ClaimOptions::new(SETTLE),
        )
        .await
        .unwrap();
    f.store
        .finish(&old.id, Some(&old), &[], None, None)
        .await
        .unwrap();
    // The fixture's retention is 1 s.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    f.store.purge(Millis::now()).await.unwrap();
    assert_eq!(
        f.store.get(&old.id).await.unwrap(),
        None,
        "resolved and older than the retention"
    );
    assert!(
        f.store.get(&pending.id).await.unwrap().is_some(),
        "pending questions are never purged"
    );
    let answered = ListFilter {
        status: Some(Status::Answered),
        ..ListFilter::default()
    };
    assert!(f.store.list(&answered).await.unwrap().is_empty());
}

async fn an_insert_and_a_resolution_announce_themselves_with_their_records(f: Fixture) {
    let mut events = f.store.subscribe();
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    assert_eq!(f.store.insert(&q).await.unwrap(), Inserted::Created);
    let asked = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (asked.kind(), asked.question()),
        (EventKind::Asked, Some(&q))
    );
    let before = Millis::now();
    let won = f
        .store
        .claim(
            &q,
            &claim(answer("dayjs"), "telegram:1"),
            ClaimOptions::new(SETTLE),
        )
        .await
        .unwrap()
        .unwrap()
        .question;
    let replied = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (replied.kind(), replied.question()),
        (EventKind::Replied, Some(&won))
    );
    let trail = f.store.audit(&AuditFilter::default()).await.unwrap();
    assert_eq!(trail.len(), 1, "one record, written with the claim");
    assert_eq!(trail[0].event, AuditEvent::Resolved);
    assert_eq!(trail[0].question_id.as_deref(), Some(q.id.as_str()));
    // The resolution's outbox entry is due after SETTLE, not at the deadline.
    let lease = Duration::from_secs(30);
    assert!(
        f.store
            .lease_due(before, lease, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let due = f
        .store
        .lease_due(Millis::now().after(SETTLE), lease, 10)
        .await
        .unwrap();
    assert_eq!(due, vec![q.id.clone()]);
    // A claim that loses announces nothing and records nothing.
    f.store
        .claim(
            &q,
            &claim(answer("luxon"), "telegram:2"),
            ClaimOptions::new(SETTLE),
        )
        .await
        .unwrap();
    assert_eq!(
        f.store.audit(&AuditFilter::default()).await.unwrap().len(),
        1
    );
    assert!(events.try_recv().is_err());
}

async fn an_idle_resolution_is_finished_by_its_claim(f: Fixture) {
    let shown = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    let quiet = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    for q in [&shown, &quiet] {
        f.store.insert(q).await.unwrap();
    }
    f.store
        .record_shown(
            &shown.id,
            &askbridge::store::Shown {
                target: "chat:1".into(),
                reference: "m1".into(),
            },
            Millis::now(),
        )
        .await
        .unwrap();
    let options = ClaimOptions {
        finish_when_idle: true,
        ..ClaimOptions::new(SETTLE)
    };
    let quiet_claim = f
        .store
        .claim(&quiet, &claim(answer("dayjs"), "x:1"), options)
        .await
        .unwrap()
        .unwrap();
    assert!(quiet_claim.finished, "shown nowhere: nothing left to do");
    let shown_claim = f
        .store
        .claim(&shown, &claim(answer("dayjs"), "x:1"), options)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !shown_claim.finished,
        "a message to withdraw is left to the settle"
    );
    assert_eq!(shown_claim.work.shown.len(), 1);
    assert_eq!(f.store.open_ids().await.unwrap(), vec![shown.id.clone()]);
    let in_chat = ListFilter {
        target: Some("chat:1".into()),
        ..ListFilter::pending()
    };
    assert!(f.store.list(&in_chat).await.unwrap().is_empty());
}

conformance!(
    an_idle_resolution_is_finished_by_its_claim,
    insert_then_get_round_trips,
    insert_never_overwrites,
    first_claim_wins_and_later_claims_change_nothing,
    a_late_claim_expires_the_question_with_its_default,
    claiming_a_missing_question_says_so,
    concurrent_claims_have_exactly_one_winner,
    lists_filter_by_status_session_and_target,
    purge_forgets_old_resolved_questions_only,
    an_insert_and_a_resolution_announce_themselves_with_their_records,
);
