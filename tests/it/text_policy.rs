//! The one text policy (issue 35, defects 1, 2, 3 and 10): every string a person will read is
//! refused over HTTP when it holds control or direction characters or shows nothing; form
//! schemas and form answers are held to it, with bounds; values kept as given (an approval's
//! arguments) are shown escaped; ids no surface can produce are refused; a history page is
//! bounded in bytes.

use crate::support::{get_json, http, memory_bridge, post_json, serve, serve_api};
use askbridge_core::Question;
use serde_json::{Value, json};

async fn server() -> String {
    let (bridge, _) = memory_bridge().await;
    serve_api(bridge).await
}

/// Posts `body` as a question; returns the status and the JSON body.
async fn ask(base: &str, body: Value) -> (u16, Value) {
    let response = post_json(base, "/api/questions", body).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The characters the next campaign will try: one of each class the policy names.
const TRICKS: [&str; 9] = [
    "\u{1b}]0;pwned\u{7}",
    "a\rb",
    "\u{202E}wolla",
    "x\u{2067}y",
    "a\u{0}b",
    "\u{3164}",
    "\u{2800}\u{2800}",
    "\u{AD}\u{E0041}",
    "\u{200B} \u{FEFF}",
];

#[tokio::test]
async fn every_string_a_person_reads_is_refused_when_it_misleads() {
    let base = server().await;
    let approval = |tool: &str| {
        json!({"session_id": "s", "kind": "approval", "prompt": "Run it?", "answerers": ["api"],
               "action": {"tool": tool, "args": {"command": "ls"}}})
    };
    for trick in TRICKS {
        for (body, field) in [
            (json!({"session_id": "s", "prompt": trick}), "prompt"),
            (
                json!({"session_id": "s", "prompt": "Ship?", "options": ["yes", trick]}),
                "options",
            ),
            (
                json!({"session_id": "s", "prompt": "Ship?", "detail": format!("{trick} x")}),
                "detail",
            ),
            (approval(trick), "action"),
            (approval(&format!("shell{trick}")), "action"),
        ] {
            let blank_inside = field == "detail" || field == "action";
            if blank_inside && !trick.chars().any(|c| c.is_control() || is_bidi(c)) {
                continue; // invisible characters inside visible text are shown, not refused
            }
            let (status, error) = ask(&base, body.clone()).await;
            assert_eq!(status, 422, "{body}: {error}");
            assert_eq!(error["field"], field, "{body}: {error}");
        }
    }
    let (status, error) = ask(
        &base,
        json!({"session_id": "s", "prompt": "Ship?", "options": ["a\u{2028}b", "c"]}),
    )
    .await;
    assert_eq!(
        (status, &error["field"]),
        (422, &json!("options")),
        "{error}"
    );
}

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[tokio::test]
async fn a_reply_may_not_garble_the_outcome() {
    let base = server().await;
    let (_, question) = ask(&base, json!({"session_id": "s", "prompt": "Ship?"})).await;
    let id = question["id"].as_str().unwrap();
    for trick in ["\u{202E}ecila", "ops\u{1b}[2J", "\u{3164}", "a\u{2028}b"] {
        let reply = json!({"answer": "yes", "by": trick});
        let response = post_json(&base, &format!("/api/questions/{id}/reply"), reply).await;
        assert_eq!(response.status(), 422, "{trick:?}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["field"], "by", "{error}");
    }
    let approval = json!({"session_id": "s", "kind": "approval", "prompt": "Run it?",
                          "answerers": ["api"], "action": {"tool": "shell", "args": {}}});
    let (_, question) = ask(&base, approval).await;
    let id = question["id"].as_str().unwrap();
    for (path, body) in [
        (
            "reply",
            json!({"answer": "reject", "message": "no\u{202E}kcab"}),
        ),
        ("reject", json!({"message": "\u{1b}[2Jno"})),
        ("cancel", json!({"reason": "\u{3164}"})),
    ] {
        let response = post_json(&base, &format!("/api/questions/{id}/{path}"), body).await;
        assert_eq!(response.status(), 422, "{path}");
    }
}

#[tokio::test]
async fn an_actions_arguments_are_kept_but_shown_escaped() {
    let base = server().await;
    let command = "ls build/ \u{202E}~ fr- mr && echo \u{1b}[2J";
    let body = json!({"session_id": "s", "kind": "approval", "prompt": "Run it?", "answerers": ["api"],
                      "action": {"tool": "shell", "args": {"command": command, "n\u{200B}": 1}}});
    let (status, created) = ask(&base, body).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        created["action"]["args"]["command"], command,
        "kept as given"
    );
    let question: Question = serde_json::from_value(created).unwrap();
    let shown = askbridge_core::render::question_text(&question, 4000);
    assert!(
        shown.contains("ls build/ \\u{202e}~ fr- mr && echo \\u{1b}[2J"),
        "{shown}"
    );
    assert!(shown.contains("n\\u{200b}: 1"), "{shown}");
    assert!(
        !shown.contains('\u{202E}') && !shown.contains('\u{1b}') && !shown.contains('\u{200B}'),
        "{shown}"
    );
}

fn form_with(name: &str, field: Value) -> Value {
    json!({"session_id": "s", "kind": "form", "prompt": "Fill in",
           "form": {"type": "object", "properties": {name: field}}})
}

#[tokio::test]
async fn form_schemas_nobody_can_fill_or_read_are_refused_naming_the_field() {
    let base = server().await;
    let huge = "x".repeat(1_900_000);
    for (field, why) in [
        (
            json!({"type": "string", "title": "Ti\u{1b}[2Jtle"}),
            "title",
        ),
        (json!({"type": "string", "title": "\u{3164}"}), "title"),
        (json!({"type": "string", "title": huge}), "title"),
        (
            json!({"type": "string", "description": "a\u{202E}b"}),
            "description",
        ),
        (
            json!({"type": "string", "description": huge}),
            "description",
        ),
        (
            json!({"type": "string", "enum": ["a", "b\u{2028}c"]}),
            "enum",
        ),
        (json!({"type": "string", "enum": ["a", "\u{2800}"]}), "enum"),
        (
            json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "\u{202E}B"]}),
            "enumNames",
        ),
        (
            json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A", huge]}),
            "enumNames",
        ),
        (
            json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}),
            "enumNames",
        ),
        (json!({"type": "string", "enum": ["a", "a"]}), "twice"),
        (
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "a"]}}),
            "twice",
        ),
        (
            json!({"type": "integer", "minimum": 5, "maximum": 1}),
            "minimum",
        ),
        (
            json!({"type": "string", "minLength": 5, "maxLength": 1}),
            "minLength",
        ),
        (
            json!({"type": "string", "maxLength": 10_000_000}),
            "maxLength",
        ),
        (
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 3}),
            "minItems",
        ),
        (
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 2, "maxItems": 1}),
            "minItems",
        ),
        (json!({"type": "string", "format": "ipv4"}), "format"),
        (json!({"type": "integer", "format": "email"}), "format"),
    ] {
        let (status, error) = ask(&base, form_with("host", field.clone())).await;
        assert_eq!(status, 422, "{field}: {error}");
        assert_eq!(error["field"], "form", "{field}: {error}");
        let text = error["error"].as_str().unwrap();
        assert!(
            text.contains("host") && text.contains(why),
            "{field}: {text}"
        );
        assert!(
            text.len() < 1000,
            "the refusal does not repeat what it refuses"
        );
    }
    let fine = json!({"type": "string", "title": "Host", "format": "email", "maxLength": 200});
    assert_eq!(ask(&base, form_with("host", fine)).await.0, 201);
}

