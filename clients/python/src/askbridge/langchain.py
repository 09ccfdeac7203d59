"""LangChain / LangGraph through askbridge (``pip install 'askbridge[langchain]'``): a graph's
interrupts are asked on the people's chat channels, and the graph resumes with their answers.

- ``HumanInTheLoopMiddleware``'s interrupt (every tool call of one model turn) becomes ONE
  askbridge approval of those actions, each offering its tool's decisions (approve as once and
  always, edit, reject, respond) and, for edits, the tool's argument schema when it is flat; the
  graph resumes with the decisions the middleware expects, in order. A timeout rejects what
  nobody decided ("Nobody decided in time ...").
- A plain ``interrupt("Which version?")`` or ``interrupt({"question": ..., "options": [...]})``
  in a custom graph is asked as a question and resumed with the answer.

Durable with the graph's own checkpointer: each interrupt's question is created with an
``Idempotency-Key`` derived from the thread and the interrupt's id, so a process that exits while
a person takes hours loses nothing — a new one calls ``invoke(graph, None, config)`` on the same
thread, gets the same question back (within askbridge's one-day window for keys), waits for its
answer and resumes the graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from langgraph.types import Command, Interrupt
from pydantic import BaseModel

from . import _hitl
from ._async import AsyncClient
from ._core import AskOptions
from ._sync import Client
from .actions import ActionDecision, ProposedAction
from .errors import ApiError, NoAnswer, TimedOut

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool
    from langgraph.pregel import Pregel
    from typing_extensions import Unpack

__all__ = ["AsyncReviewer", "Reviewer", "tool_schemas"]

C = TypeVar("C", Client, AsyncClient)

#: The middleware's default description prefix (``description_prefix``).
DEFAULT_PREFIX = "Tool execution requires approval"


def tool_schemas(tools: Sequence[BaseTool]) -> dict[str, Any]:
    """Each tool's argument schema (the JSON schema its model sees), by tool name."""
    out: dict[str, Any] = {}
    for tool in tools:
        schema = tool.tool_call_schema
        if isinstance(schema, dict):
            out[tool.name] = schema
        elif isinstance(schema, type) and issubclass(schema, BaseModel):
            out[tool.name] = schema.model_json_schema()
    return out


class _Reviewing(Generic[C]):
    """What both reviewers share: their settings and the question each interrupt makes."""

    def __init__(
        self,
        client: C,
        *,
        tools: Sequence[BaseTool] = (),
        offer_always: bool = True,
        description_prefix: str = DEFAULT_PREFIX,
        **opts: Unpack[AskOptions],
    ) -> None:
        self.client: C = client
        self._schemas = tool_schemas(tools)
        self._offer_always = offer_always
        self._prefix = description_prefix
        self._opts = opts

    def _options(self, config: RunnableConfig, interrupt: Interrupt) -> AskOptions:
        thread = _hitl.thread_of(config)
        opts: AskOptions = {**self._opts}
        opts.setdefault("session", _hitl.thread_session(thread))
        # The thread waits at its interrupt whatever this process does: so does the question.
        opts.setdefault("cancel_on_interrupt", False)
        opts["idempotency_key"] = _hitl.interrupt_key(thread, interrupt.id)
        return opts

    def _batch(
        self, request: Mapping[str, Any], opts: AskOptions, with_schemas: bool
    ) -> tuple[list[ProposedAction], AskOptions]:
        """The batch to ask, and its options: without schemas under a key of its own."""
        proposed = _hitl.proposed_actions(request, self._schemas, self._offer_always, with_schemas)
        detail = _hitl.detail_of(request, self._prefix)
        more: AskOptions = {**opts, **({"detail": detail} if detail else {})}
        if not with_schemas:
            more["idempotency_key"] = opts["idempotency_key"] + "-plain"
        return proposed, more

    def _plain(self, value: Any, opts: AskOptions) -> tuple[_hitl.PlainQuestion, dict[str, Any]]:
        """A plain interrupt's question, and the keyword arguments of ``client.ask``."""
        question = _hitl.PlainQuestion.of(value)
        kwargs: dict[str, Any] = {**opts, "allow_custom": question.allow_custom}
        if question.multi:
            kwargs["multi"] = True
        if question.default is not None:
            kwargs["default"] = question.default
        if question.detail:
            kwargs["detail"] = question.detail
        return question, kwargs


def _schema_refused(error: ApiError) -> bool:
    """askbridge refused an argument schema (one it cannot show, or proposed arguments that
    break it): the batch is asked again without schemas, its edits then one JSON value."""
    return error.status == 422 and "args_schema" in f"{error.field} {error.error}"


