//! Guards in front of every route, for what a web page in someone's browser could otherwise do
//! to a server on their machine or network, which has no token by default:
//!
//! - **Host** (DNS rebinding): a page on `evil.example` whose name is made to resolve to
//!   127.0.0.1 reaches us as a same-origin request with `Host: evil.example`. Only our own names
//!   pass: IP literals (a page served from an address is that address's own page), `localhost`
//!   and its subdomains, and the names of [`HostPolicy::allow`] (`ASKBRIDGE_ALLOWED_HOSTS`, the
//!   host of `TELEGRAM_WEBHOOK_URL`).
//! - **Origin** (cross-site requests): a browser names the page that sent a request; a request
//!   that changes state and names another origin than ours is refused. Requests that name none
//!   (curl, the CLI, chat webhooks) pass, so a bodiless `cancel` still works from a shell.
//! - **Content type**: a body that changes state must be JSON. A form post or a `text/plain`
//!   body is what a page can send without a CORS preflight, so those are refused with 415 before
//!   any handler reads them.

use super::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// Which names the `Host` header may carry.
#[derive(Clone, Debug, Default)]
pub struct HostPolicy {
    names: Arc<Vec<String>>,
    any: bool,
}

impl HostPolicy {
    /// Our own names and addresses only (see the module documentation).
    pub fn local() -> Self {
        HostPolicy::default()
    }

    /// Also `names` (host names without port, case-insensitive; `*` allows every name, which
    /// gives up the DNS-rebinding guard).
    pub fn allow<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut list = (*self.names).clone();
        for name in names {
            let name = name
                .as_ref()
                .trim()
                .trim_end_matches('.')
                .to_ascii_lowercase();
            if name == "*" {
                self.any = true;
            } else if !name.is_empty() {
                list.push(name);
            }
        }
        self.names = Arc::new(list);
        self
    }

    /// Whether a request naming `authority` (`host[:port]`) is for us.
    pub fn admits(&self, authority: &str) -> bool {
        if self.any {
            return true;
        }
        let Some(host) = host_of(authority) else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        let host = host.trim_end_matches('.');
        // An IPv6 literal only in brackets, an IPv4 one only without.
        let address = match host.strip_prefix('[') {
            Some(inside) => inside
                .strip_suffix(']')
                .is_some_and(|inside| inside.parse::<Ipv6Addr>().is_ok()),
            None => host.parse::<Ipv4Addr>().is_ok(),
        };
        address
            || host == "localhost"
            || host.ends_with(".localhost")
            || self.names.iter().any(|name| name == host)
    }
}

/// The host part of `host[:port]` (IPv6 literals keep their brackets); `None` when something
/// other than a port follows an IPv6 literal (`[::1]evil`).
fn host_of(authority: &str) -> Option<&str> {
    let digits = |port: &str| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    if authority.starts_with('[') {
        let end = authority.find(']')?;
        let rest = &authority[end + 1..];
        let port_only = rest.is_empty() || rest.strip_prefix(':').is_some_and(digits);
        return port_only.then(|| &authority[..=end]);
    }
    Some(match authority.rsplit_once(':') {
        Some((host, port)) if digits(port) => host,
        _ => authority,
    })
}

/// The authority a request names: its `Host` header, else its URI's (HTTP/2).
fn authority(request: &Request) -> Option<String> {
    request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.to_string()))
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The middleware in front of every route: Host, then Origin and content type for requests that
/// change state; a request that passes goes on through [`super::error::json_errors`].
///
/// One layer for both: a layer of its own boxes a future of 1-2 KB more for every request in
/// flight, a parked long poll among them. The checks run in a function of their own, so nothing
/// they hold (the Host's copy) stays allocated while the request goes on.
pub(super) async fn guard(
    State(hosts): State<HostPolicy>,
    request: Request,
    next: Next,
) -> Response {
    match refusal(&hosts, &request) {
        Some(refusal) => refusal,
        None => super::error::json_errors(request, next).await,
    }
}

