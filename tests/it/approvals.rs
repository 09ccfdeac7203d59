//! Approvals: allow once, allow always (rules), reject with feedback; deny by default; the
//! digest binding; the audit trail.

use crate::support::{FakeChannel, Process, eventually, eventually_some, http, message, serve};
use askbridge::bridge::Attempt;
use askbridge::bridge::{Bridge, ProgramReply};
use askbridge::http::{AppState, app};
use askbridge::store::memory::MemoryStore;
use askbridge::{AskError, NoAnswer};
use askbridge::{BridgeOptions, Error};
use askbridge_core::audit::{AuditEvent, AuditFilter};
use askbridge_core::{
    Action, Actor, Answer, Approval, Inbound, Inbox, NewQuestion, Question, Status,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(10);

/// A started bridge whose configured approvers are the console, the API and `chat:7`, with a fake
/// `chat` channel, and its HTTP API on a real socket.
pub(crate) async fn setup() -> (Bridge, String) {
    setup_over(Arc::new(MemoryStore::default())).await
}

async fn setup_over(store: Arc<dyn askbridge::store::Store>) -> (Bridge, String) {
    let options = BridgeOptions {
        default_targets: vec!["chat:1".into()],
        approvers: vec!["console".into(), "api".into(), "chat:7".into()],
        ..BridgeOptions::default()
    };
    let bridge = Bridge::builder(store)
        .options(options)
        .channel(FakeChannel::new("chat"))
        .start()
        .await
        .unwrap();
    let base = serve(app(AppState::new(bridge.clone(), None))).await;
    (bridge, base)
}

fn rm_build() -> Action {
    Action::new("shell", json!({"command": "rm -rf build/", "cwd": "/repo"}))
}

fn approval(action: Action) -> NewQuestion {
    NewQuestion::ask("May the agent run this?").approve(action)
}

pub(crate) async fn pending_approval(bridge: &Bridge, session: &str) -> Question {
    eventually_some(WITHIN, "a pending approval", || {
        let bridge = bridge.clone();
        let session = session.to_owned();
        async move {
            let filter = askbridge::store::ListFilter {
                session_id: Some(session),
                ..Default::default()
            };
            bridge.list(&filter).await.unwrap().into_iter().next()
        }
    })
    .await
}

#[tokio::test]
async fn an_approval_shows_its_action_and_needs_approvers() {
    let (bridge, base) = setup().await;
    let q = bridge
        .create(approval(rm_build()).session("s").targets(["chat:1"]))
        .await
        .unwrap();
    assert_eq!(
        q.answerers,
        vec!["console".to_owned(), "api".to_owned(), "chat:7".to_owned()],
        "the configured approvers"
    );
    let text = askbridge_core::render::question_text(&q, 4096);
    assert!(
        text.contains("Action: shell\n  command: rm -rf build/\n  cwd: /repo"),
        "{text}"
    );
    assert!(
        text.contains(&format!("(digest {})", rm_build().short_digest())),
        "{text}"
    );
    // Without approvers anywhere, an approval is refused rather than shown to nobody who may answer.
    let (plain, _) = crate::support::memory_bridge().await;
    let refused = plain.create(approval(rm_build()).session("s")).await;
    assert!(
        matches!(
            refused,
            Err(Error::Model(askbridge_core::Error::Invalid {
                field: "answerers",
                ..
            }))
        ),
        "{refused:?}"
    );
    // Showing an approval in a group makes nobody there an approver.
    let stranger = bridge
        .handle(message(
            "chat:66",
            "chat:1",
            &format!("/answer {} once", q.id),
        ))
        .await
        .unwrap();
    assert_eq!(stranger.text, "You can't answer this question.");
    let body = json!({"session_id": "s", "kind": "approval", "prompt": "p"});
    let r = http()
        .post(format!("{base}/api/questions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(r.json::<Value>().await.unwrap()["field"], "action");
}

#[tokio::test]
async fn allow_once_always_and_reject_with_feedback_reach_the_function() {
    let (bridge, base) = setup().await;
    // Once, from the console (the typed command, bound to the digest as buttons are).
    let session = bridge.session("agent-1");
    let asking = tokio::spawn({
        let session = session.clone();
        async move { session.approve(approval(rm_build())).await }
    });
    let q = pending_approval(&bridge, "agent-1").await;
    let console = Inbound {
        via: "console".into(),
        chat: "console".into(),
        sender: "console".into(),
        sender_name: None,
        ..message("", "", "")
    };
    let digest = rm_build().short_digest();
    let reply = bridge
        .handle(Inbound {
            text: format!("/answer {} once #{digest}", q.id),
            ..console.clone()
        })
        .await
        .unwrap();
    assert_eq!(
        reply.text,
        "✓ Answered: allowed once, by console via console"
    );
    let once = asking.await.unwrap().unwrap();
    assert_eq!(
        once,
        Approval::Once {
            digest: rm_build().digest()
        }
    );
    assert!(once.covers(&rm_build()));
    assert!(
        !once.covers(&Action::new(
            "shell",
            json!({"command": "rm -rf /", "cwd": "/repo"})
        )),
        "approves that action only"
    );

    // Reject with feedback, over HTTP: the function gets the words.
    let asking = tokio::spawn({
        let session = bridge.session("agent-2");
        async move { session.approve(approval(rm_build())).await }
    });
    let q = pending_approval(&bridge, "agent-2").await;
    let r = http()
        .post(format!("{base}/api/questions/{}/reply", q.id))
        .json(&json!({"answer": "reject", "message": "use --dry-run first"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    match asking.await.unwrap() {
        Err(AskError::NoAnswer(NoAnswer::Declined { message })) => {
            assert_eq!(message.as_deref(), Some("use --dry-run first"))
        }
        other => panic!("expected a rejection, got {other:?}"),
    }

    // Always, from a chat: a rule for the session.
    let asking = tokio::spawn({
        let session = bridge.session("agent-3");
        async move { session.approve(approval(rm_build())).await }
    });
    let q = pending_approval(&bridge, "agent-3").await;
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} always", q.id),
        ))
        .await
        .unwrap();
    let always = asking.await.unwrap().unwrap();
    assert_eq!(
        always,
        Approval::Always {
            rule_id: format!("rule-{}", q.id).as_str().into(),
            digest: rm_build().digest()
        }
    );
    let rules = bridge.rules().await.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].describe(),
        format!(
            "rule-{}: shell {{\"command\":\"rm -rf build/\",\"cwd\":\"/repo\"}} in session agent-3",
            q.id
        )
    );
}

#[tokio::test]
async fn an_approval_times_out_as_a_timeout_not_a_rejection() {
    let (bridge, _) = setup().await;
    let session = bridge.session("agent-t");
    let result = session
        .approve(approval(rm_build()).timeout(Duration::from_millis(300)))
        .await;
    assert!(
        matches!(result, Err(AskError::NoAnswer(NoAnswer::Timeout { .. }))),
        "{result:?}"
    );
    let allowed = session
        .approve(
            approval(rm_build())
                .timeout(Duration::from_millis(300))
                .default_answer(Answer::Text("once".into())),
        )
        .await;
    assert!(
        matches!(allowed, Ok(Approval::Once { .. })),
        "a default can allow: {allowed:?}"
    );
}

#[tokio::test]
async fn a_rule_allows_later_and_pending_approvals_until_revoked() {
    let (bridge, base) = setup().await;
    a_rule_allows_later_and_pending_approvals(bridge, base).await;
}

/// The same on Redis: creating a rule lists every pending approval, which once asked Redis for
/// a count it does not take (the rule was stored, the effect failed and was retried for ever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_allows_later_and_pending_approvals_until_revoked_on_redis() {
    let fixture = crate::support::redis_store().await;
    let (bridge, base) = setup_over(fixture.store.clone()).await;
    a_rule_allows_later_and_pending_approvals(bridge, base).await;
}

