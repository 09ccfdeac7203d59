"""What askbridge sends, as typed values.

Each model keeps the JSON it was read from in ``raw``, so a field a newer askbridge adds is not
lost; the fields named here are the ones the OpenAPI document (``GET /api/openapi.json``)
describes, which a test checks in both directions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Union, cast

from .errors import AskbridgeError, Cancelled, Declined, Rejected, TimedOut

#: An answer as askbridge carries it: an option or free text, a list of options (``multi``),
#: a bool (confirm) or an object (form).
AnswerValue = Union[str, bool, list[str], dict[str, Any]]  # noqa: UP007 (a runtime alias)

#: An approval's decisions (LangChain's words, plus "always"): what ``allowed`` lists.
Decision = Literal["once", "always", "edit", "reject", "respond"]

Status = Literal["pending", "answered", "declined", "expired", "cancelled"]
RunState = Literal["running", "waiting", "done", "failed"]

JsonObject = dict[str, Any]


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time as askbridge writes it (``2026-12-06T03:53:10.192Z``)."""
    if not isinstance(value, str):
        return None
    # Python 3.10's fromisoformat does not read a trailing Z.
    return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)


def _object(value: Any, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise AskbridgeError(f"unexpected answer shape: {what} is not a JSON object: {value!r}")
    return cast(JsonObject, value)


def _str(raw: JsonObject, name: str) -> str:
    value = raw.get(name)
    if not isinstance(value, str):
        raise AskbridgeError(f"unexpected answer shape: `{name}` is not a string: {value!r}")
    return value


def _opt_str(raw: JsonObject, name: str) -> str | None:
    value = raw.get(name)
    return value if isinstance(value, str) else None


def _str_list(raw: JsonObject, name: str) -> list[str]:
    value = raw.get(name)
    if not isinstance(value, list):
        return []
    return [str(item) for item in value]


def _objects(raw: JsonObject, name: str) -> list[JsonObject]:
    value = raw.get(name)
    if not isinstance(value, list):
        return []
    return [cast(JsonObject, item) for item in value if isinstance(item, dict)]


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
            by=_str(raw, "by"),
            by_name=_opt_str(raw, "by_name"),
            via=_str(raw, "via"),
            at=parse_time(raw.get("at")),
            value=raw.get("value"),
            tally=_opt_str(raw, "tally") or "",
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

    @classmethod
    def from_json(cls, raw: JsonObject) -> Resolution:
        edited = raw.get("edited")
        return cls(
            value=raw.get("value"),
            by=_str(raw, "by"),
            by_name=_opt_str(raw, "by_name"),
            via=_str(raw, "via"),
            at=parse_time(raw.get("at")),
            message=_opt_str(raw, "message"),
            rule_id=_opt_str(raw, "rule_id"),
            votes=[Vote.from_json(v) for v in _objects(raw, "votes")],
            edited=cast(JsonObject, edited) if isinstance(edited, dict) else None,
        )


@dataclass(frozen=True)
class Action:
    """What an approval is about; ``digest`` is the server's digest of tool and arguments."""

    tool: str
    args: Any
    digest: str | None

    @classmethod
    def from_json(cls, raw: JsonObject) -> Action:
        return cls(tool=_str(raw, "tool"), args=raw.get("args"), digest=_opt_str(raw, "digest"))


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
    raw: JsonObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> Question:
        raw = _object(value, "a question")
        status = _str(raw, "status")
        if status not in ("pending", "answered", "declined", "expired", "cancelled"):
            raise AskbridgeError(f"unexpected answer shape: unknown status {status!r}")
        resolution = raw.get("resolution")
        action = raw.get("action")
        reminders = raw.get("reminders")
        quorum = raw.get("quorum")
        form = raw.get("form")
        args_schema = raw.get("args_schema")
        return cls(
            id=_str(raw, "id"),
            session_id=_opt_str(raw, "session_id") or "",
            kind=_opt_str(raw, "kind") or "ask",
            prompt=_str(raw, "prompt"),
            detail=_opt_str(raw, "detail"),
            options=_str_list(raw, "options"),
            multi=raw.get("multi") is True,
            allow_custom=raw.get("allow_custom") is True,
            created_at=parse_time(raw.get("created_at")),
            expires_at=parse_time(raw.get("expires_at")),
            default=raw.get("default"),
            answerers=_str_list(raw, "answerers"),
            targets=_str_list(raw, "targets"),
            status=cast(Status, status),
            resolution=Resolution.from_json(resolution) if isinstance(resolution, dict) else None,
            outcome=_opt_str(raw, "outcome"),
            run_id=_opt_str(raw, "run_id"),
            callback_url=_opt_str(raw, "callback_url"),
            action=Action.from_json(action) if isinstance(action, dict) else None,
            reminders=cast(JsonObject, reminders) if isinstance(reminders, dict) else None,
            escalate=_objects(raw, "escalate"),
            quorum=cast(JsonObject, quorum) if isinstance(quorum, dict) else None,
            votes=[Vote.from_json(v) for v in _objects(raw, "votes")],
            form=cast(JsonObject, form) if isinstance(form, dict) else None,
            allowed=_str_list(raw, "allowed"),
            args_schema=cast(JsonObject, args_schema) if isinstance(args_schema, dict) else None,
            raw=raw,
        )

    @property
    def pending(self) -> bool:
        return self.status == "pending"

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
        raw = _object(value, "a run")
        question = raw.get("question")
        origin = raw.get("origin")
        return cls(
            id=_str(raw, "id"),
            flow=_str(raw, "flow"),
            input=_opt_str(raw, "input"),
            state=cast(RunState, _str(raw, "state")),
            waiting_on=_opt_str(raw, "waiting_on"),
            result=_opt_str(raw, "result"),
            journal=_objects(raw, "journal"),
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
        raw = _object(value, "a rule")
        action = raw.get("action")
        return cls(
            id=_str(raw, "id"),
            action=Action.from_json(action) if isinstance(action, dict) else None,
            scope=raw.get("scope"),
            created_by=_opt_str(raw, "created_by"),
            created_at=parse_time(raw.get("created_at")),
            question_id=_opt_str(raw, "question_id"),
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
        raw = _object(value, "an audit record")
        return cls(
            at=parse_time(raw.get("at")),
            event=_opt_str(raw, "event") or "",
            by=_opt_str(raw, "by") or "",
            via=_opt_str(raw, "via") or "",
            question_id=_opt_str(raw, "question_id"),
            session_id=_opt_str(raw, "session_id"),
            kind=_opt_str(raw, "kind"),
            status=_opt_str(raw, "status"),
            value=raw.get("value"),
            message=_opt_str(raw, "message"),
            rule_id=_opt_str(raw, "rule_id"),
            digest=_opt_str(raw, "digest"),
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
