//! The rules' index: an approval finds its rules by the action's digest and its session, on
//! every store, and an entry goes with its rule.

use super::Fixture;
use askbridge_core::{Action, Millis, QuestionId, Rule, RuleId, Scope};

/// A rule allowing `shell <command>` in `session` (everywhere for `None`), with an id like the
/// ones approvals make (so that Redis spreads them over its buckets).
fn rule(command: &str, session: Option<&str>) -> Rule {
    Rule {
        id: RuleId::for_question(&QuestionId::random()),
        action: action(command),
        scope: session.map_or(Scope::Everywhere, |s| Scope::Session {
            session_id: s.into(),
        }),
        created_by: "telegram:1".into(),
        created_at: Millis(5),
        question_id: None,
        quorum: 0,
    }
}

fn action(command: &str) -> Action {
    Action::new("shell", serde_json::json!({"command": command}))
}

/// The ids of the rules for `command` in `session`, sorted.
async fn found(f: &Fixture, command: &str, session: &str) -> Vec<RuleId> {
    let mut ids: Vec<RuleId> = f
        .store
        .rules_for(&action(command).digest(), session)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    ids.sort();
    ids
}

fn sorted(mut ids: Vec<RuleId>) -> Vec<RuleId> {
    ids.sort();
    ids
}

async fn rules_are_found_by_action_and_scope(f: Fixture) {
    let everywhere = rule("make", None);
    let in_s1 = rule("make", Some("s1"));
    let in_s2 = rule("make", Some("s2"));
    // A session whose name starts with another's, and another action.
    let in_s1x = rule("make", Some("s1/x"));
    let other = rule("make test", None);
    for r in [&everywhere, &in_s1, &in_s2, &in_s1x, &other] {
        f.store.put_rule(r).await.unwrap();
    }
    let whole = f
        .store
        .rules_for(&action("make").digest(), "s1")
        .await
        .unwrap();
    assert_eq!(whole.len(), 2);
    assert!(
        whole.contains(&everywhere) && whole.contains(&in_s1),
        "rules come back whole"
    );
    assert_eq!(
        found(&f, "make", "s1").await,
        sorted(vec![everywhere.id.clone(), in_s1.id.clone()])
    );
    assert_eq!(
        found(&f, "make", "s1/x").await,
        sorted(vec![everywhere.id.clone(), in_s1x.id.clone()])
    );
    assert_eq!(
        found(&f, "make", "s3").await,
        vec![everywhere.id.clone()],
        "another session's rules do not match"
    );
    assert_eq!(found(&f, "make test", "s2").await, vec![other.id.clone()]);
    assert!(found(&f, "make install", "s1").await.is_empty());
}

async fn a_revoked_rule_is_not_found(f: Fixture) {
    let everywhere = rule("make", None);
    let in_s1 = rule("make", Some("s1"));
    f.store.put_rule(&everywhere).await.unwrap();
    f.store.put_rule(&in_s1).await.unwrap();
    f.store.delete_rule(&in_s1.id).await.unwrap().unwrap();
    assert_eq!(found(&f, "make", "s1").await, vec![everywhere.id.clone()]);
    f.store.delete_rule(&everywhere.id).await.unwrap().unwrap();
    assert!(found(&f, "make", "s1").await.is_empty());
    assert!(f.store.rules().await.unwrap().is_empty());
}

async fn a_rule_stored_again_is_found_only_where_it_now_is(f: Fixture) {
    let first = rule("make", Some("s1"));
    f.store.put_rule(&first).await.unwrap();
    let moved = Rule {
        action: action("make test"),
        scope: Scope::Everywhere,
        ..first.clone()
    };
    f.store.put_rule(&moved).await.unwrap();
    assert!(found(&f, "make", "s1").await.is_empty());
    assert_eq!(found(&f, "make test", "s9").await, vec![first.id.clone()]);
    f.store.delete_rule(&first.id).await.unwrap().unwrap();
    assert!(found(&f, "make test", "s9").await.is_empty());
}

async fn one_rule_is_found_among_many(f: Fixture) {
    let count = 1_000;
    let mut rules = Vec::new();
    for n in 0..count {
        let r = rule(&format!("make {n}"), Some(&format!("s{}", n % 10)));
        f.store.put_rule(&r).await.unwrap();
        rules.push(r);
    }
    for n in [0, 1, 457, count - 1] {
        assert_eq!(
            found(&f, &format!("make {n}"), &format!("s{}", n % 10)).await,
            vec![rules[n].id.clone()]
        );
        assert!(
            found(&f, &format!("make {n}"), &format!("s{}", (n + 1) % 10))
                .await
                .is_empty()
        );
    }
    assert_eq!(f.store.rules().await.unwrap().len(), count);
}

conformance!(
    rules_are_found_by_action_and_scope,
    a_revoked_rule_is_not_found,
    a_rule_stored_again_is_found_only_where_it_now_is,
    one_rule_is_found_among_many,
);
