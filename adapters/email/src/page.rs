//! The confirmation page a one-click link opens (see `links.rs`).
//!
//! `GET /email/answer?…` shows the question, the choice the link stands for and the question's
//! state; it never changes anything, since scanners fetch links. Its form POSTs to the same URL
//! with the CSRF token; the POST checks the link, the token and the `Origin` a browser sends, then
//! takes the one reply path every surface takes, as `/answer <id> <choice>` from the recipient
//! (`email:<address>`). Every page is plain HTML with every value escaped, no script, a
//! Content-Security-Policy that allows nothing but posting to itself, and a referrer only to
//! itself (the link in the address bar is a credential; `no-referrer` would make the browser
//! send `Origin: null` with the form, which the origin check cannot tell from a sandboxed page).

use crate::compose::{escape, linked_commands};
use crate::links::{Link, OneClick, PAGE_PATH, Refused};
use crate::{SURFACE, canonical, chat_for};
use askbridge_core::render::{self, already_resolved_line};
use askbridge_core::{Identity, Inbound, Inbox, Millis, Question, QuestionId, Tone};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Router, extract::rejection::QueryRejection};
use std::sync::Arc;

/// Characters of a question's text shown on the page.
const BODY_CHARS: usize = 4_000;

#[derive(Clone)]
struct Page {
    links: OneClick,
    inbox: Arc<dyn Inbox>,
}

/// The page's form.
#[derive(serde::Deserialize)]
struct Confirm {
    csrf: String,
}

/// `GET` and `POST /email/answer`, answering through `inbox`.
pub(crate) fn routes(links: OneClick, inbox: Arc<dyn Inbox>) -> Router {
    Router::new()
        .route(PAGE_PATH, get(show).post(confirm))
        .with_state(Page { links, inbox })
}

/// What a link stands for, once checked: the question as it is now and the chosen command.
struct Chosen {
    link: Link,
    question: Question,
    label: String,
    command: String,
}

impl Page {
    /// Checks the link and reads its question and choice; a page saying why not otherwise.
    async fn read(&self, link: Result<Query<Link>, QueryRejection>) -> Result<Chosen, Response> {
        let Ok(Query(link)) = link else {
            return Err(refusal(
                StatusCode::BAD_REQUEST,
                "This link is not complete: open the whole link from the mail.",
            ));
        };
        match self.links.verify(&link, Millis::now()) {
            Ok(()) => {}
            Err(refused @ Refused::Expired) => {
                return Err(refusal(StatusCode::GONE, &sentence(&refused.to_string())));
            }
            Err(refused) => {
                tracing::warn!(question_id = %link.q, "one-click link refused: bad signature");
                return Err(refusal(
                    StatusCode::FORBIDDEN,
                    &sentence(&refused.to_string()),
                ));
            }
        }
        let question = match QuestionId::parse(&link.q) {
            Ok(id) => self.inbox.current(&id).await,
            Err(_) => None,
        };
        let Some(question) = question else {
            return Err(refusal(
                StatusCode::NOT_FOUND,
                "This question no longer exists.",
            ));
        };
        let Some((label, command)) = linked_commands(&question).into_iter().nth(link.c) else {
            return Err(refusal(
                StatusCode::NOT_FOUND,
                "This choice does not exist.",
            ));
        };
        Ok(Chosen {
            link,
            question,
            label,
            command,
        })
    }
}

async fn show(State(page): State<Page>, link: Result<Query<Link>, QueryRejection>) -> Response {
    let chosen = match page.read(link).await {
        Ok(chosen) => chosen,
        Err(response) => return response,
    };
    let question = &chosen.question;
    let body = if question.is_pending() {
        format!(
            "<p>Your answer: <b>{}</b></p>\n<form method=\"post\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <button type=\"submit\">Confirm: {}</button></form>\n\
             <p class=\"note\">Nothing is answered until you confirm.</p>",
            escape(&chosen.label),
            escape(&page.links.csrf(&chosen.link)),
            escape(&chosen.label),
        )
    } else {
        format!("<p><b>{}</b></p>", escape(&already_resolved_line(question)))
    };
    html(StatusCode::OK, &question_html(question, &body))
}

async fn confirm(
    State(page): State<Page>,
    headers: HeaderMap,
    link: Result<Query<Link>, QueryRejection>,
    form: Bytes,
) -> Response {
    let chosen = match page.read(link).await {
        Ok(chosen) => chosen,
        Err(response) => return response,
    };
    let origin = headers.get(header::ORIGIN).map(HeaderValue::as_bytes);
    if origin.is_some_and(|origin| !origin.eq_ignore_ascii_case(page.links.origin().as_bytes())) {
        tracing::warn!(question_id = %chosen.question.id, "one-click answer refused: posted from another site");
        return refusal(
            StatusCode::FORBIDDEN,
            "This answer was sent from another site, so it was not taken.",
        );
    }
    let token = serde_urlencoded::from_bytes::<Confirm>(&form)
        .map(|form| form.csrf)
        .unwrap_or_default();
    if !page.links.csrf_ok(&chosen.link, &token) {
        tracing::warn!(question_id = %chosen.question.id, "one-click answer refused: missing or wrong CSRF token");
        return refusal(
            StatusCode::FORBIDDEN,
            "This answer did not come from the confirmation page. Open the link from the mail again.",
        );
    }
    let recipient = canonical(&chosen.link.to).unwrap_or_else(|| chosen.link.to.clone());
    let inbound = Inbound {
        via: SURFACE.into(),
        chat: chat_for(Some(&chosen.question), &recipient),
        sender: Identity::new(format!("{SURFACE}:{recipient}")),
        sender_name: None,
        text: chosen.command.clone(),
        private: true,
        delivery_id: None,
        in_reply_to: None,
    };
    let reply = page.inbox.handle(inbound).await;
    let question = reply
        .as_ref()
        .and_then(|reply| reply.question.clone())
        .unwrap_or(chosen.question);
    let (status, line) = match &reply {
        Some(reply) if reply.tone == Tone::Refused => (StatusCode::CONFLICT, reply.text.clone()),
        Some(reply) => (StatusCode::OK, reply.text.clone()),
        None => (StatusCode::OK, render::outcome_line(&question)),
    };
    tracing::info!(question_id = %question.id, %recipient, status = %status.as_u16(), "one-click answer");
    html(
        status,
        &question_html(&question, &format!("<p><b>{}</b></p>", escape(&line))),
    )
}

/// A page about `question`: its text, then `body` (already HTML).
fn question_html(question: &Question, body: &str) -> String {
    format!(
        "<h1>❓ {}</h1>\n<pre>{}</pre>\n{body}",
        escape(&question.prompt),
        escape(&render::question_body(question, BODY_CHARS)),
    )
}

fn refusal(status: StatusCode, text: &str) -> Response {
    html(
        status,
        &format!("<h1>askbridge</h1>\n<p>{}</p>", escape(text)),
    )
}

fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

/// A whole page with the headers every page here sends.
fn html(status: StatusCode, body: &str) -> Response {
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <meta name=\"robots\" content=\"noindex\"><title>askbridge</title>\
         <style>body{{font-family:sans-serif;max-width:40em;margin:2em auto;padding:0 1em;\
         line-height:1.4}}pre{{white-space:pre-wrap}}.note{{color:#555}}\
         button{{font-size:1.1em;padding:.4em 1em}}</style></head>\n<body>\n{body}\n</body></html>\n"
    );
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    (status, headers, page).into_response()
}
