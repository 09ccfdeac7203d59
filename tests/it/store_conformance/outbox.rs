//! The outbox, deliveries and dedupe roles: due entries leased, rescheduled and settled; where
//! questions were shown and which effects are done; duplicate deliveries.

use super::{Fixture, SETTLE, answer, claim, question};
use askbridge::store::ClaimOptions;
use askbridge::store::{ListFilter, Shown, Sighting};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::{Millis, NewQuestion, QuestionId, Transition};
use std::time::Duration;

async fn due_entries_are_leased_rescheduled_and_settled(f: Fixture) {
    let soon = question("s1", &["chat:1"], Duration::from_millis(1));
    let later = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    f.store.insert(&soon).await.unwrap();
    f.store.insert(&later).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let now = Millis::now();
    let lease = Duration::from_secs(30);
    assert_eq!(
        f.store.lease_due(now, lease, 10).await.unwrap(),
        vec![soon.id.clone()]
    );
    assert!(
        f.store.lease_due(now, lease, 10).await.unwrap().is_empty(),
        "a leased entry is hidden"
    );
    assert_eq!(
        f.store
            .lease_due(now.after(lease), lease, 10)
            .await
            .unwrap(),
        vec![soon.id.clone()],
        "until the lease ends"
    );
    let mut open = f.store.open_ids().await.unwrap();
    open.sort();
    let mut expected = vec![soon.id.clone(), later.id.clone()];
    expected.sort();
    assert_eq!(open, expected);
    f.store.reschedule(&later.id, now).await.unwrap();
    assert_eq!(
        f.store.lease_due(now, lease, 10).await.unwrap(),
        vec![later.id.clone()]
    );
    f.store
        .claim(
            &soon,
            &claim(Transition::Expire, "askbridge"),
            ClaimOptions::new(SETTLE),
        )
        .await
        .unwrap();
    f.store
        .finish(&soon.id, Some(&soon), &[], None, None)
        .await
        .unwrap();
    assert_eq!(f.store.open_ids().await.unwrap(), vec![later.id.clone()]);
    let in_chat = ListFilter {
        target: Some("chat:1".into()),
        ..ListFilter::pending()
    };
    assert_eq!(f.store.list(&in_chat).await.unwrap().len(), 1);
    // Rescheduling enters an entry again (a settle that must retry after another removed it).
    f.store.reschedule(&soon.id, now).await.unwrap();
    assert_eq!(f.store.open_ids().await.unwrap().len(), 2);
}

