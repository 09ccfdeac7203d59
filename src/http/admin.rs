//! The other routes: rules, the audit trail, health and metrics (runs are in `runs.rs`).

use super::{ApiError, AppState};
use crate::metrics::Scrape;
use crate::store::{Cursor, MAX_PAGE_BYTES, Page, json_size, rule_place};
use askbridge_core::audit::{AuditCursor, AuditFilter};
use askbridge_core::{Actor, Millis, RuleId};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RulesQuery {
    /// A page of at most this many, newest first, with `next`; every rule without it.
    limit: Option<usize>,
    /// The `next` of the previous page.
    after: Option<String>,
}

pub(super) async fn list_rules(
    State(state): State<AppState>,
    Query(query): Query<RulesQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let after = super::error::cursor_param("after", query.after.as_deref(), Cursor::parse)?;
    let Some(limit) = query.limit.or(after.as_ref().map(|_| 50)) else {
        return Ok(Json(json!({ "rules": state.bridge.rules().await? })));
    };
    let page = state
        .bridge
        .store()
        .rules_page(after.as_ref(), limit.clamp(1, 500))
        .await?
        .within_bytes(MAX_PAGE_BYTES, json_size, rule_place);
    let next = page.next.as_ref().map(Cursor::to_string);
    Ok(Json(json!({ "rules": page.items, "next": next })))
}

pub(super) async fn revoke_rule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .bridge
        .revoke_rule(&RuleId::new(id), &Actor::api())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
pub(super) struct AuditQuery {
    session_id: Option<String>,
    since: Option<String>,
    limit: Option<usize>,
    /// Only this person's records.
    by: Option<String>,
    /// Only this outcome: a status, `refused`, `rule`, `nudged` or `voted`.
    outcome: Option<String>,
    /// `newest` for newest first, paged with `before`.
    order: Option<String>,
    /// The `next` of the previous newest-first page.
    before: Option<String>,
}

/// The outcomes `GET /api/audit?outcome=` takes.
const OUTCOMES: [&str; 8] = [
    "answered",
    "declined",
    "expired",
    "cancelled",
    "refused",
    "rule",
    "nudged",
    "voted",
];

pub(super) async fn audit(
    State(state): State<AppState>,
    Query(query): Query<AuditQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let since = match query.since.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => Some(
            Millis::parse_since(text, Millis::now())
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!("since `{text}` is not an RFC 3339 time, epoch milliseconds or a span like 30m, 2h or 7d"),
                    )
                    .with("field", json!("since"))
                })?,
        ),
    };
    let refuse = |field: &str, why: String| {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, why).with("field", json!(field))
    };
    let newest_first = match query.order.as_deref().unwrap_or("oldest") {
        "newest" => true,
        "oldest" | "" => false,
        other => {
            return Err(refuse(
                "order",
                format!("order `{other}` is neither newest nor oldest"),
            ));
        }
    };
    let outcome = query.outcome.filter(|o| !o.is_empty());
    if let Some(outcome) = outcome.as_deref().filter(|o| !OUTCOMES.contains(o)) {
        return Err(refuse(
            "outcome",
            format!("outcome `{outcome}` is not one of {}", OUTCOMES.join(", ")),
        ));
    }
    let before = super::error::cursor_param("before", query.before.as_deref(), AuditCursor::parse)?;
    let limit = query.limit.unwrap_or(if newest_first { 50 } else { 0 });
    let mut filter = AuditFilter {
        session_id: query.session_id.filter(|s| !s.is_empty()),
        since,
        limit,
        by: query.by.filter(|b| !b.is_empty()),
        outcome,
        newest_first,
        before,
    };
    if !newest_first {
        return Ok(Json(
            json!({ "entries": state.bridge.audit(&filter).await? }),
        ));
    }
    // One more than the page tells whether there is a next one.
    let limit = filter.effective_limit();
    filter.limit = limit + 1;
    let fetched = state.bridge.audit(&filter).await?;
    let page = Page::cut(fetched, limit, |kept| filter.next_cursor(kept)).within_bytes_by(
        MAX_PAGE_BYTES,
        json_size,
        |kept| filter.next_cursor(kept),
    );
    let next = page.next.as_ref().map(AuditCursor::to_string);
    Ok(Json(json!({ "entries": page.items, "next": next })))
}

/// How long `/healthz` and `/metrics` wait for the store. A probe or a scrape is useful only if it
/// answers quickly: during an outage the store's retries would hold it for seconds (`/metrics`
/// took 6.9 s), and a load balancer's probe gives up before that.
const PROBE: Duration = Duration::from_millis(900);

fn probe_expired() -> String {
    format!("the store did not answer within {} s", PROBE.as_secs_f64())
}

pub(super) async fn healthz(State(state): State<AppState>) -> Response {
    let store = state.bridge.store();
    let pinged = tokio::time::timeout(PROBE, store.ping()).await;
    let error = match pinged {
        Ok(Ok(())) => {
            let leases = state.leases.held();
            // The cluster's shape, when it can be read in what is left of the probe's time.
            let topology = tokio::time::timeout(Duration::from_millis(500), store.topology())
                .await
                .ok()
                .and_then(Result::ok);
            let degraded = topology.as_ref().is_some_and(|t| !t.ok);
            return Json(json!({
                "status": if degraded { "degraded" } else { "ok" },
                "store": store.describe(),
                "topology": topology,
                "leases": leases,
            }))
            .into_response();
        }
        Ok(Err(error)) => askbridge_core::error::Chain(&error).to_string(),
        Err(_) => probe_expired(),
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({ "status": "unavailable", "store": store.describe(), "error": error })),
    )
        .into_response()
}

pub(super) async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let store = state.bridge.store();
    let counted = tokio::time::timeout(PROBE, store.counts(askbridge_core::Millis::now())).await;
    let pending = counted
        .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, probe_expired()))??
        .pending;
    let topology = tokio::time::timeout(PROBE, store.topology())
        .await
        .ok()
        .and_then(Result::ok);
    // Which replica holds which chat connection (see `leader`): 1 here, 0 elsewhere.
    let held = state.leases.held();
    let leases = crate::leader::ALL.map(|lease| (lease, held.iter().any(|h| h == lease)));
    let body = state.bridge.metrics().render(&Scrape {
        pending,
        topology: topology.as_ref(),
        leases: &leases,
    });
    Ok(([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], body).into_response())
}

pub(super) async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such route; see the README for the API",
    )
}
