//! Attacks of the second hardening campaign (issue 35) replayed as probes, each behind `--only`
//! and never in CI: what `/healthz` answers while slow bodies try to hold every connection
//! (`slow`), what 20 maximal form answers leave in the data files and in a history page
//! (`forms`), and what event streams nobody reads cost in memory (`silent`). Each prints its
//! figure beside the campaign's, measured on the code before the fixes.

use crate::process::rss_mb;
use crate::{load, support};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn addr_of(base: &str) -> String {
    base.trim_start_matches("http://").to_owned()
}

/// A client that makes a new connection for every request.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// One attacker: announces a 1,000,000-byte body and sends a byte of it every 5 s; connects
/// again whenever the server cuts it.
async fn drip(addr: String, reconnects: Arc<AtomicUsize>) {
    let head = format!(
        "POST /api/questions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{{"
    );
    loop {
        if let Ok(mut stream) = TcpStream::connect(&addr).await
            && stream.write_all(head.as_bytes()).await.is_ok()
        {
            while stream.write_all(b" ").await.is_ok() {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
        reconnects.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `count` connections sending a body a byte every 5 s (reconnecting when cut), and a
/// `/healthz` on a new connection every second for `seconds`: how many are answered within 5 s
/// (issue 35, defect 4: 4,300 such connections held all 4,096 places, /healthz 0 in 60 s).
pub async fn slow_bodies(server: &support::Process, count: usize, seconds: u64) {
    let (base, addr) = (server.base.clone(), addr_of(&server.base));
    let reconnects = Arc::new(AtomicUsize::new(0));
    let attackers: Vec<_> = (0..count)
        .map(|_| tokio::spawn(drip(addr.clone(), reconnects.clone())))
        .collect();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = reconnects.load(Ordering::Relaxed);
    let mut probes = Vec::new();
    for _ in 0..seconds {
        let url = format!("{base}/healthz");
        probes.push(tokio::spawn(async move {
            let started = Instant::now();
            let answered = match fresh_client().get(url).send().await {
                Ok(response) => response.status().is_success(),
                Err(_) => false,
            };
            answered.then(|| started.elapsed().as_secs_f64() * 1e3)
        }));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut times = Vec::new();
    for probe in probes {
        times.extend(probe.await.unwrap());
    }
    times.sort_by(f64::total_cmp);
    let cut = reconnects.load(Ordering::Relaxed) - before;
    println!(
        "slow bodies: {count} connections (Content-Length 1000000, a byte every 5 s, reconnecting when cut; {cut} cut meanwhile): /healthz answered {}/{seconds} within 5 s, p50 {:.1} ms, max {:.1} ms   (campaign before: 0 in 60 s)",
        times.len(),
        times.get(times.len() / 2).copied().unwrap_or(f64::NAN),
        times.last().copied().unwrap_or(f64::NAN),
    );
    for attacker in attackers {
        attacker.abort();
    }
}

/// Bytes under `dir`, all files.
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|entry| match entry.metadata() {
                Ok(meta) if meta.is_dir() => bytes_under(&entry.path()),
                Ok(meta) => meta.len(),
                Err(_) => 0,
            })
            .sum()
    })
}

/// `answers` form questions answered as fully as the server allows (every field of the
/// largest form, each at the largest `maxLength`, in four-byte characters): the data files'
/// growth, memory, and `GET /api/history?limit=500` (issue 35, defect 1: 20 answers of 1.99 M
/// characters grew the data file by 132 MB, memory to 201 MB, and the page was 79.8 MB in 27.5 s).
pub async fn forms(server: &support::Process, data_dir: &Path, answers: usize) {
    use askbridge_core::form::{MAX_FIELDS, MAX_MAX_LENGTH};
    let (base, pid) = (server.base.clone(), server.child.id());
    let client = load::client();
    let fields: serde_json::Map<String, serde_json::Value> = (0..MAX_FIELDS)
        .map(|i| {
            let field = serde_json::json!({"type": "string", "maxLength": MAX_MAX_LENGTH});
            (format!("f{i}"), field)
        })
        .collect();
    let question = serde_json::json!({"session_id": "forms", "kind": "form", "prompt": "Fill in",
        "form": {"type": "object", "properties": fields}});
    let answer: serde_json::Map<String, serde_json::Value> = (0..MAX_FIELDS)
        .map(|i| (format!("f{i}"), "\u{1D49C}".repeat(MAX_MAX_LENGTH).into()))
        .collect();
    let answer = serde_json::Value::Object(answer);
    let answer_bytes = serde_json::to_vec(&answer).unwrap().len();
    let (before, rss_before) = (bytes_under(data_dir), rss_mb(pid));
    for _ in 0..answers {
        let created = support::post_json(&base, "/api/questions", question.clone()).await;
        let created: serde_json::Value = created.json().await.unwrap();
        let id = created["id"].as_str().expect("a form question");
        load::reply(&client, &base, id, answer.clone()).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let grown = bytes_under(data_dir).saturating_sub(before) as f64 / 1e6;
    let rss = rss_mb(pid);
    let started = Instant::now();
    let page = client
        .get(format!("{base}/api/history?limit=500"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let page_ms = started.elapsed().as_secs_f64() * 1e3;
    let held = serde_json::from_slice::<serde_json::Value>(&page).unwrap()["questions"]
        .as_array()
        .map_or(0, Vec::len);
    println!(
        "form answers: {answers} maximal answers ({MAX_FIELDS} fields x {MAX_MAX_LENGTH} four-byte characters, {:.0} KB each) grew the data files by {grown:.1} MB (campaign before: 132 MB); RSS {rss_before:.1} -> {rss:.1} MB (before: 201 MB); /api/history?limit=500 {:.2} MB ({held} items) in {page_ms:.0} ms (before: 79.8 MB in 27.5 s)",
        answer_bytes as f64 / 1e3,
        page.len() as f64 / 1e6,
    );
}

/// Opens an event stream and never reads it.
async fn silent_stream(addr: &str) -> Option<TcpStream> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let request =
        format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    Some(stream)
}

/// Whether the server has closed `stream` (read to its end within 20 s: all are read at once).
async fn was_closed(stream: &mut TcpStream) -> bool {
    let mut buffer = vec![0u8; 64 * 1024];
    let drained = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    });
    drained.await.unwrap_or(false)
}

/// Asks `count` questions with an 8,000-character detail each (about 8 KB an event), one at a
/// time: live events that pile up for clients that do not read.
async fn ask_large(base: String, count: usize) {
    let client = load::client();
    for n in 0..count {
        let response = client
            .post(format!("{base}/api/questions"))
            .json(&serde_json::json!({
                "prompt": format!("Live {n}?"),
                "session_id": "silent-live",
                "detail": "x".repeat(8000),
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
    }
}

/// With `pending` questions, `clients` event streams that never read: memory at its highest
/// while they are held, then while 150 large questions are asked (1.2 MB of live events a
/// stream), and once the server has cut them; a reading client's replay before and meanwhile
/// (issue 35: 2,000 such clients with 100,000 pending took memory to 731 MB).
pub async fn silent_streams(server: &support::Process, clients: usize, pending: usize) {
    let (base, pid) = (server.base.clone(), server.child.id());
    load::fill(&base, pending, 16, "silent").await;
    let replay_before = load::replay_ms(&base, 1000).await;
    let before = rss_mb(pid);
    let addr = addr_of(&base);
    let mut streams = Vec::with_capacity(clients);
    for _ in 0..clients {
        streams.extend(silent_stream(&addr).await);
    }
    let opened = streams.len();
    let mut peak = rss_mb(pid);
    // A reading client meanwhile, on its own task: it may take longer than the whole run (NaN).
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        peak = peak.max(rss_mb(pid));
    }
    let reading = tokio::spawn({
        let base = base.clone();
        async move { load::replay_ms(&base, 1000).await }
    });
    for _ in 0..25 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        peak = peak.max(rss_mb(pid));
    }
    let held = rss_mb(pid);
    let live = tokio::spawn(ask_large(base.clone(), 150));
    while !live.is_finished() {
        tokio::time::sleep(Duration::from_secs(1)).await;
        peak = peak.max(rss_mb(pid));
    }
    live.await.unwrap();
    for _ in 0..15 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        peak = peak.max(rss_mb(pid));
    }
    let after = rss_mb(pid);
    let replay_during = if reading.is_finished() {
        reading.await.unwrap_or(f64::NAN)
    } else {
        reading.abort();
        f64::NAN
    };
    let closed = futures_util::future::join_all(streams.iter_mut().map(was_closed)).await;
    let cut = closed.into_iter().filter(|closed| *closed).count();
    println!(
        "silent event streams: {opened} clients that never read, {pending} pending: RSS {before:.1} MB before, peak {peak:.1} MB ({:.0} KB a client), {held:.1} MB after 30 s, {after:.1} MB after 150 large live events; {cut} cut by the server; a reading client's replay {replay_before:.1} ms before, {replay_during:.1} ms meanwhile   (campaign before: 731 MB)",
        (peak - before) * 1024.0 / opened.max(1) as f64
    );
}