async fn a_rule_allows_later_and_pending_approvals(bridge: Bridge, base: String) {
    let first = bridge
        .create(approval(rm_build()).session("agent-r").targets(["chat:1"]))
        .await
        .unwrap();
    let pending = bridge
        .create(approval(rm_build()).session("agent-r").targets(["chat:1"]))
        .await
        .unwrap();
    let other_session = bridge
        .create(approval(rm_build()).session("agent-x").targets(["chat:1"]))
        .await
        .unwrap();
    let other_action = bridge
        .create(
            approval(Action::new(
                "shell",
                json!({"command": "rm -rf /", "cwd": "/repo"}),
            ))
            .session("agent-r")
            .targets(["chat:1"]),
        )
        .await
        .unwrap();
    let r = http()
        .post(format!("{base}/api/questions/{}/reply", first.id))
        .json(&json!({"answer": "always"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // The pending approval of the same action in the same session is allowed at once, by the rule.
    let allowed = bridge.get(&pending.id).await.unwrap();
    assert_eq!(allowed.status, Status::Answered);
    let resolution = allowed.resolution.clone().unwrap();
    assert_eq!(
        (resolution.by().as_str(), resolution.via().as_str()),
        (format!("rule:rule-{}", first.id).as_str(), "rule")
    );
    assert_eq!(
        askbridge_core::render::outcome_line(&allowed),
        format!("Allowed by rule rule-{}", first.id)
    );
    assert!(
        bridge.get(&other_session.id).await.unwrap().is_pending(),
        "the rule is for its session only"
    );
    assert!(
        bridge.get(&other_action.id).await.unwrap().is_pending(),
        "and for its action only"
    );
    // A later approval is allowed without being asked.
    let session = bridge.session("agent-r");
    let later = session.approve(approval(rm_build())).await.unwrap();
    assert_eq!(
        later,
        Approval::ByRule {
            rule_id: format!("rule-{}", first.id).as_str().into(),
            digest: rm_build().digest()
        }
    );
    // "Always everywhere" covers other sessions too, including the pending one.
    let r = http()
        .post(format!("{base}/api/questions/{}/reply", other_action.id))
        .json(&json!({"answer": "always everywhere"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let elsewhere = bridge
        .session("agent-z")
        .approve(approval(Action::new(
            "shell",
            json!({"command": "rm -rf /", "cwd": "/repo"}),
        )))
        .await
        .unwrap();
    assert!(matches!(elsewhere, Approval::ByRule { .. }));
    // Rules are listed and revoked over HTTP and from a chat.
    let listed: Value = http()
        .get(format!("{base}/api/rules"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<String> = listed["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2);
    let r = http()
        .delete(format!("{base}/api/rules/{}", ids[0]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(
        http()
            .delete(format!("{base}/api/rules/{}", ids[0]))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    let refused = bridge
        .handle(message("chat:66", "chat:1", "/rules"))
        .await
        .unwrap();
    assert!(
        refused.text.starts_with("Only approvers"),
        "{}",
        refused.text
    );
    let list = bridge
        .handle(message("chat:7", "chat:1", "/rules"))
        .await
        .unwrap();
    assert!(
        list.text.contains(&ids[1]) && !list.text.contains(&ids[0]),
        "{}",
        list.text
    );
    let revoked = bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/rules revoke {}", ids[1]),
        ))
        .await
        .unwrap();
    assert_eq!(revoked.text, format!("✓ Rule {} revoked.", ids[1]));
    // With the rules gone, the same approval is asked again.
    let asked = bridge
        .create(approval(rm_build()).session("agent-r").targets(["chat:1"]))
        .await
        .unwrap();
    assert!(asked.is_pending());
}

#[tokio::test]
async fn a_reply_bound_to_another_action_is_refused() {
    let (bridge, base) = setup().await;
    let q = bridge
        .create(approval(rm_build()).session("s").targets(["chat:1"]))
        .await
        .unwrap();
    let stale = Action::new(
        "shell",
        json!({"command": "rm -rf build/ dist/", "cwd": "/repo"}),
    );
    let r = http()
        .post(format!("{base}/api/questions/{}/reply", q.id))
        .json(&json!({"answer": "once", "digest": stale.digest()}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("This reply is for another action"),
        "{body}"
    );
    let typed = bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} once #{}", q.id, stale.short_digest()),
        ))
        .await
        .unwrap();
    assert!(
        typed.text.starts_with("This reply is for another action"),
        "{}",
        typed.text
    );
    assert!(
        bridge.get(&q.id).await.unwrap().is_pending(),
        "nothing was approved"
    );
    let right = ProgramReply {
        answer: Answer::Text("once".into()),
        message: None,
        digest: Some(rm_build().digest()),
        args: None,
    };
    bridge
        .attempt(Attempt::reply(
            &q.id,
            right,
            Actor::new("api", "api"),
            &"api".into(),
        ))
        .await
        .unwrap();
}

#[tokio::test]
async fn every_decision_and_every_refusal_is_in_the_audit_trail() {
    let (bridge, base) = setup().await;
    let q = bridge
        .create(approval(rm_build()).session("audited").targets(["chat:1"]))
        .await
        .unwrap();
    bridge
        .handle(message(
            "chat:66",
            "chat:1",
            &format!("/answer {} once", q.id),
        ))
        .await
        .unwrap();
    bridge
        .handle(message("chat:7", "chat:1", "/answer zzzzzzzzzz once"))
        .await
        .unwrap();
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} always", q.id),
        ))
        .await
        .unwrap();
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} once", q.id),
        ))
        .await
        .unwrap();
    let by_rule = bridge
        .create(approval(rm_build()).session("audited").targets(["chat:1"]))
        .await
        .unwrap();
    assert!(!by_rule.is_pending());
    let expiring = bridge
        .create(
            NewQuestion::ask("Soon?")
                .session("audited")
                .targets(["chat:1"])
                .timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap();
    eventually(WITHIN, "the audit trail complete", || {
        let bridge = bridge.clone();
        async move { bridge.audit(&AuditFilter::default()).await.unwrap().len() >= 7 }
    })
    .await;
    let entries: Value = http()
        .get(format!("{base}/api/audit?session_id=audited"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entries = entries["entries"].as_array().unwrap().clone();
    let find = |event: &str, by: &str| {
        entries
            .iter()
            .find(|e| e["event"] == event && e["by"] == by)
            .cloned()
    };
    let stranger = find("refused", "chat:66")
        .unwrap_or_else(|| panic!("the stranger's attempt in {entries:#?}"));
    assert_eq!(stranger["message"], "You can't answer this question.");
    assert_eq!(stranger["question_id"], q.id.as_str());
    let resolved = find("resolved", "chat:7").expect("the approval");
    assert_eq!(
        (resolved["value"].as_str(), resolved["via"].as_str()),
        (Some("always"), Some("chat"))
    );
    assert_eq!(resolved["digest"], rm_build().digest());
    assert!(find("rule_created", "chat:7").is_some());
    let late = entries
        .iter()
        .find(|e| e["event"] == "refused" && e["by"] == "chat:7")
        .expect("the late reply");
    assert!(
        late["message"]
            .as_str()
            .unwrap()
            .starts_with("Already answered"),
        "{late}"
    );
    let ruled =
        find("resolved", &format!("rule:rule-{}", q.id)).expect("the approval allowed by rule");
    assert_eq!(ruled["rule_id"], format!("rule-{}", q.id));
    let expired = entries
        .iter()
        .find(|e| e["question_id"] == expiring.id.as_str())
        .unwrap_or_else(|| panic!("the expiry in {entries:#?}"));
    assert_eq!(
        (expired["status"].as_str(), expired["by"].as_str()),
        (Some("expired"), Some("askbridge"))
    );
    // An unknown id has no session, so it is found without the session filter.
    let all = bridge.audit(&AuditFilter::default()).await.unwrap();
    let unknown = all
        .iter()
        .find(|e| e.question_id.as_deref() == Some("zzzzzzzzzz"))
        .expect("the unknown id");
    assert_eq!(unknown.event, AuditEvent::Refused);
    let since = all.last().unwrap().at.to_rfc3339();
    let recent: Value = http()
        .get(format!("{base}/api/audit?since={since}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(!recent["entries"].as_array().unwrap().is_empty());
    let bad = http()
        .get(format!("{base}/api/audit?since=yesterday"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn askbridge_audit_prints_the_trail_of_a_running_askbridge() {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![
        ("ASKBRIDGE_DATA_DIR", dir.path().display().to_string()),
        ("ASKBRIDGE_APPROVERS", "api".to_owned()),
    ];
    let process = Process::spawn(&["serve"], &env);
    let body = json!({"session_id": "cli", "kind": "approval", "prompt": "Run it?", "action": {"tool": "shell", "args": {"command": "make"}}});
    let q: Value = http()
        .post(format!("{}/api/questions", process.base))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(q["answerers"], json!(["api"]));
    let id = q["id"].as_str().unwrap();
    http()
        .post(format!("{}/api/questions/{id}/reply", process.base))
        .json(&json!({"answer": "once"}))
        .send()
        .await
        .unwrap();
    let output = eventually_some(WITHIN, "the audit record", || {
        let base = process.base.clone();
        async move {
            let output = tokio::process::Command::new(crate::support::askbridge_binary())
                .args(["audit", "--session", "cli", "--since", "1h", "--url", &base])
                .env_clear()
                .output()
                .await
                .unwrap();
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            (output.status.success() && text.contains("resolved")).then_some(text)
        }
    })
    .await;
    assert!(
        output.contains(id) && output.contains("by api via api answered once"),
        "{output}"
    );
}

#[tokio::test]
async fn rules_and_answerers_never_reach_beyond_the_configured_approvers() {
    let (bridge, _) = setup().await;
    // A caller cannot name an approver of its own choosing (say, itself) once approvers are set.
    let own = bridge
        .create(approval(rm_build()).session("s").answerers(["chat:99"]))
        .await;
    assert!(
        matches!(
            own,
            Err(Error::Model(askbridge_core::Error::Invalid {
                field: "answerers",
                ..
            }))
        ),
        "{own:?}"
    );
    let mixed = bridge
        .create(
            approval(rm_build())
                .session("s")
                .answerers(["chat:99", "chat:7"]),
        )
        .await
        .unwrap();
    assert_eq!(mixed.answerers, vec!["chat:7".to_owned()]);
    // chat:7 allows the action always, everywhere...
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} always everywhere", mixed.id),
        ))
        .await
        .unwrap();
    // ...which decides chat:7's approvals, but not an approval only the console may answer.
    let consoles = bridge
        .create(approval(rm_build()).session("other").answerers(["console"]))
        .await
        .unwrap();
    assert!(
        consoles.is_pending(),
        "one approver's rule does not decide for another"
    );
    let sevens = bridge
        .create(approval(rm_build()).session("other").answerers(["chat:7"]))
        .await
        .unwrap();
    assert_eq!(sevens.resolution.unwrap().via(), "rule");
}
