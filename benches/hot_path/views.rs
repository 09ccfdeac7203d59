//! The ops page's views with many items (`--only views`): the first page of runs, rules, the
//! audit trail and history, each with `--pending` items (100,000 by default) of its kind in
//! Redis, beside the same page with a handful: a page must cost O(page), not O(all). Rules are
//! fewer (`--rules`, 10,000 by default): each is an approval asked and answered through
//! askbridge, two requests and two audit records (`--only approvals` measures 100,000 rules).

use crate::load;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The views and their first pages, as the ops page asks for them.
const PAGES: [(&str, &str); 4] = [
    ("runs", "/api/runs?limit=50"),
    ("rules", "/api/rules?limit=50"),
    ("audit", "/api/audit?order=newest&limit=50"),
    ("history", "/api/history?limit=50"),
];

/// Best and median of 15 GETs of each first page, in ms.
async fn time_pages(base: &str) -> Vec<(f64, f64)> {
    let client = load::client();
    let mut out = Vec::new();
    for (_, path) in PAGES {
        let mut times = Vec::new();
        for _ in 0..15 {
            let (ms, body) = load::timed_get(&client, &format!("{base}{path}")).await;
            assert!(body.is_object());
            times.push(ms);
        }
        times.sort_by(f64::total_cmp);
        out.push((times[0], times[times.len() / 2]));
    }
    out
}

/// `count` approvals answered "always allow", each a distinct action in a session of its own
/// (an agent's): a rule each (and two audit records each).
async fn rules(base: &str, count: usize, concurrency: usize, name: &'static str) {
    let client = load::client();
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, base, next) = (client.clone(), base.to_owned(), next.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    return;
                }
                let q: serde_json::Value = client
                    .post(format!("{base}/api/questions"))
                    .json(&json!({
                        "session_id": format!("{name}-{n}"),
                        "kind": "approval",
                        "prompt": "Run it?",
                        "answerers": ["api"],
                        "action": {"tool": "shell", "args": {"command": format!("{name} {n}")}}
                    }))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let id = q["id"].as_str().unwrap().to_owned();
                load::reply(&client, &base, &id, json!("always")).await;
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}

pub async fn views(base: &str, count: usize, rule_count: usize, concurrency: usize) {
    // A handful of each first.
    load::start_runs(base, 5, 1).await;
    rules(base, 5, 1, "few").await;
    load::cycles(base, 5, 1).await;
    let few = time_pages(base).await;
    let started = Instant::now();
    load::start_runs(base, count, concurrency).await;
    rules(base, rule_count, concurrency, "many").await;
    load::cycles(base, count, concurrency).await;
    println!(
        "views: filled {count} waiting runs, {rule_count} rules, {count} answered questions (at least {} audit records) in {:.0} s",
        count + 2 * rule_count,
        started.elapsed().as_secs_f64()
    );
    let many = time_pages(base).await;
    for (((name, path), (few_best, few_median)), (best, median)) in PAGES.iter().zip(few).zip(many)
    {
        let items = if *name == "rules" { rule_count } else { count };
        println!(
            "view {name:<8} first page with {items}: median {median:>6.1} ms (best {best:.1}) (goal < 200 ms)   beside 5 items: median {few_median:.1} ms (best {few_best:.1})   ratio {:.1}x   GET {path}",
            median / few_median
        );
    }
}