#[tokio::test]
async fn form_answers_are_held_to_the_free_text_rules_and_a_bound() {
    let base = server().await;
    let field = json!({"type": "string", "title": "Note"});
    let (status, created) = ask(&base, form_with("note", field)).await;
    assert_eq!(status, 201, "{created}");
    let reply = format!("/api/questions/{}/reply", created["id"].as_str().unwrap());
    let bound = askbridge_core::form::DEFAULT_MAX_LENGTH;
    for answer in [
        "\u{1b}]0;pwned\u{7}".to_owned(),
        "safe\rEVIL".to_owned(),
        "x\u{0}".to_owned(),
        "\u{202E}wolla".to_owned(),
        "\u{3164}".to_owned(),
        "y".repeat(bound + 1),
        "y".repeat(1_990_000),
    ] {
        let response = post_json(&base, &reply, json!({"answer": {"note": answer}})).await;
        assert_eq!(response.status(), 422, "{:?}", answer.get(..20));
        let error: Value = response.json().await.unwrap();
        assert!(error["error"].as_str().unwrap().contains("Note"), "{error}");
    }
    let ok = json!({"answer": {"note": format!("line one\nline two {}", "z".repeat(bound - 40))}});
    assert_eq!(post_json(&base, &reply, ok).await.status(), 200);
}