/// Why `request` is refused, if it is.
fn refusal(hosts: &HostPolicy, request: &Request) -> Option<Response> {
    let named = authority(request);
    if let Some(named) = &named
        && !hosts.admits(named)
    {
        tracing::warn!(host = %named, path = %request.uri().path(), "request refused: unknown Host");
        return Some(
            ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                format!(
                    "this server does not answer to the name `{}`; add it to ASKBRIDGE_ALLOWED_HOSTS if it is yours",
                    host_of(named).unwrap_or(named)
                ),
            )
            .into_response(),
        );
    }
    if changes_state(request.method()) {
        if let Some(refusal) = cross_origin(request.headers(), named.as_deref()) {
            tracing::warn!(path = %request.uri().path(), "cross-origin request refused");
            return Some(refusal.into_response());
        }
        if let Some(refusal) = not_json(request.headers()) {
            return Some(refusal.into_response());
        }
    }
    None
}

/// A refusal when the request names an origin other than the server it is addressed to.
fn cross_origin(headers: &HeaderMap, authority: Option<&str>) -> Option<ApiError> {
    let origin = headers.get(header::ORIGIN)?;
    let origin = origin.to_str().unwrap_or("null");
    let origin_authority = origin
        .split_once("://")
        .map(|(_, rest)| rest.trim_end_matches('/'));
    let same =
        matches!((origin_authority, authority), (Some(o), Some(a)) if o.eq_ignore_ascii_case(a));
    (!same).then(|| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            format!("a request from the page at `{origin}` may not change anything here (cross-origin requests are refused)"),
        )
    })
}

/// A refusal when the request carries a body that is not JSON.
fn not_json(headers: &HeaderMap) -> Option<ApiError> {
    let has_body = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0")
        || headers.contains_key(header::TRANSFER_ENCODING);
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("?").to_owned());
    let json = |ct: &str| {
        let essence = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        essence == "application/json"
            || (essence.starts_with("application/") && essence.ends_with("+json"))
    };
    match content_type {
        Some(ct) if !json(&ct) => Some(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("this route takes `Content-Type: application/json`, not `{ct}`"),
        )),
        None if has_body => Some(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a request body needs `Content-Type: application/json`",
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_ours_or_named() {
        let policy = HostPolicy::local().allow(["Bridge.Example.com"]);
        for ok in [
            "127.0.0.1:8080",
            "[::1]:80",
            "10.0.0.5",
            "localhost:8080",
            "app.localhost",
            "bridge.example.com:443",
            "BRIDGE.example.com.",
        ] {
            assert!(policy.admits(ok), "{ok}");
        }
        for refused in [
            "evil.example:8080",
            "localhost.evil.example",
            "example.com",
            "",
            "[::1]evil",
            "[::1]:",
            "[127.0.0.1]",
            "::1",
        ] {
            assert!(!policy.admits(refused), "{refused}");
        }
        assert!(HostPolicy::local().allow(["*"]).admits("evil.example"));
    }

    #[test]
    fn only_same_origin_passes() {
        let mut headers = HeaderMap::new();
        assert!(cross_origin(&headers, Some("127.0.0.1:8080")).is_none());
        headers.insert(header::ORIGIN, "http://127.0.0.1:8080".parse().unwrap());
        assert!(cross_origin(&headers, Some("127.0.0.1:8080")).is_none());
        assert!(cross_origin(&headers, Some("127.0.0.1:9090")).is_some());
        headers.insert(header::ORIGIN, "null".parse().unwrap());
        assert!(cross_origin(&headers, Some("127.0.0.1:8080")).is_some());
    }

    #[test]
    fn bodies_must_be_json() {
        let mut headers = HeaderMap::new();
        assert!(not_json(&headers).is_none(), "no body, no type");
        headers.insert(header::CONTENT_LENGTH, "0".parse().unwrap());
        assert!(not_json(&headers).is_none());
        headers.insert(header::CONTENT_LENGTH, "2".parse().unwrap());
        assert!(not_json(&headers).is_some(), "a body without a type");
        headers.insert(
            header::CONTENT_TYPE,
            "application/json; charset=utf-8".parse().unwrap(),
        );
        assert!(not_json(&headers).is_none());
        for refused in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ] {
            headers.insert(header::CONTENT_TYPE, refused.parse().unwrap());
            assert!(not_json(&headers).is_some(), "{refused}");
        }
    }
}
