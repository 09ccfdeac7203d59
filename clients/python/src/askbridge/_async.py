"""The async client: drives the core's operations with httpx.AsyncClient; its surface is the
blocking client's (a test holds them to the same signatures)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
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


class AsyncClient:
    """An async client of a running askbridge (see :class:`~askbridge.Client`).

    ``url``, ``token`` and ``session`` default to ``ASKBRIDGE_URL``, ``ASKBRIDGE_API_TOKEN`` and
    ``ASKBRIDGE_SESSION`` as ``askbridge ask`` reads them. Waits are long polls of ``poll_s``
    seconds, repeated across client timeouts and across askbridge being unreachable for up to
    ``unreachable_for`` seconds (a restart). Ctrl-C during an ask, or the cancellation of the
    task awaiting it, cancels its question.
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
        self._http = httpx.AsyncClient(base_url=base, headers=_http.headers(token))

    @property
    def url(self) -> str:
        return self._core.url

    @property
    def session(self) -> str:
        """The session questions go in unless a call names another."""
        return self._core.session

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _send(self, request: Any) -> Response:
        try:
            reply = await self._http.request(**_http.arguments(request))
        except httpx.TransportError as error:
            raise _http.failure(error) from error
        return _http.response(reply.status_code, reply.text)

    async def _run(self, op: Op[T]) -> T:
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
                    await asyncio.sleep(step.seconds)
                else:
                    reply = await self._send(step)
            except (TransportFailure, KeyboardInterrupt, asyncio.CancelledError) as error:
                thrown = error

    # --- asking ------------------------------------------------------------------------------

    @overload
    async def ask(
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
    async def ask(
        self,
        prompt: str,
        options: Sequence[str] = (),
        *,
        multi: Literal[True],
        allow_custom: bool = False,
        default: Sequence[str] | None = None,
        **opts: Unpack[AskOptions],
    ) -> list[str]: ...

    async def ask(
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
        result: str | list[str] = await self._run(op)
        return result

    async def confirm(
        self, prompt: str, *, default: bool | None = None, **opts: Unpack[AskOptions]
    ) -> bool:
        """A yes-or-no question: ``True`` for yes, ``False`` for no."""
        return await self._run(self._core.confirm(prompt, default, opts))

    async def approve(
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
        return await self._run(op)

    async def approve_actions(
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
        return await self._run(op)

    @overload
    async def form(self, prompt: str, fields: type[T], **opts: Unpack[AskOptions]) -> T: ...

    @overload
    async def form(
        self, prompt: str, fields: Mapping[str, Any], **opts: Unpack[AskOptions]
    ) -> dict[str, Any]: ...

    async def form(self, prompt: str, fields: Any, **opts: Unpack[AskOptions]) -> Any:
        """A form: ``fields`` is a form schema (the answer is a dict) or a dataclass (the answer
        is an instance of it)."""
        return await self._run(self._core.form(prompt, fields, opts))

    async def create_question(self, body: Mapping[str, Any]) -> Question:
        """``POST /api/questions`` without waiting (``session_id`` defaults to this client's)."""
        return await self._run(self._core.create({"session_id": self.session, **body}))

    async def wait(self, question_id: str, *, timeout: float | None = None) -> Question:
        """The question once resolved (``.answer()`` gives the answer or raises the outcome), or
        as it is after ``timeout`` seconds. Any process can wait for any question by id."""
        return await self._run(self._core.wait(question_id, timeout))

    async def get_question(self, question_id: str) -> Question:
        return await self._run(self._core.get(question_id))

    async def list_questions(
        self, *, session_id: str | None = None, status: str | None = None
    ) -> list[Question]:
        return await self._run(self._core.list_questions(session_id, status))

    async def cancel(self, question_id: str, reason: str | None = None) -> Question:
        """Withdraws a pending question everywhere; gives the question as it ended."""
        return await self._run(self._core.cancel(question_id, reason))

    async def cancel_session(self, session: str | None = None, reason: str | None = None) -> int:
        """Cancels a session's pending questions (this client's by default); how many."""
        return await self._run(self._core.cancel_session(session, reason))

    async def reply(
        self,
        question_id: str,
        answer: AnswerValue,
        *,
        by: str | None = None,
        digest: str | None = None,
        message: str | None = None,
    ) -> Question:
        """Answers a question as the identity ``api`` (``by`` is a display name)."""
        return await self._run(self._core.reply(question_id, answer, by, digest, message))

    async def decide(
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
        return await self._run(self._core.decide(question_id, decision, reply, action))

    async def reject(
        self, question_id: str, message: str | None = None, *, by: str | None = None
    ) -> Question:
        """Declines a question (rejects an approval) with ``message``."""
        return await self._run(self._core.reject(question_id, message, by))

    # --- runs --------------------------------------------------------------------------------

    async def start_run(
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
        return await self._run(self._core.start_run(flow, input, chat, user, wait_s))

    async def get_run(self, run_id: str) -> Run:
        return await self._run(self._core.get_run(run_id))

    async def wait_run(
        self, run_id: str, *, after: str | None = None, timeout: float | None = None
    ) -> Run:
        """The run once it waits on a question other than ``after`` or has ended."""
        return await self._run(self._core.wait_run(run_id, after, timeout))

    async def answer_run(
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
        return await self._run(op)

    # --- rules, audit, events ----------------------------------------------------------------

    async def rules(self, *, limit: int | None = None, after: str | None = None) -> list[Rule]:
        return await self._run(self._core.rules(limit, after))

    async def revoke_rule(self, rule_id: str) -> None:
        """Revokes an "always allow" rule."""
        await self._run(self._core.revoke_rule(rule_id))

    async def audit(
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
        return await self._run(self._core.audit(params))

    async def events(self, session_id: str | None = None) -> AsyncIterator[Event]:
        """The event stream, for ever: reconnects when it drops (askbridge restarting), skipping
        the pending questions a reconnect replays that were already seen. Raises
        :class:`~askbridge.Unreachable` once askbridge stayed away for ``unreachable_for``."""
        request = events_request(session_id)
        reconnect = Reconnect(self._core)
        seen = EventFilter()
        while True:
            try:
                async with self._http.stream(
                    "GET", request.path, params=dict(request.params), timeout=_http.events_timeout()
                ) as reply:
                    if reply.status_code != 200:
                        refused = _http.stream_refused(
                            reply.status_code, (await reply.aread()).decode()
                        )
                        if refused is not None:
                            raise refused
                        cause = f"the event stream answered {reply.status_code}"
                    else:
                        if reconnect.connected():
                            for missed in await self._run(self._core.missed(session_id, seen)):
                                yield missed
                        parser = SseParser()
                        async for line in reply.aiter_lines():
                            got = parser.feed(line)
                            if got is not None:
                                event = parse_event(*got)
                                if seen.fresh(event):
                                    yield event
                        cause = "the event stream ended"
            except httpx.TransportError as error:
                cause = str(error) or type(error).__name__
            await asyncio.sleep(reconnect.dropped(cause))
