//! The ops page at `/`: pending questions live in a browser, answerable there.
//!
//! Six static files (`ops/index.html`, `ops/ops.js`, `ops/floor.js` for the runs, rules, audit
//! and history views, `ops/forms.js` for forms, `ops/batch.js` for approvals of several actions,
//! `ops/ops.css`) compiled into the binary, so
//! there is no build step, nothing to deploy beside askbridge, and nothing fetched from another
//! host. The page holds no data itself: everything it shows comes from `/api` with the token the
//! person types, so these routes sit outside the token layer.
//!
//! The Content-Security-Policy allows only these files and same-origin requests: question text is
//! written by whoever asks, and even if the page's escaping had a hole, no injected script could
//! run or send anything elsewhere. `frame-ancestors 'none'` keeps another site from framing the
//! answer buttons under a decoy (clickjacking).

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const INDEX_HTML: &str = include_str!("ops/index.html");
const OPS_JS: &str = include_str!("ops/ops.js");
const OPS_CSS: &str = include_str!("ops/ops.css");
const FLOOR_JS: &str = include_str!("ops/floor.js");
const FORMS_JS: &str = include_str!("ops/forms.js");
const BATCH_JS: &str = include_str!("ops/batch.js");

/// The page's Content-Security-Policy.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The routes `/`, `/ops.js`, `/floor.js`, `/forms.js`, `/batch.js` and `/ops.css`.
pub(super) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/ops.js",
            get(|| async { asset("text/javascript; charset=utf-8", OPS_JS) }),
        )
        .route(
            "/floor.js",
            get(|| async { asset("text/javascript; charset=utf-8", FLOOR_JS) }),
        )
        .route(
            "/forms.js",
            get(|| async { asset("text/javascript; charset=utf-8", FORMS_JS) }),
        )
        .route(
            "/batch.js",
            get(|| async { asset("text/javascript; charset=utf-8", BATCH_JS) }),
        )
        .route(
            "/ops.css",
            get(|| async { asset("text/css; charset=utf-8", OPS_CSS) }),
        )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        // A new askbridge version must not run against a cached page of the old one.
        (header::CACHE_CONTROL, "no-cache"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
