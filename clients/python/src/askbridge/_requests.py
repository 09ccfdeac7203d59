"""The steps an operation yields, and the requests it makes, retried.

An operation (:mod:`askbridge._core`) is a generator that yields a :class:`Request` or a
:class:`Sleep` and is sent back the :class:`Response`, or thrown a :class:`TransportFailure`.
Here are those steps, the settings every client reads, and :class:`Requests`: one call retried
while askbridge restarts, and a long poll. Apart from the operations so that what is retried, and
when, reads in one place.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

from ._json import JsonObject
from .errors import ApiError, AskbridgeError, Unreachable

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True)
class Request:
    """One HTTP request. ``timeout`` bounds waiting for its response (a long poll's is longer
    than the poll); ``create`` marks a request that makes something (sent with an
    ``Idempotency-Key``)."""

    method: Literal["GET", "POST", "DELETE"]
    path: str
    params: Mapping[str, str] = field(default_factory=dict[str, str])
    body: Any = None
    timeout: float = 30.0
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Response:
    """``body`` is the parsed JSON, or ``None`` when the body was not JSON (``text`` has it)."""

    status: int
    body: Any
    text: str = ""


class TransportFailure(Exception):
    """A request that got no response. ``sent`` is false when it never left (no connection), so
    repeating it cannot make anything twice; ``timed_out`` when the server took too long."""

    def __init__(self, message: str, *, sent: bool, timed_out: bool = False) -> None:
        super().__init__(message)
        self.sent = sent
        self.timed_out = timed_out


Step = Request | Sleep
Op = Generator[Step, Response | None, T]

#: What interrupts a blocking ask: Ctrl-C, or (async) the task's cancellation.
INTERRUPTS = (KeyboardInterrupt, asyncio.CancelledError)


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def settings(
    url: str | None, token: str | None, session: str | None
) -> tuple[str, str | None, str]:
    """Base URL, token and session as the CLI reads them: ``ASKBRIDGE_URL`` (else ``http://`` +
    ``ASKBRIDGE_HTTP_ADDR``, else ``http://127.0.0.1:8080``), ``ASKBRIDGE_API_TOKEN``,
    ``ASKBRIDGE_SESSION`` (else a session of this client's own)."""
    base = url or _env("ASKBRIDGE_URL")
    if base is None:
        addr = _env("ASKBRIDGE_HTTP_ADDR")
        base = f"http://{addr}" if addr else DEFAULT_URL
    if not base.startswith(("http://", "https://")):
        raise AskbridgeError(f"ASKBRIDGE_URL `{base}` is not an http:// or https:// URL")
    own_session = session or _env("ASKBRIDGE_SESSION") or f"py-{secrets.token_hex(5)}"
    return base.rstrip("/"), token or _env("ASKBRIDGE_API_TOKEN"), own_session


def _error(response: Response) -> ApiError:
    body = response.body
    if isinstance(body, dict):
        error = cast(JsonObject, body)
        message = error.get("error")
        field_name = error.get("field")
        return ApiError(
            response.status,
            message if isinstance(message, str) else str(body),
            field_name if isinstance(field_name, str) else None,
            body,
        )
    return ApiError(response.status, response.text.strip()[:200] or "(no body)", None, body)


class Requests:
    """Sends requests for the operations, retried (see the module docstring); :class:`Core`
    adds the operations themselves."""

    def __init__(
        self,
        url: str,
        session: str,
        *,
        poll_s: float,
        unreachable_for: float,
        retry_every: float,
        read_timeout: float | None,
    ) -> None:
        self.url = url
        self.session = session
        self.poll_s = poll_s
        self.unreachable_for = unreachable_for
        self.retry_every = retry_every
        self.read_timeout = read_timeout

    # --- requests, retried -------------------------------------------------------------------

    def call(self, request: Request, *, retry: bool = True) -> Op[Any]:
        """Sends ``request`` and gives its JSON body; raises :class:`ApiError` on an error status.

        A request that never left is repeated while askbridge stays unreachable for less than
        ``unreachable_for`` (a restart); one that left is repeated only when it is a GET, so nothing
        is made or answered twice.
        """
        unreachable_since: float | None = None
        while True:
            try:
                response = yield request
            except TransportFailure as failure:
                # A request that may have arrived is repeated only when a repeat cannot do it
                # twice: a GET, or a create with its Idempotency-Key (the server answers a
                # repeat with what the first one made).
                repeatable = (
                    not failure.sent
                    or request.method == "GET"
                    or request.idempotency_key is not None
                )
                now = time.monotonic()
                if unreachable_since is None:
                    unreachable_since = now
                if not (retry and repeatable and now - unreachable_since < self.unreachable_for):
                    raise Unreachable(self.url, str(failure)) from failure
                yield Sleep(self.retry_every)
                continue
            assert response is not None
            proxy_says_down = response.status in (502, 503) or request.method == "GET"
            if response.status >= 500 and response.body is None and retry and proxy_says_down:
                # A proxy's page while askbridge restarts behind it: as if unreachable (for a
                # POST only "bad gateway" and "unavailable", which say it never arrived).
                now = time.monotonic()
                if unreachable_since is None:
                    unreachable_since = now
                if now - unreachable_since < self.unreachable_for:
                    yield Sleep(self.retry_every)
                    continue
            if 200 <= response.status < 300:
                return response.body
            if response.status == 409 and request.idempotency_key is not None and retry:
                # The first attempt of this create is still being handled: its result comes.
                yield Sleep(self.retry_every)
                continue
            raise _error(response)

    def _poll_timeout(self, server_wait: float) -> float:
        return self.read_timeout if self.read_timeout is not None else server_wait + 30.0

    def long_poll(
        self, path: str, params: Mapping[str, str], done: Any, deadline: float | None
    ) -> Op[Any]:
        """Repeats ``GET path`` (a server-side wait of ``poll_s``) until ``done(body)`` or the
        deadline. A client-side timeout (a proxy, a short read timeout) only starts the next poll;
        askbridge unreachable is retried for ``unreachable_for``, which restarts with every
        answer."""
        unreachable_since: float | None = None
        while True:
            wait = self.poll_s
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            request = Request(
                "GET",
                path,
                {**params, "timeout_s": f"{wait:g}"},
                timeout=self._poll_timeout(wait),
            )
            try:
                response = yield request
            except TransportFailure as failure:
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    raise Unreachable(self.url, str(failure)) from failure
                if failure.timed_out:
                    # The server was there; the poll outlived a timeout on the way. Poll again.
                    unreachable_since = None
                    continue
                if unreachable_since is None:
                    unreachable_since = now
                if now - unreachable_since >= self.unreachable_for:
                    raise Unreachable(self.url, str(failure)) from failure
                yield Sleep(self.retry_every)
                continue
            assert response is not None
            if response.body is None and response.status >= 500:
                unreachable_since = unreachable_since or time.monotonic()
                if time.monotonic() - unreachable_since < self.unreachable_for:
                    yield Sleep(self.retry_every)
                    continue
            if not 200 <= response.status < 300:
                raise _error(response)
            unreachable_since = None
            if done(response.body) or (deadline is not None and time.monotonic() >= deadline):
                return response.body
