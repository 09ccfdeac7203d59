//! The listings role (the ops page's runs and history views) and the audit trail's
//! newest-first pages: every page in order, nothing twice, nothing skipped, cursors that carry
//! over instants shared by several items; and rule events.

use super::{Fixture, SETTLE, answer, claim, question};
use askbridge::store::{ClaimOptions, Cursor, Event, EventKind, HistoryFilter, RunFilter};
use askbridge_core::audit::{AuditEntry, AuditFilter};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::run::{Run, RunState};
use askbridge_core::{Identity, Millis, Rule, RuleId, Status, Transition};
use std::time::Duration;

fn run(created: u64) -> Run {
    let origin = crate::support::api_origin();
    Run::new(
        "deploy",
        "x",
        origin,
        "p1",
        Millis(created),
        Millis(9_000_000),
    )
}

/// Reads every page of a listing; `page(cursor)` gives one page and the next cursor (the
/// store's: a wrong one skips or repeats items, a missing one ends early).
pub(super) async fn all_pages<T, F, Fut>(mut page: F) -> Vec<T>
where
    F: FnMut(Option<Cursor>) -> Fut,
    Fut: std::future::Future<Output = (Vec<T>, Option<Cursor>)>,
{
    let (mut seen, mut cursor) = (Vec::new(), None);
    for _ in 0..100 {
        let (items, next) = page(cursor.clone()).await;
        seen.extend(items);
        match next {
            Some(next) => cursor = Some(next),
            None => return seen,
        }
    }
    panic!("more than 100 pages");
}

async fn runs_are_listed_newest_first_a_page_at_a_time(f: Fixture) {
    // Nine runs, three started in the same millisecond; four end.
    let mut runs = Vec::new();
    for n in 0..9u64 {
        let r = run(1_000 + n.min(6));
        f.store.insert_run(&r).await.unwrap();
        runs.push(r);
    }
    for r in runs.iter_mut().take(4) {
        r.state = if r.created_at.0 % 2 == 0 {
            RunState::Done
        } else {
            RunState::Failed
        };
        r.result = Some("over".into());
        r.updated_at = Millis(5_000 + r.created_at.0);
        f.store.save_run(r, "p1").await.unwrap();
    }
    let store = f.store.clone();
    let live: Vec<Run> = all_pages(|after| {
        let store = store.clone();
        async move {
            let filter = RunFilter {
                after,
                limit: 2,
                ..RunFilter::default()
            };
            let page = store.list_runs(&filter).await.unwrap();
            (page.items, page.next)
        }
    })
    .await;
    let mut expected: Vec<&Run> = runs[4..].iter().collect();
    expected.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| b.id.as_str().cmp(a.id.as_str()))
    });
    let ids = |runs: &[&Run]| runs.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
    assert_eq!(
        live.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        ids(&expected),
        "live runs, newest first, each once"
    );
    let ended = f
        .store
        .list_runs(&RunFilter {
            ended: true,
            ..RunFilter::default()
        })
        .await
        .unwrap()
        .items;
    assert_eq!(ended.len(), 4);
    assert!(ended.windows(2).all(|w| w[0].updated_at >= w[1].updated_at));
    let failed = f
        .store
        .list_runs(&RunFilter {
            ended: true,
            state: Some(RunState::Failed),
            ..RunFilter::default()
        })
        .await
        .unwrap()
        .items;
    assert!(!failed.is_empty() && failed.iter().all(|r| r.state == RunState::Failed));
}

async fn history_pages_through_resolved_questions(f: Fixture) {
    let mut resolved = Vec::new();
    for n in 0..7 {
        let q = question(if n % 2 == 0 { "h1" } else { "h2" }, &[], DEFAULT_TIMEOUT);
        f.store.insert(&q).await.unwrap();
        let transition = if n % 3 == 0 {
            Transition::Decline { message: None }
        } else {
            answer("dayjs")
        };
        let claimed = f
            .store
            .claim(&q, &claim(transition, "chat:1"), ClaimOptions::new(SETTLE))
            .await
            .unwrap()
            .unwrap();
        resolved.push(claimed.question);
    }
    // One still pending: never in the history.
    f.store
        .insert(&question("h1", &[], DEFAULT_TIMEOUT))
        .await
        .unwrap();
    let store = f.store.clone();
    let seen = all_pages(|after| {
        let store = store.clone();
        async move {
            let filter = HistoryFilter {
                after,
                limit: 3,
                ..HistoryFilter::default()
            };
            let page = store.history(&filter).await.unwrap();
            (page.items, page.next)
        }
    })
    .await;
    resolved.sort_by(|a, b| {
        HistoryFilter::time_of(b)
            .cmp(&HistoryFilter::time_of(a))
            .then_with(|| b.id.as_str().cmp(a.id.as_str()))
    });
    let ids = |qs: &[askbridge_core::Question]| qs.iter().map(|q| q.id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&seen),
        ids(&resolved),
        "every resolved question once, newest first"
    );
    let declined = f
        .store
        .history(&HistoryFilter {
            status: Some(Status::Declined),
            ..HistoryFilter::default()
        })
        .await
        .unwrap()
        .items;
    assert_eq!(declined.len(), 3);
    let h2 = f
        .store
        .history(&HistoryFilter {
            session_id: Some("h2".into()),
            ..HistoryFilter::default()
        })
        .await
        .unwrap()
        .items;
    assert_eq!(h2.len(), 3);
    assert!(h2.iter().all(|q| q.session_id == "h2"));
}

