//! The API token check (`ASKBRIDGE_API_TOKEN`), as a tower layer of its own.
//!
//! Not `middleware::from_fn`: that boxes, for every request in flight, a future holding the
//! request, the app's state and the inner route's future; about 2 KB more for each parked long
//! poll, for a check that only looks at one header before the route starts. A request that
//! passes goes on as the inner route's own future; one that does not is answered at once.
//!
//! The header is read in place, never copied: a copy held while the route runs would keep
//! hyper's 8 KB read buffer (the header values point into it) for as long as a long poll is
//! parked.

use super::error::ApiError;
use askbridge_core::Secret;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// Requires `Authorization: Bearer <token>` on the routes it wraps, when a token is set.
#[derive(Clone)]
pub(super) struct RequireToken(Option<Secret>);

impl RequireToken {
    pub(super) fn new(token: Option<Secret>) -> Self {
        RequireToken(token)
    }
}

impl<S> Layer<S> for RequireToken {
    type Service = Checked<S>;

    fn layer(&self, inner: S) -> Checked<S> {
        Checked {
            inner,
            token: self.0.clone(),
        }
    }
}

/// A route behind [`RequireToken`].
#[derive(Clone)]
pub(super) struct Checked<S> {
    inner: S,
    token: Option<Secret>,
}

impl<S> Service<Request> for Checked<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match refusal(self.token.as_ref(), &request) {
            Some(refusal) => Either::Left(ready(Ok(refusal))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}

/// Why `request` is refused, if a token is required: none presented, or another one (compared
/// in constant time).
fn refusal(token: Option<&Secret>, request: &Request) -> Option<Response> {
    let expected = token?;
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|token| expected.matches(token.trim().as_bytes()));
    match presented {
        Some(true) => None,
        Some(false) => {
            Some(ApiError::new(StatusCode::UNAUTHORIZED, "wrong API token").into_response())
        }
        None => Some(
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this API needs `Authorization: Bearer <ASKBRIDGE_API_TOKEN>`",
            )
            .into_response(),
        ),
    }
}
