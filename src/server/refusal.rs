//! The answers the server loop writes itself, below the router: JSON as every other error
//! (`{"error": "..."}`), and each closes its connection.

use axum::http::StatusCode;

/// What a connection past the cap is told (when none can be shed to make room).
pub(super) fn busy() -> Vec<u8> {
    answer(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many connections; try again in a moment please",
        "retry-after: 1\r\n",
    )
}

/// The JSON answer in place of the empty one hyper writes with `status` for a request that does
/// not parse (see `io.rs`).
pub(super) fn response(status: u16) -> Vec<u8> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let message = match status {
        StatusCode::URI_TOO_LONG => {
            "the request's path and query are longer than this server reads"
        }
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            "the request's header is larger than this server reads (too long, or too many fields)"
        }
        StatusCode::BAD_REQUEST => {
            "the request is not HTTP/1.1 this server can read (its request line, a header or its Content-Length)"
        }
        other => other
            .canonical_reason()
            .unwrap_or("the request cannot be read"),
    };
    answer(status, message, "")
}

fn answer(status: StatusCode, message: &str, extra_headers: &str) -> Vec<u8> {
    let body = serde_json::json!({ "error": message }).to_string();
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\n{extra_headers}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        status.as_str(),
        status.canonical_reason().unwrap_or(""),
        body.len(),
    )
    .into_bytes()
}