#[tokio::test]
async fn ids_no_surface_can_produce_are_refused() {
    let base = server().await;
    for (body, field) in [
        (
            json!({"session_id": "s", "prompt": "Ship?", "answerers": ["telegram:042"]}),
            "answerers",
        ),
        (
            json!({"session_id": "s", "prompt": "Ship?", "answerers": ["telegram:+42"]}),
            "answerers",
        ),
        (
            json!({"session_id": "s", "prompt": "Ship?", "answerers": ["discord:abc"]}),
            "answerers",
        ),
        (
            json!({"session_id": "s", "prompt": "Ship?", "answerers": ["telegram:-0"]}),
            "answerers",
        ),
        (
            json!({"session_id": "s", "prompt": "Ship?", "quorum": {"needs": 2, "of": ["telegram:42", "telegram:042"]}}),
            "quorum",
        ),
    ] {
        let (status, error) = ask(&base, body.clone()).await;
        assert_eq!(status, 422, "{body}: {error}");
        assert_eq!(error["field"], field, "{body}: {error}");
        assert!(
            error["error"].as_str().unwrap().contains("telegram:42") || field == "answerers",
            "{error}"
        );
    }
    let fine = json!({"session_id": "s", "prompt": "Ship?", "quorum": {"needs": 2, "of": ["telegram:42", "discord:7", "slack:U042"]}});
    assert_eq!(ask(&base, fine).await.0, 201);
}

#[tokio::test]
async fn the_documented_prompt_limit_is_the_enforced_one() {
    let base = server().await;
    let limit = askbridge_core::question::MAX_PROMPT_CHARS;
    let (status, _) = ask(
        &base,
        json!({"session_id": "s", "prompt": "p".repeat(limit)}),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _) = ask(
        &base,
        json!({"session_id": "s", "prompt": "p".repeat(limit + 1)}),
    )
    .await;
    assert_eq!(status, 422);
    let openapi = get_json(&base, "/api/openapi.json").await;
    let prompt = &openapi["components"]["schemas"]["NewQuestion"]["properties"]["prompt"];
    assert_eq!(prompt["maxLength"], limit, "{prompt}");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let limit_text = format!("{},{:03}", limit / 1000, limit % 1000);
    assert!(
        readme.contains(&format!("Prompts {limit_text} characters")),
        "the README states the prompt limit"
    );
}

#[tokio::test]
async fn a_history_page_is_bounded_in_bytes() {
    let base = server().await;
    let bound = askbridge::store::MAX_PAGE_BYTES;
    let fields: serde_json::Map<String, Value> = (0..20)
        .map(|i| {
            (
                format!("f{i}"),
                json!({"type": "string", "maxLength": 4000}),
            )
        })
        .collect();
    let body = json!({"session_id": "s", "kind": "form", "prompt": "Fill in",
                      "form": {"type": "object", "properties": fields}});
    let answer: serde_json::Map<String, Value> = (0..20)
        .map(|i| (format!("f{i}"), json!("日".repeat(4000))))
        .collect();
    let per_question = serde_json::to_vec(&answer).unwrap().len();
    let count = bound / per_question + 3;
    for _ in 0..count {
        let (_, q) = ask(&base, body.clone()).await;
        let reply = format!("/api/questions/{}/reply", q["id"].as_str().unwrap());
        let response = post_json(&base, &reply, json!({"answer": answer})).await;
        assert_eq!(response.status(), 200);
    }
    let mut seen = 0;
    let mut after = String::new();
    loop {
        let url = format!("{base}/api/history?limit=500{after}");
        let bytes = http().get(url).send().await.unwrap().bytes().await.unwrap();
        assert!(
            bytes.len() <= bound + per_question * 2,
            "{} bytes",
            bytes.len()
        );
        let page: Value = serde_json::from_slice(&bytes).unwrap();
        let n = page["questions"].as_array().unwrap().len();
        assert!(n >= 1);
        seen += n;
        match page["next"].as_str() {
            Some(next) => after = format!("&after={next}"),
            None => break,
        }
    }
    assert_eq!(seen, count, "every question is on some page");
}

