"""What askbridge sends, as typed values.

Each model keeps the JSON it was read from in ``raw``, so a field a newer askbridge adds is not
lost; the fields named here are the ones the OpenAPI document (``GET /api/openapi.json``)
describes, which a test checks in both directions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Union, cast

from ._json import JsonObject, as_object, objects, opt_str, parse_time, req_str, str_list
from .actions import ActionDecision, BatchAction
from .actions import Decision as Decision
from .errors import AskbridgeError, Cancelled, Declined, Rejected, TimedOut

#: An answer as askbridge carries it: an option or free text, a list of options (``multi``),
#: a bool (confirm) or an object (form).
AnswerValue = Union[str, bool, list[str], dict[str, Any]]  # noqa: UP007 (a runtime alias)

Status = Literal["pending", "answered", "declined", "expired", "cancelled"]
RunState = Literal["running", "waiting", "done", "failed"]


@dataclass(frozen=True)
class Vote:
    """One vote on a question with a quorum."""

    by: str
    by_name: str | None
    via: str
    at: datetime | None
    value: Any
    tally: str

    @classmethod
    def from_json(cls, raw: JsonObject) -> Vote:
        return cls(
            by=req_str(raw, "by"),
            by_name=opt_str(raw, "by_name"),
            via=req_str(raw, "via"),
            at=parse_time(raw.get("at")),
            value=raw.get("value"),
            tally=opt_str(raw, "tally") or "",
        )


@dataclass(frozen=True)
class Resolution:
    """How a question left pending. ``by`` is the identity (``telegram:42``, ``api``, ``rule:<id>``,
    ``askbridge`` for a timeout); ``by_name`` a display name where the surface gives one."""

    value: Any
    by: str
    by_name: str | None
    via: str
    at: datetime | None
    message: str | None
    rule_id: str | None
    votes: list[Vote]
    #: An approval approved with changes: ``{"proposed": action, "approved": action}``.
    edited: JsonObject | None
    #: A batch's decisions, one per action in order (on a timeout, those made before it).
    decisions: list[ActionDecision]

    @classmethod
    def from_json(cls, raw: JsonObject) -> Resolution:
        edited = raw.get("edited")
        return cls(
            value=raw.get("value"),
            by=req_str(raw, "by"),
            by_name=opt_str(raw, "by_name"),
            via=req_str(raw, "via"),
            at=parse_time(raw.get("at")),
            message=opt_str(raw, "message"),
            rule_id=opt_str(raw, "rule_id"),
            votes=[Vote.from_json(v) for v in objects(raw, "votes")],
            edited=cast(JsonObject, edited) if isinstance(edited, dict) else None,
            decisions=[ActionDecision.from_json(d) for d in objects(raw, "decisions")],
        )


@dataclass(frozen=True)
class Action:
    """What an approval is about; ``digest`` is the server's digest of tool and arguments."""

    tool: str
    args: Any
    digest: str | None

    @classmethod
    def from_json(cls, raw: JsonObject) -> Action:
        return cls(tool=req_str(raw, "tool"), args=raw.get("args"), digest=opt_str(raw, "digest"))