async fn deliveries_and_effects_are_recorded(f: Fixture) {
    let q = question("s1", &["chat:1", "chat:2"], DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    for (target, reference) in [("chat:1", "m1"), ("chat:2", "m2"), ("chat:1", "m3")] {
        f.store
            .record_shown(
                &q.id,
                &Shown {
                    target: target.into(),
                    reference: reference.into(),
                },
                Millis::now(),
            )
            .await
            .unwrap();
    }
    let mut shown = f.store.shown(&q.id).await.unwrap();
    shown.sort_by(|a, b| a.target.cmp(&b.target));
    assert_eq!(
        shown,
        vec![
            Shown {
                target: "chat:1".into(),
                reference: "m3".into()
            },
            Shown {
                target: "chat:2".into(),
                reference: "m2".into()
            },
        ]
    );
    assert!(f.store.mark_effect(&q.id, "resume").await.unwrap());
    assert!(
        !f.store.mark_effect(&q.id, "resume").await.unwrap(),
        "an effect is marked once"
    );
    assert!(f.store.mark_effect(&q.id, "withdraw:chat:1").await.unwrap());
    let mut done = f.store.work(&q.id).await.unwrap().done;
    done.sort();
    assert_eq!(
        done,
        vec!["resume".to_owned(), "withdraw:chat:1".to_owned()]
    );
}

async fn duplicate_deliveries_are_recognised(f: Fixture) {
    assert!(
        f.store
            .first_sighting("telegram:update:1", Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(
        !f.store
            .first_sighting("telegram:update:1", Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(
        f.store
            .first_sighting("telegram:update:2", Duration::from_secs(60))
            .await
            .unwrap()
    );
    f.store.forget("telegram:update:2").await.unwrap();
    assert!(
        f.store
            .first_sighting("telegram:update:2", Duration::from_secs(60))
            .await
            .unwrap(),
        "seen again after it was forgotten"
    );
    f.store.forget("never-seen").await.unwrap();
    assert!(
        f.store
            .first_sighting("short", Duration::from_millis(30))
            .await
            .unwrap()
    );
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert!(
        f.store
            .first_sighting("short", Duration::from_millis(30))
            .await
            .unwrap(),
        "forgotten after the window"
    );
}

/// A delivery taken in hand is in hand for others until its holder settles it (then it is
/// handled) or its lease lapses (then the next to come takes it); a forgotten one is new again,
/// and a key marked by `first_sighting` counts as handled.
async fn a_delivery_in_hand_is_settled_or_its_lease_lapses(f: Fixture) {
    let lease = Duration::from_secs(60);
    let window = Duration::from_secs(600);
    let take = |key: &'static str, lease: Duration| {
        let store = f.store.clone();
        async move { store.take_in_hand(key, lease).await.unwrap() }
    };
    assert_eq!(take("telegram:7", lease).await, Sighting::First);
    assert_eq!(take("telegram:7", lease).await, Sighting::InHand);
    f.store.settle("telegram:7", window).await.unwrap();
    assert_eq!(take("telegram:7", lease).await, Sighting::Handled);

    let short = Duration::from_millis(40);
    assert_eq!(take("telegram:8", short).await, Sighting::First);
    assert_eq!(take("telegram:8", lease).await, Sighting::InHand);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        take("telegram:8", lease).await,
        Sighting::First,
        "the dead holder's lease lapsed"
    );
    f.store.forget("telegram:8").await.unwrap();
    assert_eq!(
        take("telegram:8", lease).await,
        Sighting::First,
        "forgotten"
    );

    assert!(f.store.first_sighting("telegram:9", window).await.unwrap());
    assert_eq!(take("telegram:9", lease).await, Sighting::Handled);
    f.store.settle("telegram:10", short).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        take("telegram:10", lease).await,
        Sighting::First,
        "forgotten after the window"
    );
}

/// A question with a reminder and an escalation step: due at its first nudge, not its deadline;
/// listed under the step's target too (a plain reply there finds it); a nudge's mark is new once;
/// and the step's target leaves the index with the question.
async fn a_nudged_question_is_due_at_its_first_nudge_and_indexed_under_its_steps(f: Fixture) {
    let asked = Millis::now();
    let q = NewQuestion::ask("Which library?")
        .session("s1")
        .options(["dayjs", "luxon"])
        .targets(["chat:1"])
        .timeout(DEFAULT_TIMEOUT)
        .remind(Duration::from_secs(120), 2)
        .escalate(Duration::from_secs(60), ["chat:9"], ["chat:7"])
        .into_question(QuestionId::random(), asked, DEFAULT_TIMEOUT)
        .unwrap();
    f.store.insert(&q).await.unwrap();
    let step = asked.after(Duration::from_secs(60));
    assert_eq!(f.store.next_due().await.unwrap(), Some(step));
    let lease = Duration::from_secs(30);
    let before = Millis(step.0 - 1);
    assert!(
        f.store
            .lease_due(before, lease, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.store.lease_due(step, lease, 10).await.unwrap(),
        vec![q.id.clone()]
    );
    assert!(f.store.mark_effect(&q.id, "escalate:0").await.unwrap());
    assert!(
        !f.store.mark_effect(&q.id, "escalate:0").await.unwrap(),
        "marked once"
    );
    let done = f.store.work(&q.id).await.unwrap().done;
    let next = q.next_due(&done);
    assert_eq!(next, asked.after(Duration::from_secs(120)));
    f.store.reschedule(&q.id, next).await.unwrap();
    assert_eq!(f.store.next_due().await.unwrap(), Some(next));
    let in_step_chat = ListFilter {
        target: Some("chat:9".into()),
        ..ListFilter::pending()
    };
    assert_eq!(f.store.list(&in_step_chat).await.unwrap().len(), 1);
    let expire = claim(Transition::Expire, "askbridge");
    f.store
        .claim(&q, &expire, ClaimOptions::new(SETTLE))
        .await
        .unwrap();
    f.store
        .finish(&q.id, Some(&q), &[], None, None)
        .await
        .unwrap();
    let in_step_chat = ListFilter {
        target: Some("chat:9".into()),
        ..ListFilter::default()
    };
    assert!(
        f.store
            .list(&in_step_chat)
            .await
            .unwrap()
            .iter()
            .all(|l| l.id != q.id || !l.is_pending())
    );
    assert!(f.store.open_ids().await.unwrap().is_empty());
}

fn shown_in(target: &str, reference: &str) -> Shown {
    Shown {
        target: target.into(),
        reference: reference.into(),
    }
}

/// Whether `id` is due at `at` (leased for a moment, so that the next look sees it again).
async fn due_at(f: &Fixture, id: &QuestionId, at: Millis) -> bool {
    let due = f.store.lease_due(at, Duration::from_millis(1), 100).await;
    due.unwrap().contains(id)
}

async fn answered(f: &Fixture, targets: &[&str]) -> askbridge_core::Question {
    let q = question("s1", targets, DEFAULT_TIMEOUT);
    f.store.insert(&q).await.unwrap();
    let by_alice = claim(answer("yes"), "alice");
    let options = ClaimOptions::new(SETTLE);
    f.store.claim(&q, &by_alice, options).await.unwrap();
    q
}

// A message shown after the question's settle ended: the record makes the question due again,
// so that a sweeper withdraws it even if the process that showed it cannot. A pending question's
// due time is its own (a deadline, a nudge) and stays so.
async fn a_delivery_after_the_resolution_makes_the_question_due(f: Fixture) {
    let q = answered(&f, &["chat:1"]).await;
    f.store
        .finish(&q.id, Some(&q), &[], None, Some(0))
        .await
        .unwrap();
    assert!(
        !f.store.open_ids().await.unwrap().contains(&q.id),
        "settled"
    );
    let settle_at = Millis::now().after(SETTLE);
    let late = shown_in("chat:1", "m1");
    let resolved = f.store.record_shown(&q.id, &late, settle_at).await.unwrap();
    assert!(
        resolved,
        "the record tells a late delivery that the question is resolved"
    );
    assert!(
        !due_at(&f, &q.id, Millis::now()).await,
        "not before the grace"
    );
    assert!(due_at(&f, &q.id, settle_at).await, "due after it");
    // Due sooner already (a retry scheduled): a second late message does not postpone it.
    let sooner = Millis::now().after(Duration::from_secs(1));
    f.store.reschedule(&q.id, sooner).await.unwrap();
    let later = settle_at.after(SETTLE);
    f.store
        .record_shown(&q.id, &shown_in("chat:2", "m2"), later)
        .await
        .unwrap();
    assert!(
        due_at(&f, &q.id, sooner).await,
        "kept due at the sooner time"
    );

    let pending = question("s1", &["chat:1"], DEFAULT_TIMEOUT);
    f.store.insert(&pending).await.unwrap();
    let shown = shown_in("chat:1", "m3");
    let resolved = f.store.record_shown(&pending.id, &shown, Millis::now());
    assert!(
        !resolved.await.unwrap(),
        "a pending question is not resolved"
    );
    assert!(
        !due_at(&f, &pending.id, Millis::now().after(SETTLE)).await,
        "due at its deadline"
    );
}

// A settle that read its work before a message was recorded finishes without removing the
// question from the open index; one that saw every message removes it.
async fn a_settle_that_missed_a_delivery_leaves_the_question_due(f: Fixture) {
    let q = answered(&f, &["chat:1"]).await;
    let seen = f.store.work(&q.id).await.unwrap().shown.len();
    let settle_at = Millis::now().after(SETTLE);
    let late = shown_in("chat:1", "m1");
    f.store.record_shown(&q.id, &late, settle_at).await.unwrap();
    f.store
        .finish(&q.id, Some(&q), &[], None, Some(seen))
        .await
        .unwrap();
    assert!(
        due_at(&f, &q.id, settle_at).await,
        "still due: chat:1 is not withdrawn"
    );
    let withdrawn = ["withdraw:chat:1".to_owned()];
    f.store
        .finish(&q.id, Some(&q), &withdrawn, None, Some(1))
        .await
        .unwrap();
    assert!(
        !f.store.open_ids().await.unwrap().contains(&q.id),
        "settled"
    );
}

conformance!(
    a_delivery_after_the_resolution_makes_the_question_due,
    a_settle_that_missed_a_delivery_leaves_the_question_due,
    a_nudged_question_is_due_at_its_first_nudge_and_indexed_under_its_steps,
    due_entries_are_leased_rescheduled_and_settled,
    deliveries_and_effects_are_recorded,
    duplicate_deliveries_are_recognised,
    a_delivery_in_hand_is_settled_or_its_lease_lapses,
);