/// `askbridge <args>` against `base`; its exit code, stdout and stderr.
async fn cli(base: &str, args: &[&str]) -> (i32, String, String) {
    let output = tokio::process::Command::new(crate::support::askbridge_binary())
        .args(args)
        .env_clear()
        .env("ASKBRIDGE_URL", base)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(15), output)
        .await
        .expect("the command ended")
        .unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let code = output.status.code().unwrap_or(-1);
    (code, text(&output.stdout), text(&output.stderr))
}

/// No byte that a terminal would act on: ESC, BEL, CR, a direction control.
fn inert(text: &str) -> bool {
    !text.contains(['\u{1b}', '\u{7}', '\r', '\u{202E}'])
}

#[tokio::test]
async fn the_cli_escapes_what_the_server_says() {
    let (bridge, _) = memory_bridge().await;
    let mut entry = askbridge_core::audit::AuditEntry::of_resolution(
        "k3f9x2m8qa".into(),
        "s".into(),
        askbridge_core::Kind::Ask,
        askbridge_core::Status::Declined,
        None,
        None,
    );
    entry.message = Some("\u{1b}]0;pwned\u{7}\u{1b}[2J gone\r\u{202E}evil".into());
    entry.via = "api\u{1b}[31m".into();
    bridge.store().append_audit(&entry).await.unwrap();
    let base = serve_api(bridge).await;
    let (code, out, err) = cli(&base, &["audit"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(inert(&out), "{out:?}");
    assert!(
        out.contains("\\u{1b}]0;pwned\\u{7}\\u{1b}[2J gone\\u{d}\\u{202e}evil"),
        "{out:?}"
    );

    // A server that repeats what it refused, as given.
    let echo = axum::Router::new().route(
        "/api/questions",
        axum::routing::post(|| async {
            let body =
                json!({"error": "invalid targets: `\u{1b}]0;x\u{7}\u{1b}[2J` is not a target"});
            (
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                axum::Json(body),
            )
        }),
    );
    let base = serve(echo).await;
    let (code, out, err) = cli(&base, &["ask", "Ship?"]).await;
    assert_ne!(code, 0);
    assert!(inert(&out) && inert(&err), "{out:?} {err:?}");
    assert!(err.contains("\\u{1b}]0;x\\u{7}\\u{1b}[2J"), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ops_page_shows_an_actions_arguments_escaped() {
    use crate::web::{in_process, js, open, pending_card};
    let server = in_process().await;
    let command = "ls build/ \u{202E}~ fr- mr && echo \u{1b}[2J";
    let id = server
        .api
        .ask(
            json!({"kind": "approval", "prompt": "Run it?", "answerers": ["api"],
                    "timeout_s": 600, "action": {"tool": "shell",
                    "args": {"command": command, "n\u{200B}": "\u{3164}"}}}),
        )
        .await;
    let browser = crate::cdp::Browser::launch().await;
    let page = open(&browser, &server.api.base).await;
    page.wait_for("the approval's card", &pending_card(&id))
        .await;
    let card = js(&format!("q-{id}"));
    let shown = page
        .eval(&format!(
            "document.getElementById({card}).querySelector('.action-args').textContent"
        ))
        .await;
    let shown = shown.as_str().unwrap();
    assert!(
        shown.contains(r"ls build/ \u{202e}~ fr- mr && echo \u001b[2J"),
        "{shown}"
    );
    assert!(
        shown.contains(r"n\u{200b}") && shown.contains(r"\u{3164}"),
        "{shown}"
    );
    assert!(
        !shown.contains(['\u{202E}', '\u{200B}', '\u{3164}', '\u{1b}']),
        "{shown}"
    );
}