class Reviewer(_Reviewing[Client]):
    """Decides a LangGraph graph's interrupts through askbridge, blocking.

    >>> reviewer = Reviewer(client, tools=tools, answerers=["telegram:42"], timeout_s=3600)
    >>> result = reviewer.invoke(agent, {"messages": [...]}, config)

    ``tools`` give the edit its argument schemas; ``offer_always`` offers "always" beside
    "once" for LangChain's approve (askbridge then allows that very call without asking again,
    in this session). Questions go in the session ``langgraph:<thread_id>`` unless ``session``
    names one; every other option (``answerers``, ``targets``, ``timeout_s``, reminders...) is
    the client's. Ctrl-C leaves the question pending (the thread still waits at its interrupt;
    ``cancel_on_interrupt=True`` withdraws it instead).
    """

    def invoke(self, graph: Pregel[Any, Any, Any, Any], input: Any, config: RunnableConfig) -> Any:
        """Runs ``graph`` on ``input`` (``None``: resumes the thread where it waits) until no
        interrupt is left, each decided through askbridge; gives the last invocation's result
        (the thread's values when there was nothing to run)."""
        result = graph.invoke(input, config) if input is not None else None
        while interrupts := graph.get_state(config).interrupts:
            result = graph.invoke(self.command(interrupts, config), config)
        return result if result is not None else graph.get_state(config).values

    def command(self, interrupts: Sequence[Interrupt], config: RunnableConfig) -> Command[Any]:
        """The ``Command(resume=...)`` answering ``interrupts`` (by id), each asked and waited
        for through askbridge."""
        return Command(resume={i.id: self.answer(i, config) for i in interrupts})

    def answer(self, interrupt: Interrupt, config: RunnableConfig) -> Any:
        """The value resuming one interrupt: ``{"decisions": [...]}`` for the middleware's, the
        answer for a plain question."""
        opts = self._options(config, interrupt)
        value = interrupt.value
        if _hitl.is_hitl_request(value):
            return {"decisions": self._decisions(value, opts)}
        question, kwargs = self._plain(value, opts)
        try:
            return self.client.ask(question.prompt, question.options, **kwargs)
        except TimedOut as late:
            if late.default_used:
                return late.default
            raise

    def _decisions(self, request: Mapping[str, Any], opts: AskOptions) -> list[dict[str, Any]]:
        decided: list[ActionDecision] = []
        ended: NoAnswer | None = None
        try:
            try:
                proposed, more = self._batch(request, opts, with_schemas=True)
                decided = self.client.approve_actions(proposed, **more)
            except ApiError as error:
                if not _schema_refused(error):
                    raise
                proposed, more = self._batch(request, opts, with_schemas=False)
                decided = self.client.approve_actions(proposed, **more)
        except NoAnswer as error:
            ended, decided = error, error.question.decided()
        return _hitl.decisions(request, decided, ended)


class AsyncReviewer(_Reviewing[AsyncClient]):
    """:class:`Reviewer` for async graphs (``ainvoke``) with an :class:`~askbridge.AsyncClient`."""

    async def invoke(
        self, graph: Pregel[Any, Any, Any, Any], input: Any, config: RunnableConfig
    ) -> Any:
        """See :meth:`Reviewer.invoke`."""
        result = await graph.ainvoke(input, config) if input is not None else None
        while interrupts := (await graph.aget_state(config)).interrupts:
            result = await graph.ainvoke(await self.command(interrupts, config), config)
        return result if result is not None else (await graph.aget_state(config)).values

    async def command(
        self, interrupts: Sequence[Interrupt], config: RunnableConfig
    ) -> Command[Any]:
        """See :meth:`Reviewer.command`."""
        return Command(resume={i.id: await self.answer(i, config) for i in interrupts})

    async def answer(self, interrupt: Interrupt, config: RunnableConfig) -> Any:
        """See :meth:`Reviewer.answer`."""
        opts = self._options(config, interrupt)
        value = interrupt.value
        if _hitl.is_hitl_request(value):
            return {"decisions": await self._decisions(value, opts)}
        question, kwargs = self._plain(value, opts)
        try:
            return await self.client.ask(question.prompt, question.options, **kwargs)
        except TimedOut as late:
            if late.default_used:
                return late.default
            raise

    async def _decisions(
        self, request: Mapping[str, Any], opts: AskOptions
    ) -> list[dict[str, Any]]:
        decided: list[ActionDecision] = []
        ended: NoAnswer | None = None
        try:
            try:
                proposed, more = self._batch(request, opts, with_schemas=True)
                decided = await self.client.approve_actions(proposed, **more)
            except ApiError as error:
                if not _schema_refused(error):
                    raise
                proposed, more = self._batch(request, opts, with_schemas=False)
                decided = await self.client.approve_actions(proposed, **more)
        except NoAnswer as error:
            ended, decided = error, error.question.decided()
        return _hitl.decisions(request, decided, ended)