@dataclass(frozen=True)
class Question:
    """A question as askbridge stores and sends it."""

    id: str
    session_id: str
    kind: str
    prompt: str
    detail: str | None
    options: list[str]
    multi: bool
    allow_custom: bool
    created_at: datetime | None
    expires_at: datetime | None
    default: Any
    answerers: list[str]
    targets: list[str]
    status: Status
    resolution: Resolution | None
    outcome: str | None
    run_id: str | None
    callback_url: str | None
    action: Action | None
    reminders: JsonObject | None
    escalate: list[JsonObject]
    quorum: JsonObject | None
    votes: list[Vote]
    form: JsonObject | None
    #: An approval's decisions offered (empty: once, always, reject).
    allowed: list[str]
    args_schema: JsonObject | None
    #: A batch approval's actions (an approval of one action has ``action`` instead).
    actions: list[BatchAction]
    #: A batch's digest, over its actions' digests in order.
    digest: str | None
    raw: JsonObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> Question:
        raw = as_object(value, "a question")
        status = req_str(raw, "status")
        if status not in ("pending", "answered", "declined", "expired", "cancelled"):
            raise AskbridgeError(f"unexpected answer shape: unknown status {status!r}")
        resolution = raw.get("resolution")
        action = raw.get("action")
        reminders = raw.get("reminders")
        quorum = raw.get("quorum")
        form = raw.get("form")
        args_schema = raw.get("args_schema")
        return cls(
            id=req_str(raw, "id"),
            session_id=opt_str(raw, "session_id") or "",
            kind=opt_str(raw, "kind") or "ask",
            prompt=req_str(raw, "prompt"),
            detail=opt_str(raw, "detail"),
            options=str_list(raw, "options"),
            multi=raw.get("multi") is True,
            allow_custom=raw.get("allow_custom") is True,
            created_at=parse_time(raw.get("created_at")),
            expires_at=parse_time(raw.get("expires_at")),
            default=raw.get("default"),
            answerers=str_list(raw, "answerers"),
            targets=str_list(raw, "targets"),
            status=cast(Status, status),
            resolution=Resolution.from_json(resolution) if isinstance(resolution, dict) else None,
            outcome=opt_str(raw, "outcome"),
            run_id=opt_str(raw, "run_id"),
            callback_url=opt_str(raw, "callback_url"),
            action=Action.from_json(action) if isinstance(action, dict) else None,
            reminders=cast(JsonObject, reminders) if isinstance(reminders, dict) else None,
            escalate=objects(raw, "escalate"),
            quorum=cast(JsonObject, quorum) if isinstance(quorum, dict) else None,
            votes=[Vote.from_json(v) for v in objects(raw, "votes")],
            form=cast(JsonObject, form) if isinstance(form, dict) else None,
            allowed=str_list(raw, "allowed"),
            args_schema=cast(JsonObject, args_schema) if isinstance(args_schema, dict) else None,
            actions=[BatchAction.from_json(a) for a in objects(raw, "actions")],
            digest=opt_str(raw, "digest"),
            raw=raw,
        )

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    def decided(self) -> list[ActionDecision]:
        """A batch's decisions made so far, in action order: all of them once answered, those
        made before the end when it timed out or was cancelled, those made yet while pending."""
        if self.resolution is not None and self.resolution.decisions:
            return self.resolution.decisions
        return [a.decision for a in self.actions if a.decision is not None]

    def answer(self) -> Any:
        """The answer, or the outcome raised: :class:`~askbridge.Declined` (for an approval
        :class:`~askbridge.Rejected`), :class:`~askbridge.TimedOut`, :class:`~askbridge.Cancelled`.
        A pending question is a failure to ask about (:class:`~askbridge.AskbridgeError`)."""
        if self.status == "answered":
            if self.resolution is None or self.resolution.value is None:
                raise AskbridgeError(f"question {self.id} is answered but carries no answer")
            return self.resolution.value
        if self.status == "declined":
            raise Rejected(self) if self.kind == "approval" else Declined(self)
        if self.status == "expired":
            raise TimedOut(self)
        if self.status == "cancelled":
            raise Cancelled(self)
        raise AskbridgeError(f"question {self.id} is still pending")


@dataclass(frozen=True)
class Approval:
    """An approval granted: ``decision`` is ``once`` or ``always`` (``rule`` when a rule allowed
    it), ``edit`` (approved with changes: run it with ``args``, not the proposed arguments) or
    ``respond`` (nothing runs: ``text`` is the tool's result); ``rule_id`` the rule it created or
    that allowed it. ``args`` are the arguments to run with (``None`` for respond)."""

    decision: str
    rule_id: str | None
    question: Question
    args: Any = None
    text: str | None = None

    @property
    def edited(self) -> bool:
        return self.decision == "edit"

    @property
    def responded(self) -> bool:
        return self.decision == "respond"

    @classmethod
    def of(cls, question: Question) -> Approval:
        """The approval an answered approval question grants (the outcome raised otherwise)."""
        value = question.answer()
        resolution = question.resolution
        assert resolution is not None  # answer() raised for a question without one
        proposed = question.action.args if question.action else None
        if resolution.via == "rule":
            return cls("rule", resolution.rule_id, question, proposed)
        if value == "respond":
            return cls("respond", None, question, None, resolution.message or "")
        if value == "edit":
            approved = (resolution.edited or {}).get("approved")
            if not isinstance(approved, dict) or "args" not in approved:
                raise AskbridgeError(
                    f"approval {question.id} was edited but carries no approved arguments"
                )
            return cls("edit", None, question, cast(JsonObject, approved)["args"])
        return cls(str(value), resolution.rule_id, question, proposed)


