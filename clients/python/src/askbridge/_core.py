"""The client's logic, written once, without I/O.

Every operation is a generator that yields what it needs done — a :class:`Request` to send or a
:class:`Sleep` — and is sent back the :class:`Response`; a request that did not get through is
thrown back in as :class:`TransportFailure`, and an interruption (KeyboardInterrupt, or the task's
cancellation) as itself. :class:`~askbridge.Client` drives these generators with blocking httpx
calls and :class:`~askbridge.AsyncClient` with awaited ones, so both behave alike: the same
retries, the same long polls, the same cancellation on Ctrl-C.

The parts: the steps and the retried requests are in :mod:`askbridge._requests`, the event
stream's parts in :mod:`askbridge._events`; here are the operations.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, cast

from . import actions, forms
from ._events import ENDINGS
from ._json import JsonObject
from ._requests import INTERRUPTS, Op, Request, Requests
from .actions import ActionDecision, ProposedAction
from .errors import ApiError, AskbridgeError
from .models import Approval, AuditEntry, Decision, Event, Question, Rule, Run

if TYPE_CHECKING:
    from ._events import EventFilter


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


class Core(Requests):
    """The operations, as generators (see the module docstring)."""

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
