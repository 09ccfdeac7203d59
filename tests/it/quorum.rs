//! Quorum approvals across two surfaces (Telegram through teloxide against the fake Bot API, and
//! the HTTP API) and two askbridge processes on one Redis: votes counted once per person
//! store-side, progress on the message, a duplicate vote refused and audited, a race of votes
//! resolving once, a rejection after one approval ending it, and a rule only from a quorum
//! deciding a quorum.

use crate::fakes::telegram::{FakeTelegram, User};
use crate::support::{
    Process, RedisServer, ask_when_connected, eventually_some, get_json, post_json,
};
use crate::telegram::{GROUP, alice};
use serde_json::{Value, json};
use std::time::Duration;

fn bob() -> User {
    User {
        id: 8,
        username: "bob",
    }
}

struct Rig {
    fake: FakeTelegram,
    a: Process,
    b: Process,
    _redis: RedisServer,
}

impl Rig {
    fn start() -> Rig {
        let redis = RedisServer::start();
        let fake = FakeTelegram::start();
        let mut env = fake.serve_env(&redis);
        let approvers = "telegram:7,telegram:8,api".to_owned();
        env.push(("ASKBRIDGE_APPROVERS", approvers));
        let a = Process::spawn(&["serve"], &env);
        let b = Process::spawn(&["serve"], &env);
        Rig {
            fake,
            a,
            b,
            _redis: redis,
        }
    }

    async fn ask(&self, session: &str, command: &str) -> String {
        let body = json!({
            "session_id": session,
            "prompt": format!("Run {command}?"),
            "kind": "approval",
            "action": {"tool": "shell", "args": {"command": command}},
            "targets": [format!("telegram:{GROUP}")],
            "quorum": {"needs": 2, "of": ["telegram:7", "telegram:8", "api"]},
            "timeout_s": 120,
        });
        let q = ask_when_connected(&self.a.base, body).await;
        q["id"].as_str().unwrap().to_owned()
    }

    /// The message showing question `id` in the group, once shown.
    async fn shown(&self, id: &str) -> crate::fakes::telegram::Sent {
        eventually_some(Duration::from_secs(10), "the approval shown", || {
            let found = self.fake.sent_in(GROUP).into_iter().find(|m| {
                m.markup.is_some()
                    && m.text.contains("Run ")
                    && m.buttons().iter().flatten().any(|(_, p)| p.contains(id))
            });
            async move { found }
        })
        .await
    }

    async fn toast(&self, update: i64) -> String {
        eventually_some(Duration::from_secs(10), "the tap's toast", || {
            let toast = self.fake.toast_of(update);
            async move { toast }
        })
        .await
    }

    async fn question(&self, id: &str) -> Value {
        get_json(&self.b.base, &format!("/api/questions/{id}")).await
    }

    /// The question once `n` votes are stored (a tap's toast comes before its commit).
    async fn votes_become(&self, id: &str, n: usize) -> Value {
        eventually_some(Duration::from_secs(10), "the votes stored", || async move {
            let q = self.question(id).await;
            (q["votes"].as_array().map_or(0, Vec::len) == n).then_some(q)
        })
        .await
    }

    /// An approval of `make risky` asked in `session`, approved once by alice's tap (1 of 2).
    async fn approved_once(&self, session: &str) -> String {
        let id = self.ask(session, "make risky").await;
        let shown = self.shown(&id).await;
        let tap = self
            .fake
            .tap(GROUP, shown.id, &alice(), &shown.payload("Allow once"));
        assert!(self.toast(tap).await.contains("1 of 2 approved"));
        self.votes_become(&id, 1).await;
        id
    }

    async fn status_becomes(&self, id: &str, status: &str) -> Value {
        eventually_some(
            Duration::from_secs(10),
            "the question's status",
            || async move {
                let q = self.question(id).await;
                (q["status"] == status).then_some(q)
            },
        )
        .await
    }
}

