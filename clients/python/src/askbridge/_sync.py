"""The blocking client: drives the core's operations with httpx.Client."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import httpx

from . import _http
from ._core import AskOptions, Core, DecisionReply
from ._events import EventFilter, Reconnect, SseParser, events_request, parse_event
from ._requests import Op, Response, Sleep, TransportFailure, settings
from .actions import ActionDecision, ProposedAction
from .models import (
    AnswerValue,
    Approval,
    AuditEntry,
    Decision,
    Event,
    Question,
    Rule,
    Run,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

T = TypeVar("T")


class Client:
    """A blocking client of a running askbridge.

    ``url``, ``token`` and ``session`` default to ``ASKBRIDGE_URL``, ``ASKBRIDGE_API_TOKEN`` and
    ``ASKBRIDGE_SESSION`` as ``askbridge ask`` reads them. Waits are long polls of ``poll_s``
    seconds, repeated across client timeouts and across askbridge being unreachable for up to
    ``unreachable_for`` seconds (a restart). Ctrl-C during a blocking ask cancels its question.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        session: str | None = None,
        poll_s: float = 60.0,
        unreachable_for: float = 60.0,
        retry_every: float = 2.0,
        read_timeout: float | None = None,
    ) -> None:
        base, token, session = settings(url, token, session)
        self._core = Core(
            base,
            session,
            poll_s=poll_s,
            unreachable_for=unreachable_for,
            retry_every=retry_every,
            read_timeout=read_timeout,
        )
        self._http = httpx.Client(base_url=base, headers=_http.headers(token))

    @property
    def url(self) -> str:
        return self._core.url

    @property
    def session(self) -> str:
        """The session questions go in unless a call names another."""
        return self._core.session

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _send(self, request: Any) -> Response:
        try:
            reply = self._http.request(**_http.arguments(request))
        except httpx.TransportError as error:
            raise _http.failure(error) from error
        return _http.response(reply.status_code, reply.text)

    def _run(self, op: Op[T]) -> T:
        reply: Response | None = None
        thrown: BaseException | None = None
        while True:
            try:
                step = op.throw(thrown) if thrown is not None else op.send(reply)
            except StopIteration as stop:
                result: T = stop.value
                return result
            reply, thrown = None, None
            try:
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                else:
                    reply = self._send(step)
            except (TransportFailure, KeyboardInterrupt) as error:
                thrown = error

    # --- asking ------------------------------------------------------------------------------

    @overload
    def ask(
        self,
        prompt: str,
        options: Sequence[str] = (),
        *,
        multi: Literal[False] = False,
        allow_custom: bool = False,
        default: str | None = None,
        **opts: Unpack[AskOptions],
    ) -> str: ...

    @overload
    def ask(
        self,
        prompt: str,
        options: Sequence[str] = (),
        *,
        multi: Literal[True],
        allow_custom: bool = False,
        default: Sequence[str] | None = None,
        **opts: Unpack[AskOptions],
    ) -> list[str]: ...

    def ask(
        self,
        prompt: str,
        options: Sequence[str] = (),
        *,
        multi: bool = False,
        allow_custom: bool = False,
        default: str | Sequence[str] | None = None,
        **opts: Unpack[AskOptions],
    ) -> str | list[str]:
        """Asks and waits: the option chosen (a list of them with ``multi``), or free text (with
        no options, or ``allow_custom``). Raises :class:`~askbridge.Declined`,
        :class:`~askbridge.TimedOut` or :class:`~askbridge.Cancelled` when nobody answered."""
        op = self._core.ask(prompt, options, multi, allow_custom, default, opts)
        result: str | list[str] = self._run(op)
        return result

    def confirm(
        self, prompt: str, *, default: bool | None = None, **opts: Unpack[AskOptions]
    ) -> bool:
        """A yes-or-no question: ``True`` for yes, ``False`` for no."""
        return self._run(self._core.confirm(prompt, default, opts))

    def approve(
        self,
        tool: str,
        args: Any,
        *,
        prompt: str | None = None,
        allowed: Sequence[Decision] | None = None,
        args_schema: Mapping[str, Any] | None = None,
        **opts: Unpack[AskOptions],
    ) -> Approval:
        """Approval of the action ``{tool, args}``, bound to the server's digest of it. Raises
        :class:`~askbridge.Rejected` (a :class:`~askbridge.Declined`) with the feedback.

        ``allowed`` names the decisions offered (default once, always, reject); with ``edit``
        the approval may come back ``edited`` (run with ``approval.args``, checked against
        ``args_schema`` when given), with ``respond`` ``responded`` (``approval.text`` is the
        tool's result; run nothing)."""
        op = self._core.approve(tool, args, prompt, allowed, args_schema, opts)
        return self._run(op)

    def approve_actions(
        self,
        actions: Sequence[ProposedAction],
        *,
        prompt: str | None = None,
        **opts: Unpack[AskOptions],
    ) -> list[ActionDecision]:
        """Approval of several actions at once (an agent's parallel tool calls): one question,
        each action decided on its own. Gives one :class:`~askbridge.ActionDecision` per action,
        in order — ``runs`` with ``args`` (once, always, edit), or reject (``message``) or
        respond (``text``). Raises :class:`~askbridge.TimedOut` or :class:`~askbridge.Cancelled`
        when the batch ended undecided (``.question.decided()`` has the decisions made before)."""
        op = self._core.approve_actions(actions, prompt, opts)
        return self._run(op)

    @overload
    def form(self, prompt: str, fields: type[T], **opts: Unpack[AskOptions]) -> T: ...

    @overload
    def form(
        self, prompt: str, fields: Mapping[str, Any], **opts: Unpack[AskOptions]
    ) -> dict[str, Any]: ...

    def form(self, prompt: str, fields: Any, **opts: Unpack[AskOptions]) -> Any:
        """A form: ``fields`` is a form schema (the answer is a dict) or a dataclass (the answer
        is an instance of it)."""
        return self._run(self._core.form(prompt, fields, opts))

    def create_question(self, body: Mapping[str, Any]) -> Question:
        """``POST /api/questions`` without waiting (``session_id`` defaults to this client's)."""
        return self._run(self._core.create({"session_id": self.session, **body}))

    def wait(self, question_id: str, *, timeout: float | None = None) -> Question:
        """The question once resolved (``.answer()`` gives the answer or raises the outcome), or
        as it is after ``timeout`` seconds. Any process can wait for any question by id."""
        return self._run(self._core.wait(question_id, timeout))

    def get_question(self, question_id: str) -> Question:
        return self._run(self._core.get(question_id))

    def list_questions(
        self, *, session_id: str | None = None, status: str | None = None
    ) -> list[Question]:
        return self._run(self._core.list_questions(session_id, status))

    def cancel(self, question_id: str, reason: str | None = None) -> Question:
        """Withdraws a pending question everywhere; gives the question as it ended."""
        return self._run(self._core.cancel(question_id, reason))

    def cancel_session(self, session: str | None = None, reason: str | None = None) -> int:
        """Cancels a session's pending questions (this client's by default); how many."""
        return self._run(self._core.cancel_session(session, reason))

    def reply(
        self,
        question_id: str,
        answer: AnswerValue,
        *,
        by: str | None = None,
        digest: str | None = None,
        message: str | None = None,
    ) -> Question:
        """Answers a question as the identity ``api`` (``by`` is a display name)."""
        return self._run(self._core.reply(question_id, answer, by, digest, message))

    def decide(
        self,
        question_id: str,
        decision: Decision,
        *,
        action: int | None = None,
        **reply: Unpack[DecisionReply],
    ) -> Question:
        """Decides an approval as the identity ``api``: ``decide(id, "edit", args={...})``,
        ``decide(id, "respond", text="...")``, ``decide(id, "reject", message="...")``. A decision
        the approval does not offer, or arguments breaking its schema, raise
        :class:`~askbridge.ApiError` (422, naming the field) and decide nothing. ``action``
        decides that action of a batch (``digest`` is then the batch's)."""
        return self._run(self._core.decide(question_id, decision, reply, action))

    def reject(
        self, question_id: str, message: str | None = None, *, by: str | None = None
    ) -> Question:
        """Declines a question (rejects an approval) with ``message``."""
        return self._run(self._core.reject(question_id, message, by))

    # --- runs --------------------------------------------------------------------------------

    def start_run(
        self,
        flow: str,
        input: str | None = None,
        *,
        chat: str | None = None,
        user: str | None = None,
        wait_s: float | None = None,
    ) -> Run:
        """Starts a flow; with ``wait_s``, answers once it waits on its first question (as
        ``run.question``) or has ended."""
        return self._run(self._core.start_run(flow, input, chat, user, wait_s))

    def get_run(self, run_id: str) -> Run:
        return self._run(self._core.get_run(run_id))

    def wait_run(
        self, run_id: str, *, after: str | None = None, timeout: float | None = None
    ) -> Run:
        """The run once it waits on a question other than ``after`` or has ended."""
        return self._run(self._core.wait_run(run_id, after, timeout))

    def answer_run(
        self,
        run_id: str,
        answer: AnswerValue,
        *,
        question_id: str | None = None,
        message: str | None = None,
        digest: str | None = None,
        timeout_s: float | None = None,
        args: Any = None,
        text: str | None = None,
    ) -> Run:
        """Answers the question the run waits on; gives the run at its next step. An approval's
        ``edit`` takes ``args``, its ``respond`` ``text``."""
        op = self._core.answer_run(
            run_id, answer, question_id, message, digest, timeout_s, args, text
        )
        return self._run(op)

    # --- rules, audit, events ----------------------------------------------------------------

    def rules(self, *, limit: int | None = None, after: str | None = None) -> list[Rule]:
        return self._run(self._core.rules(limit, after))

    def revoke_rule(self, rule_id: str) -> None:
        """Revokes an "always allow" rule."""
        self._run(self._core.revoke_rule(rule_id))

    def audit(
        self,
        *,
        session_id: str | None = None,
        since: str | None = None,
        by: str | None = None,
        outcome: str | None = None,
        order: Literal["oldest", "newest"] | None = None,
        before: str | None = None,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        params = {
            "session_id": session_id,
            "since": since,
            "by": by,
            "outcome": outcome,
            "order": order,
            "before": before,
            "limit": limit,
        }
        return self._run(self._core.audit(params))

    def events(self, session_id: str | None = None) -> Iterator[Event]:
        """The event stream, for ever: reconnects when it drops (askbridge restarting), skipping
        the pending questions a reconnect replays that were already seen. Raises
        :class:`~askbridge.Unreachable` once askbridge stayed away for ``unreachable_for``."""
        request = events_request(session_id)
        reconnect = Reconnect(self._core)
        seen = EventFilter()
        while True:
            try:
                with self._http.stream(
                    "GET", request.path, params=dict(request.params), timeout=_http.events_timeout()
                ) as reply:
                    if reply.status_code != 200:
                        refused = _http.stream_refused(reply.status_code, reply.read().decode())
                        if refused is not None:
                            raise refused
                        cause = f"the event stream answered {reply.status_code}"
                    else:
                        if reconnect.connected():
                            yield from self._run(self._core.missed(session_id, seen))
                        parser = SseParser()
                        for line in reply.iter_lines():
                            got = parser.feed(line)
                            if got is not None:
                                event = parse_event(*got)
                                if seen.fresh(event):
                                    yield event
                        cause = "the event stream ended"
            except httpx.TransportError as error:
                cause = str(error) or type(error).__name__
            time.sleep(reconnect.dropped(cause))
