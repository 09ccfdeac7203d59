"""The client's models against the contract (GET /api/openapi.json), in both directions, and the
two clients against each other."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import httpx
from conftest import Person, Server

from askbridge import (
    Action,
    ActionDecision,
    AsyncClient,
    BatchAction,
    Client,
    Question,
    Resolution,
    Vote,
)


def fields(model: type[Any]) -> set[str]:
    return {f.name for f in dataclasses.fields(model)} - {"raw"}


def properties(spec: Any, schema: Any) -> set[str]:
    """The properties of ``schema``, a ``$ref`` followed."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        for part in ref.removeprefix("#/").split("/"):
            spec = spec[part]
        schema = spec
    return set(schema["properties"])


def test_models_know_every_field_of_the_spec_and_no_other(server: Server) -> None:
    spec = httpx.get(f"{server.url}/api/openapi.json").json()
    question = spec["components"]["schemas"]["Question"]["properties"]
    assert fields(Question) == set(question)
    assert fields(Resolution) == set(question["resolution"]["properties"])
    assert fields(Action) == set(question["action"]["properties"])
    assert fields(Vote) == set(spec["components"]["schemas"]["Vote"]["properties"])
    actions = question["actions"]["items"]
    assert fields(BatchAction) == properties(spec, actions)
    decisions = question["resolution"]["properties"]["decisions"]["items"]
    assert fields(ActionDecision) == properties(spec, decisions)


def test_what_askbridge_sends_is_in_the_spec(server: Server, person: Person) -> None:
    spec = httpx.get(f"{server.url}/api/openapi.json").json()
    schema = spec["components"]["schemas"]["Question"]["properties"]
    with Client(server.url) as client:
        created = client.create_question(
            {
                "kind": "approval",
                "prompt": "Allow?",
                "detail": "all of it",
                "action": {"tool": "shell", "args": {"command": "ls"}},
                "answerers": ["api"],
                "targets": [],
                "remind_after_s": 3600,
                "reminders": 1,
                "escalate": [{"after_s": 7200, "answerers": ["api"]}],
                "timeout_s": 86400,
            }
        )
        assert created.action is not None
        answered = client.reply(created.id, "always", digest=created.action.digest)
    sent = answered.raw
    assert set(sent) <= set(schema), set(sent) - set(schema)
    assert set(sent["resolution"]) <= set(schema["resolution"]["properties"])
    assert set(sent["action"]) <= set(schema["action"]["properties"])
    for vote in sent.get("votes", []):
        assert set(vote) <= set(spec["components"]["schemas"]["Vote"]["properties"])
    assert answered.resolution is not None
    assert answered.resolution.rule_id is not None


def test_sync_and_async_have_one_surface() -> None:
    def public(cls: type[Any]) -> dict[str, inspect.Signature]:
        return {
            name: inspect.signature(member)
            for name, member in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_") and name not in ("close", "aclose")
        }

    sync, asynchronous = public(Client), public(AsyncClient)
    assert sync.keys() == asynchronous.keys()
    for name, signature in sync.items():
        assert list(signature.parameters) == list(asynchronous[name].parameters), name
        assert inspect.iscoroutinefunction(getattr(AsyncClient, name)) or name == "events", name