/// Every message the bot sent to the group and every toast, in order, for the closing note.
fn transcript(fake: &FakeTelegram) -> String {
    let mut lines = Vec::new();
    for call in fake.calls() {
        let text = call.body["text"].as_str().unwrap_or_default();
        match call.method.as_str() {
            "sendmessage" => lines.push(format!("bot  > {text}")),
            "editmessagetext" => lines.push(format!(
                "bot  ~ (message {} edited) {text}",
                call.body["message_id"]
            )),
            "answercallbackquery" => lines.push(format!("toast: {text}")),
            _ => {}
        }
    }
    lines.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_of_three_approve_across_telegram_and_http_on_two_processes() {
    let rig = Rig::start();
    let id = rig.ask("quorum", "make deploy").await;
    let shown = rig.shown(&id).await;
    assert!(shown.text.contains("0 of 2 approved"), "{}", shown.text);

    // Alice allows on Telegram: counted, the question stays pending, the message shows it.
    let tap = rig
        .fake
        .tap(GROUP, shown.id, &alice(), &shown.payload("Allow once"));
    let toast = rig.toast(tap).await;
    assert!(
        toast.contains("Vote counted. 1 of 2 approved: @alice"),
        "{toast}"
    );
    let pending = rig.votes_become(&id, 1).await;
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["votes"][0]["by"], "telegram:7");
    eventually_some(
        Duration::from_secs(10),
        "the message shows the progress",
        || {
            let redrawn = rig.fake.sent_in(GROUP).into_iter().find(|m| {
                m.id == shown.id && m.text.contains("1 of 2 approved: @alice") && m.markup.is_some()
            });
            async move { redrawn }
        },
    )
    .await;

    // Her second vote is refused, politely, and changes nothing.
    let again = rig
        .fake
        .tap(GROUP, shown.id, &alice(), &shown.payload("Always allow"));
    let toast = rig.toast(again).await;
    assert!(toast.contains("voted on this question already"), "{toast}");
    assert_eq!(
        rig.question(&id).await["votes"].as_array().unwrap().len(),
        1
    );

    // The HTTP API is one member (`api`), on the other process: its vote meets the quorum.
    let response = post_json(
        &rig.b.base,
        &format!("/api/questions/{id}/reply"),
        json!({"answer": "once"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let resolved: Value = response.json().await.unwrap();
    assert_eq!(resolved["status"], "answered", "{resolved}");
    let votes = resolved["resolution"]["votes"].as_array().unwrap();
    let voters: Vec<(&str, &str)> = votes
        .iter()
        .map(|v| (v["by"].as_str().unwrap(), v["via"].as_str().unwrap()))
        .collect();
    assert_eq!(voters, [("telegram:7", "telegram"), ("api", "api")]);
    assert!(
        votes.iter().all(|v| v["at"].is_string()),
        "each vote says when"
    );
    // Every surface withdraws.
    eventually_some(
        Duration::from_secs(10),
        "the group's message withdrawn",
        || {
            let done = rig
                .fake
                .sent_in(GROUP)
                .into_iter()
                .find(|m| m.id == shown.id && m.markup.is_none());
            async move { done }
        },
    )
    .await;
    // A vote after the end is told the outcome.
    let late = post_json(
        &rig.a.base,
        &format!("/api/questions/{id}/reply"),
        json!({"answer": "once"}),
    )
    .await;
    assert_eq!(late.status(), 409);

    let audit = get_json(&rig.a.base, "/api/audit?session_id=quorum").await;
    let events: Vec<String> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {} {}",
                e["event"].as_str().unwrap(),
                e["by"].as_str().unwrap(),
                e["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert!(
        events.iter().any(|e| e.starts_with("voted telegram:7")),
        "{events:#?}"
    );
    assert!(
        events.iter().any(|e| e.starts_with("voted api")),
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("refused telegram:7")
                && e.contains("voted on this question already")),
        "the duplicate vote is audited: {events:#?}"
    );
    assert_eq!(
        events.iter().filter(|e| e.starts_with("resolved")).count(),
        1,
        "{events:#?}"
    );
    println!(
        "--- Telegram transcript: a 2-of-3 quorum ---\n{}",
        transcript(&rig.fake)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_votes_resolve_once_and_a_rejection_after_one_approval_ends_it() {
    let rig = Rig::start();

    // The same member (`api`) on both processes at once: one vote counts, one is refused.
    let id = rig.ask("race", "make race").await;
    let path = format!("/api/questions/{id}/reply");
    let (one, two) = tokio::join!(
        post_json(&rig.a.base, &path, json!({"answer": "once"})),
        post_json(&rig.b.base, &path, json!({"answer": "once"}))
    );
    let mut codes = vec![one.status().as_u16(), two.status().as_u16()];
    codes.sort_unstable();
    assert_eq!(codes, [200, 409], "one vote per person across processes");
    assert_eq!(
        rig.question(&id).await["votes"].as_array().unwrap().len(),
        1
    );

    // Then two members meet the quorum at once, on two surfaces and three process paths: Bob's
    // tap (the process polling Telegram) and the API on both processes. One resolution; every
    // other attempt is told who won (or that `api` voted already).
    let shown = rig.shown(&id).await;
    let tap = rig
        .fake
        .tap(GROUP, shown.id, &bob(), &shown.payload("Allow once"));
    let (one, two) = tokio::join!(
        post_json(&rig.a.base, &path, json!({"answer": "once"})),
        post_json(&rig.b.base, &path, json!({"answer": "once"}))
    );
    assert_eq!(one.status(), 409, "api voted already");
    assert_eq!(two.status(), 409, "api voted already");
    let resolved = rig.status_becomes(&id, "answered").await;
    let toast = rig.toast(tap).await;
    assert!(toast.contains("Answered: allowed once, by @bob"), "{toast}");
    assert_eq!(resolved["resolution"]["value"], "once");
    assert_eq!(resolved["resolution"]["by"], "telegram:8");
    // And a fresh question raced by two members on two processes, over HTTP and Telegram at once.
    let id2 = rig.ask("race", "make race again").await;
    let shown2 = rig.shown(&id2).await;
    let path2 = format!("/api/questions/{id2}/reply");
    let tap_alice = rig
        .fake
        .tap(GROUP, shown2.id, &alice(), &shown2.payload("Allow once"));
    let tap_bob = rig
        .fake
        .tap(GROUP, shown2.id, &bob(), &shown2.payload("Allow once"));
    let api = post_json(&rig.b.base, &path2, json!({"answer": "once"})).await;
    assert!([200, 409].contains(&api.status().as_u16()));
    let resolved2 = rig.status_becomes(&id2, "answered").await;
    let _ = (rig.toast(tap_alice).await, rig.toast(tap_bob).await);
    let voters: Vec<&str> = resolved2["resolution"]["votes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["by"].as_str().unwrap())
        .collect();
    assert!(voters.len() >= 2, "{voters:?}");
    let mut distinct = voters.clone();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        voters.len(),
        "one vote per person: {voters:?}"
    );
    let audit = get_json(&rig.a.base, "/api/audit?session_id=race").await;
    let resolutions = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "resolved")
        .count();
    assert_eq!(resolutions, 2, "each question resolved once: {audit}");

    // A rejection after one approval ends it at once, with the message and the vote so far.
    let id = rig.approved_once("reject").await;
    rig.fake.say(
        GROUP,
        &bob(),
        &format!("/answer {id} reject not on a Friday"),
    );
    let declined = rig.status_becomes(&id, "declined").await;
    assert_eq!(declined["resolution"]["by"], "telegram:8");
    assert_eq!(declined["resolution"]["message"], "not on a Friday");
    assert_eq!(declined["resolution"]["votes"][0]["by"], "telegram:7");
}

/// A rejection over HTTP, on the process that asked (and so remembers the question as asked,
/// with no votes), after one approval: it ends the question with the vote so far, as a
/// rejection in chat does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_over_http_after_one_approval_keeps_the_vote() {
    let rig = Rig::start();
    let id = rig.approved_once("reject-http").await;
    let response = post_json(
        &rig.a.base,
        &format!("/api/questions/{id}/reply"),
        json!({"answer": "reject", "message": "not on a Friday"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let declined: Value = response.json().await.unwrap();
    assert_eq!(declined["status"], "declined", "{declined}");
    assert_eq!(
        declined["resolution"]["votes"][0]["by"], "telegram:7",
        "{declined}"
    );
    let stored = rig.question(&id).await;
    assert_eq!(
        stored["resolution"]["votes"][0]["by"], "telegram:7",
        "{stored}"
    );
}

/// "Always" by one approver never stands in for a quorum; "always" voted by a quorum makes a
/// rule that decides the next approval of that quorum's size at once.
#[tokio::test]
async fn only_a_rule_a_quorum_made_decides_an_approval_with_a_quorum() {
    use askbridge::store::memory::MemoryStore;
    use askbridge::{Bridge, BridgeOptions};
    use askbridge_core::{Action, Inbox, NewQuestion, Status};
    use std::sync::Arc;

    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            approvers: vec!["chat:7".into(), "chat:8".into()],
            ..BridgeOptions::default()
        })
        .channel(crate::support::FakeChannel::new("chat"))
        .start()
        .await
        .unwrap();
    let action = || Action::new("shell", json!({"command": "make deploy"}));
    let approval = |quorum: bool| {
        let request = NewQuestion::ask("Deploy?")
            .session("rules")
            .targets(["chat:1"])
            .approve(action());
        if quorum {
            request.quorum(2, ["chat:7", "chat:8"])
        } else {
            request.answerers(["chat:7"])
        }
    };
    let say = |who: &str, text: String| {
        let bridge = bridge.clone();
        let message = crate::support::message(who, "chat:1", &text);
        async move { bridge.handle(message).await.unwrap().text }
    };

    let single = bridge.create(approval(false)).await.unwrap();
    say("chat:7", format!("/answer {} always", single.id)).await;
    let rules = bridge.store().rules().await.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].quorum, 0, "made by one person");

    let first = bridge.create(approval(true)).await.unwrap();
    assert_eq!(
        first.status,
        Status::Pending,
        "one person's rule does not decide a quorum"
    );
    let reply = say("chat:7", format!("/answer {} always", first.id)).await;
    assert!(reply.contains("1 of 2 approved"), "{reply}");
    let reply = say("chat:8", format!("/answer {} always", first.id)).await;
    assert!(reply.contains("always"), "{reply}");
    let first = bridge.get(&first.id).await.unwrap();
    assert_eq!(first.status, Status::Answered);
    assert_eq!(first.resolution.as_ref().unwrap().votes.len(), 2);
    let made = crate::support::eventually_some(Duration::from_secs(5), "the quorum's rule", || {
        let bridge = bridge.clone();
        async move {
            let rules = bridge.store().rules().await.unwrap();
            rules.into_iter().find(|r| r.quorum == 2)
        }
    })
    .await;
    assert_eq!(made.question_id.as_ref(), Some(&first.id));

    let next = bridge.create(approval(true)).await.unwrap();
    assert_eq!(
        next.status,
        Status::Answered,
        "decided by the quorum's rule at once"
    );
    assert_eq!(next.resolution.unwrap().decider.rule(), Some(&made.id));
}
