"""What the sync and async clients share about httpx: a request's arguments, a response read,
and a failure told apart (never sent, timed out, cut)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from ._requests import Request, Response, TransportFailure
from .errors import ApiError

CONNECT_TIMEOUT = 5.0
#: The event stream sends a keep-alive comment every 15 s; silence this long means it is gone.
EVENTS_READ_TIMEOUT = 45.0


def headers(token: str | None) -> dict[str, str]:
    out = {"accept": "application/json", "user-agent": "askbridge-python/0.1"}
    if token:
        out["authorization"] = f"Bearer {token}"
    return out


def arguments(request: Request) -> dict[str, Any]:
    """The keyword arguments of ``httpx.Client.request`` (and the async one) for ``request``."""
    args: dict[str, Any] = {
        "method": request.method,
        "url": request.path,
        "params": dict(request.params),
        "timeout": httpx.Timeout(request.timeout, connect=CONNECT_TIMEOUT),
    }
    if request.method == "POST":
        args["json"] = request.body if request.body is not None else {}
    if request.idempotency_key is not None:
        args["headers"] = {"idempotency-key": request.idempotency_key}
    return args


def response(status: int, text: str) -> Response:
    try:
        body: Any = json.loads(text) if text else None
    except ValueError:
        body = None
    return Response(status, body, text)


def failure(error: httpx.TransportError) -> TransportFailure:
    message = str(error) or type(error).__name__
    if isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout)):
        return TransportFailure(message, sent=False)
    if isinstance(error, httpx.TimeoutException):
        return TransportFailure(message, sent=True, timed_out=True)
    return TransportFailure(message, sent=True)


def events_timeout() -> httpx.Timeout:
    return httpx.Timeout(EVENTS_READ_TIMEOUT, connect=CONNECT_TIMEOUT)


def stream_refused(status: int, text: str) -> ApiError | None:
    """The error to raise for an event stream refused with ``status``, or ``None`` when it is
    worth reconnecting (askbridge or a proxy in front of it failing)."""
    if status >= 500:
        return None
    read = response(status, text)
    body = read.body
    error = body.get("error") if isinstance(body, dict) else None
    return ApiError(status, error if isinstance(error, str) else text[:200], None, body)
