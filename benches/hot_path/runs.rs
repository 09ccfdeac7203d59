//! Follow-up runs of the example `release` flow: resumes/s beside LangGraph's interrupt and
//! resume on the same machine, the Redis commands a resume costs, and the CPU each process
//! spends per resume with fsync on every write and once a second.

use crate::{Options, anchors, load, percentile, probe, redis_server, serve, summary, support};
use std::time::Duration;

/// `o.runs` runs answered one request per step, printing the CPU each process spent per resume:
/// steadier than resumes/s on a shared machine, and it says which of the three (askbridge,
/// redis-server, this client) a change made cheaper. Returns resumes/s and each step's time.
async fn runs_timing_cpu(
    o: &Options,
    redis: &redis_server::RedisServer,
    server: &support::Process,
    setting: &str,
) -> (f64, Vec<Duration>) {
    let askbridge_pid = server.child.id().to_string();
    let cpu = || async {
        (
            probe::process_cpu_s(&askbridge_pid),
            probe::redis_cpu_s(&redis.url()).await,
            probe::process_cpu_s("self"),
        )
    };
    let before = cpu().await;
    let (rate, _, _, steps) =
        load::runs(&server.base, o.runs, o.concurrency, load::Follow::Answer).await;
    let after = cpu().await;
    let per_resume = |a: f64, b: f64| (b - a) * 1e6 / (o.runs * 3) as f64;
    println!(
        "  CPU per resume ({setting}): askbridge {:.0} us, redis-server {:.0} us, this client {:.0} us",
        per_resume(before.0, after.0),
        per_resume(before.1, after.1),
        per_resume(before.2, after.2)
    );
    (rate, steps)
}

pub async fn runs(o: &Options) {
    use load::Follow;
    // LangGraph is measured before and after askbridge's runs, and the ratio taken to their
    // mean (of its faster shape): on this shared machine one measurement alone swings by a third.
    let first_anchor = anchors::langgraph_resumes_per_s(300);
    let redis = redis_server::RedisServer::start();
    let server = serve(&redis);
    load::runs(&server.base, 50, o.concurrency, Follow::Answer).await;
    // What a resume costs in Redis commands (a run of three asks: start + three answers).
    let monitor = probe::Monitor::start(redis.port);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (before, inside) = (monitor.count(), monitor.inside());
    let aof_before = probe::aof_bytes(&redis.url()).await;
    monitor.take_names();
    load::runs(&server.base, 100, 1, Follow::Answer).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "commands per resume      {:>8.2}   (a run: its start and three answers, 100 runs)   {}",
        (monitor.count() - before) as f64 / 300.0,
        summary(&monitor.take_names())
    );
    // What Redis does for it: the commands scripts run, and what the AOF grows by (Redis
    // writes and fsyncs it, and rewrites it as it grows).
    println!(
        "  inside Redis per run   {:>8.1}   commands run by scripts; {:.0} AOF bytes",
        (monitor.inside() - inside) as f64 / 100.0,
        (probe::aof_bytes(&redis.url()).await - aof_before) as f64 / 100.0
    );
    drop(monitor);
    let (rate, mut steps) = runs_timing_cpu(o, &redis, &server, "fsync on every write").await;
    // The same runs followed with two requests per step (wait for the next question, reply).
    let (two_step, learning, mut waits, mut replies) =
        load::runs(&server.base, o.runs, o.concurrency, Follow::WaitThenReply).await;
    println!(
        "  per step: answer + next question p50 {:.2} ms; as two requests: wait p50 {:.2} ms, reply p50 {:.2} ms",
        percentile(&mut steps, 0.5),
        percentile(&mut waits, 0.5),
        percentile(&mut replies, 0.5)
    );
    drop(server);
    // The same with Redis as the README recommends for most deployments (AOF, fsync once a
    // second): the tests' Redis fsyncs every write, which on this 2-core machine competes with
    // askbridge and the client for the same cores.
    let everysec = redis_server::RedisServer::start_with(&["--appendfsync", "everysec"]);
    let server = serve(&everysec);
    load::runs(&server.base, 50, o.concurrency, Follow::Answer).await;
    let (relaxed, _) = runs_timing_cpu(o, &everysec, &server, "appendfsync everysec").await;
    let anchor = first_anchor
        .and_then(|first| anchors::langgraph_resumes_per_s(300).map(|second| (first, second)));
    match anchor {
        Ok((first, second)) => {
            let mean = first.mean(&second);
            let anchor = mean.faster();
            println!(
                "run resumes/s            {rate:>8.0}   beside LangGraph's faster shape {anchor:>6.0}/s   ratio {:.1}x (goal >= 10x)   one request per step (POST /api/runs/{{id}}/answer)",
                rate / anchor
            );
            println!(
                "  LangGraph: one node, three interrupts {:.0}/s ({:.0} before, {:.0} after), ratio {:.1}x; a node per question {:.0}/s ({:.0} before, {:.0} after), ratio {:.1}x",
                mean.one_node,
                first.one_node,
                second.one_node,
                rate / mean.one_node,
                mean.nodes,
                first.nodes,
                second.nodes,
                rate / mean.nodes
            );
            println!(
                "  two requests per step  {two_step:>6.0}   ratio {:.1}x   (GET .../wait + POST .../reply; {learning:.2} requests to learn each next question)",
                two_step / anchor
            );
            println!(
                "  with appendfsync everysec {relaxed:>6.0}   ratio {:.1}x (goal >= 12x)",
                relaxed / anchor
            );
        }
        Err(why) => println!(
            "run resumes/s            {rate:>8.0}   (two requests per step {two_step:.0}, everysec {relaxed:.0})   (LangGraph anchor not measured: {why})"
        ),
    }
}
