"""Batches: one approval of several actions (an agent's parallel tool calls), each decided on
its own — once, always, edit, reject or respond — as the batch contract words it.

A batch of one is still a batch, so code asking about a model's tool calls never special-cases
one call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from ._json import JsonObject, as_object, opt_str, parse_time, req_str, str_list
from .errors import AskbridgeError

if TYPE_CHECKING:
    from .models import Question

#: An approval's decisions (LangChain's words, plus "always"): what ``allowed`` lists.
Decision = Literal["once", "always", "edit", "reject", "respond"]

#: Most actions one batch takes.
MAX_ACTIONS = 20


class _Proposed(TypedDict):
    tool: str
    args: Any


class ProposedAction(_Proposed, total=False):
    """One action of a batch as the asker proposes it: ``tool`` and ``args``, and optionally
    the ``allowed`` decisions (default once, always, reject) and the arguments' ``args_schema``
    (askbridge's flat form schema makes the edit field by field)."""

    allowed: list[Decision]
    args_schema: Mapping[str, Any]


def _action_number(raw: JsonObject, name: str) -> int:
    value = raw.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise AskbridgeError(f"unexpected answer shape: `{name}` is no action number: {value!r}")
    return value


@dataclass(frozen=True)
class ActionDecision:
    """The decision on one action of a batch. ``action`` is its number (from 1, in the order
    proposed). ``args`` are the arguments to run with for once, always and edit (the proposed
    ones, or the person's for edit, with ``proposed_args`` beside them) and ``None`` otherwise;
    ``message`` is a rejection's feedback, ``text`` a response (the tool's result; nothing
    runs). ``by_rule`` when an "always" rule decided it before anyone was asked."""

    action: int
    decision: Decision
    by: str
    by_name: str | None
    via: str
    at: datetime | None
    args: Any
    proposed_args: Any
    digest: str | None
    message: str | None
    text: str | None
    rule_id: str | None
    by_rule: bool
    #: For always: the rule holds in every session, not only this one.
    everywhere: bool
    raw: JsonObject = field(repr=False, compare=False)

    @property
    def runs(self) -> bool:
        """True when the action may run (once, always, edit): with ``args``."""
        return self.decision in ("once", "always", "edit")

    @classmethod
    def from_json(cls, value: Any) -> ActionDecision:
        raw = as_object(value, "an action's decision")
        decision = req_str(raw, "decision")
        if decision not in ("once", "always", "edit", "reject", "respond"):
            raise AskbridgeError(f"unexpected answer shape: unknown decision {decision!r}")
        return cls(
            action=_action_number(raw, "action"),
            decision=decision,  # type: ignore[arg-type]
            by=req_str(raw, "by"),
            by_name=opt_str(raw, "by_name"),
            via=req_str(raw, "via"),
            at=parse_time(raw.get("at")),
            args=raw.get("args"),
            proposed_args=raw.get("proposed_args"),
            digest=opt_str(raw, "digest"),
            message=opt_str(raw, "message"),
            text=opt_str(raw, "text"),
            rule_id=opt_str(raw, "rule_id"),
            by_rule=raw.get("by_rule") is True,
            everywhere=raw.get("everywhere") is True,
            raw=raw,
        )


@dataclass(frozen=True)
class BatchAction:
    """One action of a batch approval as askbridge shows it: its number ``n``, ``tool``,
    ``args``, ``digest``, the decisions it offers, and its ``decision`` once made (while the
    batch is still pending too)."""

    n: int
    tool: str
    args: Any
    digest: str | None
    allowed: list[str]
    args_schema: JsonObject | None
    decision: ActionDecision | None

    @classmethod
    def from_json(cls, value: Any) -> BatchAction:
        raw = as_object(value, "a batch's action")
        decision = raw.get("decision")
        schema = raw.get("args_schema")
        return cls(
            n=_action_number(raw, "n"),
            tool=req_str(raw, "tool"),
            args=raw.get("args"),
            digest=opt_str(raw, "digest"),
            allowed=str_list(raw, "allowed"),
            args_schema=as_object(schema, "args_schema") if isinstance(schema, dict) else None,
            decision=ActionDecision.from_json(decision) if isinstance(decision, dict) else None,
        )


def actions_body(actions: list[ProposedAction]) -> list[JsonObject]:
    """The ``actions`` of ``POST /api/questions``: 1 to 20, each ``{tool, args, allowed?,
    args_schema?}``."""
    if not 1 <= len(actions) <= MAX_ACTIONS:
        raise ValueError(f"a batch takes 1 to {MAX_ACTIONS} actions, not {len(actions)}")
    out: list[JsonObject] = []
    for action in actions:
        item: JsonObject = {"tool": action["tool"], "args": action["args"]}
        if "allowed" in action:
            item["allowed"] = list(action["allowed"])
        if "args_schema" in action:
            item["args_schema"] = dict(action["args_schema"])
        out.append(item)
    return out


def default_prompt(actions: list[ProposedAction]) -> str:
    if len(actions) == 1:
        return f"Allow {actions[0]['tool']}?"
    return f"Allow these {len(actions)} actions?"


def outcome(question: Question) -> list[ActionDecision]:
    """An answered batch's decisions, one per action in order; otherwise its outcome raised:
    :class:`~askbridge.TimedOut` or :class:`~askbridge.Cancelled` (``.question.decided()``
    lists the decisions made before the end)."""
    if question.status != "answered":
        question.answer()  # raises the outcome
    decided = question.decided()
    if [d.action for d in decided] != list(range(1, len(question.actions) + 1)):
        raise AskbridgeError(
            f"approval {question.id} is answered but does not carry one decision per action"
        )
    return decided
