"""The LangChain bridge's readings, without I/O and without importing LangChain: an interrupt's
value as askbridge's question, and askbridge's answer as the value that resumes the graph.

``HumanInTheLoopMiddleware`` (``langchain`` 1.x, its default "batched" mode) interrupts once per
model turn with ``{"action_requests": [{name, args, description}], "review_configs":
[{action_name, allowed_decisions, args_schema?}]}`` and resumes with ``{"decisions": [...]}``,
one per action in order: ``{"type": "approve"}``, ``{"type": "edit", "edited_action": {name,
args}}``, ``{"type": "reject", "message"?}``, ``{"type": "respond", "message"}``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from .actions import ActionDecision, Decision, ProposedAction
from .errors import Cancelled, NoAnswer, TimedOut

#: LangChain's decisions, as askbridge offers them.
OFFERED: dict[str, list[Decision]] = {
    "approve": ["once", "always"],
    "edit": ["edit"],
    "reject": ["reject"],
    "respond": ["respond"],
}

#: The keys of a flat form schema's field (askbridge's forms); any other makes a schema rich.
_FIELD_KEYS = {
    "type",
    "title",
    "description",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "enum",
    "enumNames",
    "items",
    "minItems",
    "maxItems",
    "default",
}
_SCHEMA_KEYS = {"type", "properties", "required", "title", "description", "additionalProperties"}
_SESSION = re.compile(r"[A-Za-z0-9._:/@-]{1,100}")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def thread_of(config: Mapping[str, Any]) -> str:
    """The graph's ``thread_id``: without it (and a checkpointer) there is nothing to resume."""
    configurable = config.get("configurable")
    thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    if thread is None or str(thread) == "":
        raise ValueError(
            "the graph's config names no thread_id: an interrupt is resumed in its thread "
            '(config={"configurable": {"thread_id": ...}}, and the graph needs a checkpointer)'
        )
    return str(thread)


def thread_session(thread: str) -> str:
    """The askbridge session of a thread's questions (its "always" rules hold there)."""
    name = f"langgraph:{thread}"
    return name if _SESSION.fullmatch(name) else f"langgraph:{_digest(thread)[:32]}"


def interrupt_key(thread: str, interrupt_id: str) -> str:
    """The ``Idempotency-Key`` of an interrupt's question: a process resuming the thread later
    asks with the same key and gets the same question back instead of asking twice."""
    return f"langgraph-{_digest(thread, interrupt_id)[:48]}"


def is_hitl_request(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("action_requests"), list)
        and isinstance(value.get("review_configs"), list)
    )


def flat_schema(schema: Any) -> dict[str, Any] | None:
    """``schema`` (a tool's JSON schema, as pydantic writes it) as askbridge's flat form schema,
    whose edit goes field by field; ``None`` when it is richer (nested, ``anyOf``, ``$ref``)."""
    if not isinstance(schema, Mapping) or set(schema) - _SCHEMA_KEYS:
        return None
    properties = schema.get("properties")
    if schema.get("type", "object") != "object" or not isinstance(properties, Mapping):
        return None
    if not 1 <= len(properties) <= 20:
        return None
    fields: dict[str, Any] = {}
    for name, field in properties.items():
        if not isinstance(field, Mapping) or set(field) - _FIELD_KEYS:
            return None
        kind = field.get("type")
        if kind not in ("string", "number", "integer", "boolean", "array"):
            return None
        if "enum" in field and kind != "string":
            return None
        items = field.get("items")
        if kind == "array" and not (isinstance(items, Mapping) and "enum" in items):
            return None
        fields[str(name)] = dict(field)
    flat: dict[str, Any] = {"type": "object", "properties": fields}
    required = schema.get("required")
    if isinstance(required, list) and required:
        flat["required"] = [str(r) for r in required]
    return flat


