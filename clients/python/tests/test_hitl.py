"""The bridge's readings on their own (no askbridge needed): a tool's schema as the flat form
schema or not at all, an interrupt as a batch, and askbridge's decisions as LangChain's."""

from __future__ import annotations

from typing import Any

import lc_agent
import pytest

from askbridge import ActionDecision, Question, TimedOut
from askbridge._hitl import PlainQuestion, decisions, detail_of, flat_schema, proposed_actions
from askbridge.langchain import DEFAULT_PREFIX, tool_schemas

REQUEST: dict[str, Any] = {
    "action_requests": [
        {
            "name": "deploy",
            "args": {"env": "staging", "replicas": 2},
            "description": f"{DEFAULT_PREFIX}\n\nTool: deploy\nArgs: {{'env': 'staging'}}",
        },
        {"name": "ask_user", "args": {"question": "Colour?"}, "description": "Ask the user"},
        {"name": "drop_table", "args": {"name": "sessions"}},
    ],
    "review_configs": [
        {"action_name": "deploy", "allowed_decisions": ["approve", "edit", "reject"]},
        {"action_name": "ask_user", "allowed_decisions": ["respond"]},
        {"action_name": "drop_table", "allowed_decisions": ["approve", "reject"]},
    ],
}


def decision(action: int, kind: str, **more: Any) -> ActionDecision:
    return ActionDecision.from_json(
        {"action": action, "decision": kind, "by": "api", "via": "api", **more}
    )


def timed_out() -> TimedOut:
    question = Question.from_json(
        {"id": "q1", "prompt": "Allow these 3 actions?", "status": "expired", "kind": "approval"}
    )
    return TimedOut(question)


def test_a_tools_schema_is_passed_flat_or_not_at_all() -> None:
    schemas = tool_schemas(lc_agent.TOOLS)
    flat = flat_schema(schemas["deploy"])
    assert flat == {
        "type": "object",
        "properties": {
            "env": {"enum": ["staging", "production"], "title": "Env", "type": "string"},
            "replicas": {
                "default": 2,
                "maximum": 10,
                "minimum": 1,
                "title": "Replicas",
                "type": "integer",
            },
        },
        "required": ["env"],
    }
    optional = {"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}]}}}
    assert flat_schema(optional) is None
    nested = {"type": "object", "properties": {"o": {"type": "object"}}}
    assert flat_schema(nested) is None
    assert (
        flat_schema({"type": "object", "properties": {"n": {"type": "integer", "enum": [1]}}})
        is None
    )
    assert flat_schema({"$defs": {}, "type": "object", "properties": {}}) is None


def test_an_interrupt_is_one_batch_with_each_tools_decisions() -> None:
    schemas = tool_schemas(lc_agent.TOOLS)
    batch = proposed_actions(REQUEST, schemas, offer_always=True)
    assert [a["allowed"] for a in batch] == [
        ["once", "always", "edit", "reject"],
        ["respond"],
        ["once", "always", "reject"],
    ]
    assert "args_schema" in batch[0]
    assert "args_schema" not in batch[2], "no edit, no schema"
    without = proposed_actions(REQUEST, schemas, offer_always=False, with_schemas=False)
    assert without[0]["allowed"] == ["once", "edit", "reject"]
    assert "args_schema" not in without[0]
    assert detail_of(REQUEST, DEFAULT_PREFIX) == "2. ask_user: Ask the user"


def test_review_configs_listed_per_tool_are_matched_by_name() -> None:
    request = {
        "action_requests": [*REQUEST["action_requests"], REQUEST["action_requests"][0]],
        "review_configs": list(reversed(REQUEST["review_configs"])),
    }
    batch = proposed_actions(request, {}, offer_always=False)
    assert [a["allowed"] for a in batch][-1] == ["once", "edit", "reject"]


def test_askbridges_decisions_become_langchains_in_order() -> None:
    made = [
        decision(1, "edit", args={"env": "production", "replicas": 3}),
        decision(2, "respond", text="blue"),
        decision(3, "reject", message="keep it"),
    ]
    assert decisions(REQUEST, made) == [
        {
            "type": "edit",
            "edited_action": {"name": "deploy", "args": {"env": "production", "replicas": 3}},
        },
        {"type": "respond", "message": "blue"},
        {"type": "reject", "message": "keep it"},
    ]
    approved = [decision(1, "always"), decision(2, "respond", text=""), decision(3, "once")]
    assert [d["type"] for d in decisions(REQUEST, approved)] == ["approve", "respond", "approve"]


def test_what_nobody_decided_is_refused_never_run() -> None:
    late = timed_out()
    out = decisions(REQUEST, [decision(3, "once")], late)
    assert out[0]["type"] == "reject"
    assert "Nobody decided in time (askbridge approval q1 timed out)" in out[0]["message"]
    assert out[1]["type"] == "respond", "a tool without reject is answered with why"
    assert "`ask_user` was not run" in out[1]["message"]
    assert out[2] == {"type": "approve"}, "decided before the end: as decided"
    only_approve = {
        "action_requests": [REQUEST["action_requests"][0]],
        "review_configs": [{"action_name": "deploy", "allowed_decisions": ["approve"]}],
    }
    with pytest.raises(TimedOut):
        decisions(only_approve, [], late)


def test_a_plain_payload_is_a_question_or_refused() -> None:
    assert PlainQuestion.of("Why?").prompt == "Why?"
    asked = PlainQuestion.of({"question": "Which?", "options": ["a", "b"], "multi": True})
    assert (asked.options, asked.multi) == (["a", "b"], True)
    with pytest.raises(TypeError, match="askbridge answers an interrupt"):
        PlainQuestion.of({"action": "x"})
    with pytest.raises(TypeError, match="per_call mode is not bridged"):
        PlainQuestion.of({"type": "tool_approval", "name": "deploy", "args": {}})
