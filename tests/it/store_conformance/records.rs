//! The rules and audit roles.

use super::{Fixture, question};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::{Identity, Millis, RuleId};

async fn rules_are_stored_listed_and_deleted(f: Fixture) {
    let rule = super::rule("rule-1");

    f.store.put_rule(&rule).await.unwrap();
    f.store.put_rule(&rule).await.unwrap();
    assert_eq!(f.store.rules().await.unwrap(), vec![rule.clone()]);
    let id = RuleId::new("rule-1");
    assert_eq!(f.store.delete_rule(&id).await.unwrap(), Some(rule.clone()));
    assert_eq!(f.store.delete_rule(&id).await.unwrap(), None);
    assert!(f.store.rules().await.unwrap().is_empty());
}

async fn the_audit_trail_keeps_order_and_filters(f: Fixture) {
    let q = question("s1", &[], DEFAULT_TIMEOUT);
    let mut entries = Vec::new();
    for (n, session) in ["s1", "s2", "s1"].iter().enumerate() {
        let mut entry = AuditEntry::refused(
            &Identity::new(format!("chat:{n}")),
            "chat",
            Some(q.id.to_string()),
            None,
            "no",
        );
        entry.at = Millis(1_000 + n as u64);
        entry.session_id = Some((*session).into());
        f.store.append_audit(&entry).await.unwrap();
        entries.push(entry);
    }
    let all = f.store.audit(&AuditFilter::default()).await.unwrap();
    assert_eq!(all, entries, "oldest first");
    let s1 = f
        .store
        .audit(&AuditFilter {
            session_id: Some("s1".into()),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(s1, vec![entries[0].clone(), entries[2].clone()]);
    let recent = f
        .store
        .audit(&AuditFilter {
            since: Some(Millis(1_001)),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(recent, entries[1..].to_vec());
    let one = f
        .store
        .audit(&AuditFilter {
            limit: 1,
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(one, entries[..1].to_vec());
}

conformance!(
    rules_are_stored_listed_and_deleted,
    the_audit_trail_keeps_order_and_filters,
    leases_are_exclusive_renewable_and_lapse,
);

async fn leases_are_exclusive_renewable_and_lapse(f: Fixture) {
    let ttl = std::time::Duration::from_millis(300);
    assert!(f.store.hold_lease("poll", "p1", ttl).await.unwrap());
    assert!(
        !f.store.hold_lease("poll", "p2", ttl).await.unwrap(),
        "held by p1"
    );
    assert!(
        f.store.hold_lease("poll", "p1", ttl).await.unwrap(),
        "p1 extends it"
    );
    assert!(
        f.store.hold_lease("other", "p2", ttl).await.unwrap(),
        "leases are by name"
    );
    // Released by a stranger: nothing happens; by its holder: free.
    f.store.release_lease("poll", "p2").await.unwrap();
    assert!(!f.store.hold_lease("poll", "p2", ttl).await.unwrap());
    f.store.release_lease("poll", "p1").await.unwrap();
    assert!(f.store.hold_lease("poll", "p2", ttl).await.unwrap());
    // A holder that stops extending loses it.
    tokio::time::sleep(ttl + std::time::Duration::from_millis(200)).await;
    assert!(
        f.store.hold_lease("poll", "p1", ttl).await.unwrap(),
        "p2's lease lapsed"
    );
}