async fn the_audit_trail_pages_newest_first_with_filters(f: Fixture) {
    // Seven records over four instants, a moment ago (a store may key them by append time).
    let base = Millis::now().0 - 5_000;
    let mut entries = Vec::new();
    for n in 0..7u64 {
        let mut entry = AuditEntry::refused(
            &Identity::new(format!("chat:{}", n % 2)),
            "chat",
            None,
            None,
            "no",
        );
        entry.at = Millis(base + n / 2);
        entry.message = Some(format!("record {n}"));
        f.store.append_audit(&entry).await.unwrap();
        entries.push(entry);
    }
    let store = f.store.clone();
    let mut seen = Vec::new();
    let mut before = None;
    for _ in 0..10 {
        let filter = AuditFilter {
            newest_first: true,
            limit: 3,
            before,
            ..AuditFilter::default()
        };
        let mut probe = filter.clone();
        probe.limit = 4;
        let mut page = store.audit(&probe).await.unwrap();
        let more = page.len() > 3;
        page.truncate(3);
        before = filter.next_cursor(&page);
        seen.extend(page);
        if !more {
            break;
        }
    }
    let messages = |es: &[AuditEntry]| es.iter().map(|e| e.message.clone()).collect::<Vec<_>>();
    let mut expected = seen.clone();
    expected.sort_by_key(|e| std::cmp::Reverse(e.at));
    assert_eq!(seen.len(), 7, "{:?}", messages(&seen));
    assert_eq!(messages(&seen), messages(&expected), "newest first");
    let mut distinct = messages(&seen);
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 7, "each record once");
    let mine = f
        .store
        .audit(&AuditFilter {
            newest_first: true,
            by: Some("chat:1".into()),
            outcome: Some("refused".into()),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(mine.len(), 3);
    assert!(mine.iter().all(|e| e.by.as_str() == "chat:1"));
    let none = f
        .store
        .audit(&AuditFilter {
            outcome: Some("answered".into()),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert!(none.is_empty());
}

async fn rules_created_and_revoked_are_announced(f: Fixture) {
    let mut events = f.store.subscribe();
    let rule = super::rule("rule-ev");
    f.store.put_rule(&rule).await.unwrap();
    f.store.delete_rule(&RuleId::new("rule-ev")).await.unwrap();
    let mut kinds = Vec::new();
    while kinds.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("rule events arrive")
            .unwrap();
        if let Event::Rule { kind, rule: seen } = event {
            assert_eq!(seen, rule);
            kinds.push(kind);
        }
    }
    assert_eq!(kinds, [EventKind::RuleCreated, EventKind::RuleRevoked]);
    // Pages of rules, newest first.
    for n in 0..3u64 {
        let mut r = rule.clone();
        r.id = RuleId::new(format!("rule-p{n}"));
        r.created_at = Millis(100 + n);
        f.store.put_rule(&r).await.unwrap();
    }
    let first = f.store.rules_page(None, 2).await.unwrap();
    let names = |rules: &[Rule]| rules.iter().map(|r| r.id.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&first.items), ["rule-p2", "rule-p1"]);
    let cursor = Cursor {
        at: first.items[1].created_at,
        id: first.items[1].id.to_string(),
    };
    assert_eq!(
        first.next,
        Some(cursor.clone()),
        "the next page after the last item"
    );
    let rest = f.store.rules_page(Some(&cursor), 2).await.unwrap();
    assert_eq!(names(&rest.items), ["rule-p0"]);
    assert_eq!(rest.next, None, "the last page");
}

/// A store without runs, rules or history lists empty pages (Redis answered 503: its client
/// refused the empty pipeline a page of no items made).
async fn empty_listings_are_empty_pages(f: Fixture) {
    let runs = f.store.list_runs(&RunFilter::default()).await.unwrap();
    assert!(runs.items.is_empty() && runs.next.is_none());
    let ended = RunFilter {
        ended: true,
        ..RunFilter::default()
    };
    assert!(f.store.list_runs(&ended).await.unwrap().items.is_empty());
    let rules = f.store.rules_page(None, 50).await.unwrap();
    assert!(rules.items.is_empty() && rules.next.is_none());
    let history = f.store.history(&HistoryFilter::default()).await.unwrap();
    assert!(history.items.is_empty());
}

conformance!(
    empty_listings_are_empty_pages,
    runs_are_listed_newest_first_a_page_at_a_time,
    history_pages_through_resolved_questions,
    the_audit_trail_pages_newest_first_with_filters,
    rules_created_and_revoked_are_announced,
);
