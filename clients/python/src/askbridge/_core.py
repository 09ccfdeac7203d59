"""The client's logic, written once, without I/O.

Every operation is a generator that yields what it needs done — a :class:`Request` to send or a
:class:`Sleep` — and is sent back the :class:`Response`; a request that did not get through is
thrown back in as :class:`TransportFailure`, and an interruption (KeyboardInterrupt, or the task's
cancellation) as itself. :class:`~askbridge.Client` drives these generators with blocking httpx
calls and :class:`~askbridge.AsyncClient` with awaited ones, so both behave alike: the same
retries, the same long polls, the same cancellation on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, TypeVar, cast

from . import actions, forms
from ._json import JsonObject
from .actions import ActionDecision, ProposedAction
from .errors import ApiError, AskbridgeError, Unreachable
from .models import Approval, AuditEntry, Decision, Event, Question, Rule, Run

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


class DecisionReply(TypedDict, total=False):
    """What goes with an approval's decision: ``args`` (edit: the arguments to run with instead),
    ``text`` (respond: the tool's result), ``message`` (reject: the feedback), ``digest`` (the
    action as the person saw it), ``by`` (a display name)."""

    args: Any
    text: str
    message: str
    digest: str
    by: str


class AskOptions(TypedDict, total=False):
    """Options every asking call takes (see README's HTTP API for each)."""

    detail: str
    timeout_s: float
    targets: Sequence[str]
    answerers: Sequence[str]
    session: str
    remind_after_s: float
    reminders: int
    quorum: int
    escalate: Sequence[Mapping[str, Any]]
    callback_url: str
    #: Sent as the create's ``Idempotency-Key`` (a random one otherwise): another process
    #: asking the same question with the same key within a day gets the first one back and
    #: waits on it, instead of asking twice.
    idempotency_key: str
    #: False: Ctrl-C (or the awaiting task's cancellation) leaves the question pending, for a
    #: process that picks it up later (by ``wait(id)``, or asking again with the same key).
    cancel_on_interrupt: bool


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


class Core:
    """The operations, as generators (see the module docstring)."""

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

    # --- questions ---------------------------------------------------------------------------

    def question_body(self, prompt: str, kind: str, options: AskOptions) -> JsonObject:
        body: JsonObject = {
            "session_id": options.get("session", self.session),
            "kind": kind,
            "prompt": prompt,
        }
        for name in ("detail", "timeout_s", "remind_after_s", "callback_url"):
            if name in options:
                body[name] = options[name]
        for name in ("targets", "answerers", "escalate"):
            if name in options:
                body[name] = list(options[name])  # type: ignore[literal-required]
        if "remind_after_s" in options:
            body["reminders"] = options.get("reminders", 1)
        if "quorum" in options:
            body["quorum"] = {"needs": options["quorum"], "of": list(options.get("answerers", []))}
        return body

    def create(self, body: Mapping[str, Any], key: str | None = None) -> Op[Question]:
        """Creates a question, sent with ``key`` as its ``Idempotency-Key`` (a random one when
        not given): a repeat with the same key and body gives the first question back."""
        key = key or secrets.token_hex(16)
        request = Request("POST", "/api/questions", body=dict(body), idempotency_key=key)
        return Question.from_json((yield from self.call(request)))

    def wait(self, question_id: str, timeout: float | None = None) -> Op[Question]:
        """The question once it leaves pending (or as it is after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def done(body: Any) -> bool:
            return isinstance(body, dict) and cast(JsonObject, body).get("status") != "pending"

        body = yield from self.long_poll(f"/api/questions/{question_id}/wait", {}, done, deadline)
        return Question.from_json(body)

    def ask_and_wait(self, body: Mapping[str, Any], opts: AskOptions) -> Op[Question]:
        """Asks and waits for the resolution. Interrupted (Ctrl-C, a cancelled task), it cancels
        the question — every surface withdraws it — and passes the interruption on (unless
        ``cancel_on_interrupt`` is false: then the question stays pending for another process)."""
        question = yield from self.create(body, opts.get("idempotency_key"))
        if not question.pending:
            return question
        try:
            return (yield from self.wait(question.id))
        except INTERRUPTS:
            if not opts.get("cancel_on_interrupt", True):
                raise
            reason = "the Python program that asked it was interrupted"
            with contextlib.suppress(AskbridgeError):
                yield from self.cancel(question.id, reason, retry=False)
            raise

    def ask(
        self,
        prompt: str,
        options: Sequence[str],
        multi: bool,
        allow_custom: bool,
        default: str | Sequence[str] | None,
        opts: AskOptions,
    ) -> Op[Any]:
        body = self.question_body(prompt, "ask", opts)
        body.update(options=list(options), multi=multi, allow_custom=allow_custom)
        if default is not None:
            body["default"] = default if isinstance(default, str) else list(default)
        question = yield from self.ask_and_wait(body, opts)
        value = question.answer()
        if multi:
            return [str(v) for v in value] if isinstance(value, list) else [value]
        return value if isinstance(value, str) else str(value)

    def confirm(self, prompt: str, default: bool | None, opts: AskOptions) -> Op[bool]:
        body = self.question_body(prompt, "confirm", opts)
        if default is not None:
            body["default"] = default
        question = yield from self.ask_and_wait(body, opts)
        return question.answer() is True

    def approve(
        self,
        tool: str,
        args: Any,
        prompt: str | None,
        allowed: Sequence[Decision] | None,
        args_schema: Mapping[str, Any] | None,
        opts: AskOptions,
    ) -> Op[Approval]:
        body = self.question_body(prompt or f"Allow {tool}?", "approval", opts)
        body["action"] = {"tool": tool, "args": args}
        if allowed is not None:
            body["allowed"] = list(allowed)
        if args_schema is not None:
            body["args_schema"] = dict(args_schema)
        question = yield from self.ask_and_wait(body, opts)
        return Approval.of(question)

    def approve_actions(
        self,
        proposed: Sequence[ProposedAction],
        prompt: str | None,
        opts: AskOptions,
    ) -> Op[list[ActionDecision]]:
        listed = list(proposed)
        body = self.question_body(prompt or actions.default_prompt(listed), "approval", opts)
        body["actions"] = actions.actions_body(listed)
        question = yield from self.ask_and_wait(body, opts)
        return actions.outcome(question)

    def form(self, prompt: str, fields: Any, opts: AskOptions) -> Op[Any]:
        as_class = isinstance(fields, type)
        schema = forms.schema_of(fields) if as_class else dict(fields)
        body = self.question_body(prompt, "form", opts)
        body["form"] = schema
        question = yield from self.ask_and_wait(body, opts)
        value = question.answer()
        if not isinstance(value, dict):
            raise AskbridgeError(f"a form's answer is not an object: {value!r}")
        return forms.instance_of(fields, value) if as_class else value

    def get(self, question_id: str) -> Op[Question]:
        return Question.from_json(
            (yield from self.call(Request("GET", f"/api/questions/{question_id}")))
        )

    def list_questions(self, session_id: str | None, status: str | None) -> Op[list[Question]]:
        params = {k: v for k, v in (("session_id", session_id), ("status", status)) if v}
        body = yield from self.call(Request("GET", "/api/questions", params))
        return [Question.from_json(q) for q in _list(body, "questions")]

    def cancel(self, question_id: str, reason: str | None, *, retry: bool = True) -> Op[Question]:
        """Withdraws the question; one already resolved is given back as it was resolved."""
        body = {"reason": reason} if reason else {}
        request = Request("POST", f"/api/questions/{question_id}/cancel", body=body, timeout=10.0)
        try:
            return Question.from_json((yield from self.call(request, retry=retry)))
        except ApiError as error:
            if error.status == 409 and isinstance(error.body, dict):
                question = cast(JsonObject, error.body).get("question")
                if isinstance(question, dict):
                    return Question.from_json(question)
            raise

    def cancel_session(self, session: str | None, reason: str | None) -> Op[int]:
        body = {"reason": reason} if reason else {}
        path = f"/api/sessions/{session or self.session}/cancel"
        result = yield from self.call(Request("POST", path, body=body))
        count = cast(JsonObject, result).get("cancelled") if isinstance(result, dict) else None
        return count if isinstance(count, int) else 0

    def reply(
        self,
        question_id: str,
        answer: Any,
        by: str | None,
        digest: str | None,
        message: str | None,
    ) -> Op[Question]:
        body: JsonObject = {"answer": answer}
        for name, value in (("by", by), ("digest", digest), ("message", message)):
            if value is not None:
                body[name] = value
        request = Request("POST", f"/api/questions/{question_id}/reply", body=body)
        return Question.from_json((yield from self.call(request)))

    def decide(
        self,
        question_id: str,
        decision: Decision,
        reply: DecisionReply,
        action: int | None = None,
    ) -> Op[Question]:
        """An approval's decision as LangChain words it: ``{"decision": ..., "args"?, "text"?}``
        (with ``action``, on that action of a batch)."""
        body: JsonObject = {"decision": decision}
        if action is not None:
            body["action"] = action
        body.update({k: v for k, v in reply.items() if v is not None})
        request = Request("POST", f"/api/questions/{question_id}/reply", body=body)
        return Question.from_json((yield from self.call(request)))

    def reject(self, question_id: str, message: str | None, by: str | None) -> Op[Question]:
        body = {k: v for k, v in (("message", message), ("by", by)) if v is not None}
        request = Request("POST", f"/api/questions/{question_id}/reject", body=body)
        return Question.from_json((yield from self.call(request)))

    # --- runs --------------------------------------------------------------------------------

    def start_run(
        self,
        flow: str,
        input: str | None,
        chat: str | None,
        user: str | None,
        wait_s: float | None,
    ) -> Op[Run]:
        body: JsonObject = {"flow": flow}
        for name, value in (("input", input), ("chat", chat), ("user", user), ("wait_s", wait_s)):
            if value is not None:
                body[name] = value
        timeout = (wait_s or 0.0) + 30.0
        request = Request(
            "POST", "/api/runs", body=body, timeout=timeout, idempotency_key=secrets.token_hex(16)
        )
        return Run.from_json((yield from self.call(request)))

    def get_run(self, run_id: str) -> Op[Run]:
        return Run.from_json((yield from self.call(Request("GET", f"/api/runs/{run_id}"))))

    def wait_run(self, run_id: str, after: str | None, timeout: float | None) -> Op[Run]:
        """The run once it waits on a question other than ``after`` or has ended (or as it is
        after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def done(body: Any) -> bool:
            if not isinstance(body, dict):
                return False
            run = cast(JsonObject, body)
            if run.get("state") in ("done", "failed"):
                return True
            waiting_on = run.get("waiting_on")
            return run.get("state") == "waiting" and waiting_on is not None and waiting_on != after

        params = {"after": after} if after else {}
        body = yield from self.long_poll(f"/api/runs/{run_id}/wait", params, done, deadline)
        return Run.from_json(body)

    def answer_run(
        self,
        run_id: str,
        answer: Any,
        question_id: str | None,
        message: str | None,
        digest: str | None,
        timeout_s: float | None,
        args: Any = None,
        text: str | None = None,
    ) -> Op[Run]:
        body: JsonObject = {"answer": answer}
        for name, value in (
            ("question_id", question_id),
            ("message", message),
            ("digest", digest),
            ("timeout_s", timeout_s),
            ("args", args),
            ("text", text),
        ):
            if value is not None:
                body[name] = value
        timeout = (timeout_s or 0.0) + 30.0
        request = Request("POST", f"/api/runs/{run_id}/answer", body=body, timeout=timeout)
        return Run.from_json((yield from self.call(request)))

    # --- rules and audit ---------------------------------------------------------------------

    def rules(self, limit: int | None, after: str | None) -> Op[list[Rule]]:
        params = {k: str(v) for k, v in (("limit", limit), ("after", after)) if v is not None}
        body = yield from self.call(Request("GET", "/api/rules", params))
        return [Rule.from_json(r) for r in _list(body, "rules")]

    def revoke_rule(self, rule_id: str) -> Op[None]:
        yield from self.call(Request("DELETE", f"/api/rules/{rule_id}"))

    def missed(self, session_id: str | None, seen: EventFilter) -> Op[list[Event]]:
        """After a reconnection: the endings of questions seen pending that ended meanwhile,
        read from the most recently resolved 500 (``GET /api/history``)."""
        if not seen.pending:
            return []
        params = {"limit": "500", **({"session_id": session_id} if session_id else {})}
        body = yield from self.call(Request("GET", "/api/history", params))
        events = []
        for raw in reversed(_list(body, "questions")):
            question = Question.from_json(raw)
            if question.id in seen.pending and question.status in ENDINGS:
                event = Event(ENDINGS[question.status], raw, question=question)
                if seen.fresh(event):
                    events.append(event)
        return events

    def audit(self, params: Mapping[str, str | int | None]) -> Op[list[AuditEntry]]:
        query = {k: str(v) for k, v in params.items() if v is not None}
        body = yield from self.call(Request("GET", "/api/audit", query))
        return [AuditEntry.from_json(e) for e in _list(body, "entries")]


def _list(body: Any, name: str) -> list[Any]:
    items = cast(JsonObject, body).get(name) if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise AskbridgeError(f"unexpected answer shape: no `{name}` list")
    return items


# --- the event stream ------------------------------------------------------------------------


class SseParser:
    """Server-Sent Events, a line at a time."""

    def __init__(self) -> None:
        self._name = "message"
        self._data: list[str] = []

    def feed(self, line: str) -> tuple[str, str] | None:
        """Takes one line (without its end); gives ``(name, data)`` when it ends an event."""
        if line == "":
            if not self._data:
                self._name = "message"
                return None
            event = (self._name, "\n".join(self._data))
            self._name, self._data = "message", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._name = value
        elif name == "data":
            self._data.append(value)
        return None


#: The event that ends a question, by the status it ends in.
ENDINGS = {
    "answered": "question.replied",
    "declined": "question.rejected",
    "expired": "question.expired",
    "cancelled": "question.cancelled",
}


def _remember(ids: OrderedDict[str, None], key: str) -> None:
    ids[key] = None
    if len(ids) > 10_000:
        ids.popitem(last=False)


class EventFilter:
    """Keeps a reconnecting stream's story whole: askbridge replays the pending questions on
    every connect, so a ``question.asked`` already seen is dropped; and a question that ended
    while the stream was away is reported from ``GET /api/history`` (:meth:`Core.missed`), its
    ending dropped if the live stream then sends it too. Remembers the last 10,000 of each."""

    def __init__(self) -> None:
        self.pending: OrderedDict[str, None] = OrderedDict()
        self._ended: OrderedDict[str, None] = OrderedDict()

    def fresh(self, event: Event) -> bool:
        if event.question is None:
            return True
        key = event.question.id
        if key in self._ended:
            return False
        if event.name == "question.asked":
            if key in self.pending:
                return False
            _remember(self.pending, key)
        elif event.name in ENDINGS.values():
            self.pending.pop(key, None)
            _remember(self._ended, key)
        return True


class Reconnect:
    """When the event stream drops: how long to wait before the next attempt, or
    :class:`Unreachable` once askbridge stayed away for ``unreachable_for``."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._since: float | None = None
        self._connects = 0

    def connected(self) -> bool:
        """Notes a connection; true when it is a reconnection (events may have been missed)."""
        self._since = None
        self._connects += 1
        return self._connects > 1

    def dropped(self, cause: str) -> float:
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if now - self._since >= self._core.unreachable_for:
            raise Unreachable(self._core.url, cause)
        return self._core.retry_every


def events_request(session_id: str | None) -> Request:
    return Request("GET", "/api/events", {"session_id": session_id} if session_id else {})


def parse_event(name: str, data: str) -> Event:
    try:
        value: Any = json.loads(data)
    except ValueError:
        value = data
    return Event.parse(name, value)