@dataclass(frozen=True)
class Run:
    """A flow run; ``question`` is the question it waits on, when askbridge sent it inline."""

    id: str
    flow: str
    input: str | None
    state: RunState
    waiting_on: str | None
    result: str | None
    journal: list[JsonObject]
    origin: JsonObject | None
    created_at: datetime | None
    updated_at: datetime | None
    question: Question | None
    raw: JsonObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> Run:
        raw = as_object(value, "a run")
        question = raw.get("question")
        origin = raw.get("origin")
        return cls(
            id=req_str(raw, "id"),
            flow=req_str(raw, "flow"),
            input=opt_str(raw, "input"),
            state=cast(RunState, req_str(raw, "state")),
            waiting_on=opt_str(raw, "waiting_on"),
            result=opt_str(raw, "result"),
            journal=objects(raw, "journal"),
            origin=cast(JsonObject, origin) if isinstance(origin, dict) else None,
            created_at=parse_time(raw.get("created_at")),
            updated_at=parse_time(raw.get("updated_at")),
            question=Question.from_json(question) if isinstance(question, dict) else None,
            raw=raw,
        )

    @property
    def ended(self) -> bool:
        return self.state in ("done", "failed")


@dataclass(frozen=True)
class Rule:
    """An "always allow" rule."""

    id: str
    action: Action | None
    scope: Any
    created_by: str | None
    created_at: datetime | None
    question_id: str | None
    raw: JsonObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> Rule:
        raw = as_object(value, "a rule")
        action = raw.get("action")
        return cls(
            id=req_str(raw, "id"),
            action=Action.from_json(action) if isinstance(action, dict) else None,
            scope=raw.get("scope"),
            created_by=opt_str(raw, "created_by"),
            created_at=parse_time(raw.get("created_at")),
            question_id=opt_str(raw, "question_id"),
            raw=raw,
        )


@dataclass(frozen=True)
class AuditEntry:
    """One record of the audit trail."""

    at: datetime | None
    event: str
    by: str
    via: str
    question_id: str | None
    session_id: str | None
    kind: str | None
    status: str | None
    value: Any
    message: str | None
    rule_id: str | None
    digest: str | None
    raw: JsonObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> AuditEntry:
        raw = as_object(value, "an audit record")
        return cls(
            at=parse_time(raw.get("at")),
            event=opt_str(raw, "event") or "",
            by=opt_str(raw, "by") or "",
            via=opt_str(raw, "via") or "",
            question_id=opt_str(raw, "question_id"),
            session_id=opt_str(raw, "session_id"),
            kind=opt_str(raw, "kind"),
            status=opt_str(raw, "status"),
            value=raw.get("value"),
            message=opt_str(raw, "message"),
            rule_id=opt_str(raw, "rule_id"),
            digest=opt_str(raw, "digest"),
            raw=raw,
        )


@dataclass(frozen=True)
class Event:
    """One event of ``GET /api/events``: ``name`` (``question.asked``, ``run.finished``...), its
    JSON ``data``, and ``question`` / ``run`` read from it when it carries one."""

    name: str
    data: Any
    question: Question | None = None
    run: Run | None = None

    @classmethod
    def parse(cls, name: str, data: Any) -> Event:
        if name.startswith("question.") and isinstance(data, dict):
            return cls(name, data, question=Question.from_json(data))
        if name.startswith("run.") and isinstance(data, dict):
            return cls(name, data, run=Run.from_json(data))
        return cls(name, data)