def _review_configs(request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """One review config per action request, in order (matched by name when the lists differ,
    as older LangChain releases listed one per tool)."""
    actions = cast(list[Mapping[str, Any]], request["action_requests"])
    configs = cast(list[Mapping[str, Any]], request["review_configs"])
    if len(configs) == len(actions) and all(
        c.get("action_name") == a.get("name") for a, c in zip(actions, configs, strict=True)
    ):
        return configs
    by_name = {c.get("action_name"): c for c in configs}
    missing = [a.get("name") for a in actions if a.get("name") not in by_name]
    if missing:
        raise ValueError(f"the interrupt has no review config for {missing}")
    return [by_name[a.get("name")] for a in actions]


def proposed_actions(
    request: Mapping[str, Any],
    schemas: Mapping[str, Any],
    offer_always: bool,
    with_schemas: bool = True,
) -> list[ProposedAction]:
    """The batch to ask: each action request with its tool's decisions (LangChain's approve
    offered as once, plus always when ``offer_always``) and, when edit is offered and the
    schema is flat, its arguments' schema (the review config's, else the tool's)."""
    out: list[ProposedAction] = []
    actions = cast(list[Mapping[str, Any]], request["action_requests"])
    for action, config in zip(actions, _review_configs(request), strict=True):
        name = str(action["name"])
        lc_allowed = [str(d) for d in config.get("allowed_decisions", [])]
        allowed: list[Decision] = []
        for decision in lc_allowed:
            if decision not in OFFERED:
                raise ValueError(f"the interrupt offers an unknown decision {decision!r}")
            allowed += [d for d in OFFERED[decision] if offer_always or d != "always"]
        proposed: ProposedAction = {"tool": name, "args": action.get("args", {})}
        proposed["allowed"] = allowed
        schema = flat_schema(config.get("args_schema", schemas.get(name)))
        if with_schemas and schema is not None and "edit" in lc_allowed:
            proposed["args_schema"] = schema
        out.append(proposed)
    return out


def detail_of(request: Mapping[str, Any], prefix: str) -> str | None:
    """The actions' descriptions that say more than the middleware's default (``prefix``
    followed by the tool and its arguments, which askbridge shows anyway)."""
    lines = []
    for n, action in enumerate(cast(list[Mapping[str, Any]], request["action_requests"]), 1):
        description = str(action.get("description") or "")
        said = description.split("\n\nTool: ", 1)[0].strip()
        if said and said != prefix:
            lines.append(f"{n}. {action.get('name')}: {said}")
    text = "\n".join(lines)
    return text[:8000] if text else None


def _ended(error: NoAnswer, tool: str) -> str:
    if isinstance(error, TimedOut):
        return (
            f"Nobody decided in time (askbridge approval {error.question.id} timed out), "
            f"so `{tool}` was not run."
        )
    if isinstance(error, Cancelled):
        why = f": {error.message}" if error.message else ""
        return f"The approval was cancelled{why}, so `{tool}` was not run."
    message = getattr(error, "message", None)
    return str(message) if message else f"`{tool}` was rejected."


def decisions(
    request: Mapping[str, Any],
    decided: Sequence[ActionDecision],
    ended: NoAnswer | None = None,
) -> list[dict[str, Any]]:
    """LangChain's decisions, one per action request in order, from askbridge's. An action left
    undecided (the batch ``ended`` by a timeout or a cancellation) is rejected with why, or —
    for a tool that offers no reject — answered with why; one that offers neither raises the
    ending: nothing runs that nobody approved."""
    by_number = {d.action: d for d in decided}
    out: list[dict[str, Any]] = []
    actions = cast(list[Mapping[str, Any]], request["action_requests"])
    for n, (action, config) in enumerate(zip(actions, _review_configs(request), strict=True), 1):
        name = str(action["name"])
        made = by_number.get(n)
        if made is None:
            allowed = config.get("allowed_decisions", [])
            if ended is None:
                raise ValueError(f"askbridge gave no decision for action {n} ({name})")
            kind = "reject" if "reject" in allowed else "respond" if "respond" in allowed else None
            if kind is None:
                raise ended
            out.append({"type": kind, "message": _ended(ended, name)})
        elif made.decision in ("once", "always"):
            out.append({"type": "approve"})
        elif made.decision == "edit":
            out.append({"type": "edit", "edited_action": {"name": name, "args": made.args}})
        elif made.decision == "respond":
            out.append({"type": "respond", "message": made.text or ""})
        else:
            out.append({"type": "reject", **({"message": made.message} if made.message else {})})
    return out


@dataclass(frozen=True)
class PlainQuestion:
    """A plain ``interrupt()`` payload as a question: a string (free text), or ``{"question"
    (or "prompt"), "options"?, "multi"?, "allow_custom"?, "default"?, "detail"?}``."""

    prompt: str
    options: list[str]
    multi: bool
    allow_custom: bool
    default: Any
    detail: str | None

    @classmethod
    def of(cls, value: Any) -> PlainQuestion:
        if isinstance(value, str):
            return cls(value, [], False, False, None, None)
        prompt = value.get("question", value.get("prompt")) if isinstance(value, Mapping) else None
        if isinstance(value, Mapping) and value.get("type") == "tool_approval":
            raise TypeError(
                "HumanInTheLoopMiddleware's per_call mode is not bridged: use its default "
                'interrupt_mode="batched" (one approval of all the tool calls of a turn)'
            )
        if not isinstance(prompt, str):
            raise TypeError(
                "askbridge answers an interrupt() whose value is a question: a string, or "
                '{"question": ..., "options"?: [...], "multi"?, "allow_custom"?, "default"?, '
                f'"detail"?}}; not {value!r}'
            )
        options = value.get("options") or []
        detail = value.get("detail")
        return cls(
            prompt,
            [str(o) for o in options],
            value.get("multi") is True,
            value.get("allow_custom") is True,
            value.get("default"),
            detail if isinstance(detail, str) else None,
        )
