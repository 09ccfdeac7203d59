//! Each request on its way to the router: its body must arrive within
//! [`super::ServeOptions::body_timeout`], all of it (hyper bounds only the header's time, and a
//! body sent a byte every few seconds held a connection for ever), and the connection knows while
//! it is in flight (see `conn.rs`).

use super::conn::{Conn, InFlight};
use crate::http::{EventBacklog, EventSocket};
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The request as the router takes it, the connection told a request is in flight; its
/// [`EventBacklog`] in its extensions.
pub(super) fn request(
    conn: &Arc<Conn>,
    mut request: hyper::Request<hyper::body::Incoming>,
    options: &super::ServeOptions,
) -> Request<Deadline> {
    let socket: Arc<dyn EventSocket> = conn.clone();
    let backlog = EventBacklog::new(socket, options.event_backlog);
    request.extensions_mut().insert(backlog);
    request.map(|body| Deadline::new(body, conn.clone(), options.body_timeout))
}

/// `response`, whose body holds `in_flight` until it is done or dropped.
pub(super) fn response(in_flight: InFlight, response: Response) -> Response {
    response.map(move |body| {
        Body::new(body.map_frame(move |frame| {
            let _ = &in_flight;
            frame
        }))
    })
}

/// A request body that fails once its time is up.
#[derive(Debug)]
pub(super) struct Deadline {
    inner: hyper::body::Incoming,
    conn: Arc<Conn>,
    limit: Duration,
    deadline: Instant,
    /// Made when first waited on: most requests have no body.
    sleep: Option<Pin<Box<Sleep>>>,
    open: bool,
}

impl Deadline {
    fn new(inner: hyper::body::Incoming, conn: Arc<Conn>, limit: Duration) -> Self {
        let open = !inner.is_end_stream();
        conn.set_body_open(open);
        Deadline {
            inner,
            conn,
            limit,
            deadline: Instant::now() + limit,
            sleep: None,
            open,
        }
    }

    fn close(&mut self) {
        if std::mem::take(&mut self.open) {
            self.conn.set_body_open(false);
        }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        self.close();
    }
}

/// The error a body that took too long fails with.
#[derive(Debug, thiserror::Error)]
#[error("the client took more than {} s to send the request body (ASKBRIDGE_BODY_TIMEOUT_S)", .0.as_secs_f64())]
struct TooSlow(Duration);

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            if frame.is_none() || this.inner.is_end_stream() {
                this.close();
            }
            return Poll::Ready(frame.map(|result| result.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if sleep.as_mut().poll(cx).is_ready() {
            this.close();
            return Poll::Ready(Some(Err(TooSlow(this.limit).into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
