"""An approval's decisions beyond yes and no, through the client on both sides: the asker offers
``edit`` and ``respond`` (with an ``args_schema``) and reads ``edited`` / ``responded``; the
person decides with :meth:`Client.decide`, whose refusals (a value breaking the schema, a
decision not offered) are :class:`ApiError` naming the field and decide nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

import pytest
from conftest import Api, Person, Server

from askbridge import ApiError, Client, Decision, Question, require_approval

SCHEMA = {
    "type": "object",
    "properties": {
        "env": {"type": "string", "enum": ["staging", "production"]},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
    },
    "required": ["env", "replicas"],
}
PROPOSED = {"env": "staging", "replicas": 2}
ALL: list[Decision] = ["once", "edit", "respond", "reject"]
#: How long an ask waits for the person's thread: a thread that failed ends the test (TimedOut)
#: instead of hanging it.
WAIT = 30.0


def deciding(
    server: Server, person: Person, session: str, decide: Callable[[Client, str], object]
) -> tuple[threading.Thread, list[object]]:
    """In a thread, as the person: once ``session`` has a pending approval, ``decide(client,
    id)`` with a client of its own; what it returned or raised goes in the list."""
    results: list[object] = []

    def run() -> None:
        with Client(server.url) as client:
            try:
                results.append(decide(client, person.pending(session)["id"]))
            except Exception as error:
                results.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, results


def refused(client: Client, question_id: str, decision: Decision, **reply: Any) -> ApiError:
    with pytest.raises(ApiError) as error:
        client.decide(question_id, decision, **reply)
    assert error.value.status == 422, error.value
    return error.value


def test_an_edit_is_checked_against_the_schema_and_comes_back_to_run(
    api: Api, server: Server, person: Person
) -> None:
    def decide(client: Client, question_id: str) -> object:
        breaking = refused(client, question_id, "edit", args={"env": "production", "replicas": 11})
        unknown = refused(client, question_id, "edit", args={**PROPOSED, "force": True})
        still = client.get_question(question_id)
        edited = client.decide(question_id, "edit", args={"env": "production", "replicas": 3})
        return breaking, unknown, still, edited

    thread, results = deciding(server, person, api.session, decide)
    approval = api.approve(
        "deploy", PROPOSED, allowed=ALL, args_schema=SCHEMA, answerers=["api"], timeout_s=WAIT
    )
    thread.join(10)
    [(breaking, unknown, still, edited)] = cast(
        list[tuple[ApiError, ApiError, Question, Question]], results
    )
    assert breaking.field == "args.replicas", breaking
    assert "from 1 to 10" in breaking.error
    assert unknown.field == "args.force", unknown
    assert still.pending, "a refused edit decided nothing"
    assert still.allowed == ALL
    assert still.args_schema == SCHEMA

    assert approval.decision == "edit"
    assert approval.edited
    assert not approval.responded
    assert approval.args == {"env": "production", "replicas": 3}
    assert approval.text is None
    assert approval.rule_id is None
    resolution = approval.question.resolution
    assert resolution is not None
    assert resolution.edited is not None
    assert resolution.edited["proposed"]["args"] == PROPOSED
    assert resolution.edited["approved"]["args"] == approval.args
    assert isinstance(edited, Question)
    assert edited.status == "answered"
    assert edited.resolution is not None
    assert edited.resolution.value == "edit"


def test_a_response_is_the_tools_result(api: Api, server: Server, person: Person) -> None:
    thread, results = deciding(
        server,
        person,
        api.session,
        lambda client, q: client.decide(q, "respond", text="use the blue one"),
    )
    approval = api.approve(
        "ask_user", {"question": "Which colour?"}, allowed=ALL, answerers=["api"], timeout_s=WAIT
    )
    thread.join(10)
    assert isinstance(results[0], Question), results
    assert approval.responded
    assert not approval.edited
    assert approval.text == "use the blue one"
    assert approval.args is None


def test_once_still_runs_the_proposed_arguments(api: Api, server: Server, person: Person) -> None:
    thread, _ = deciding(server, person, api.session, lambda c, q: c.decide(q, "once"))
    approval = api.approve("deploy", PROPOSED, allowed=ALL, answerers=["api"], timeout_s=WAIT)
    thread.join(10)
    assert approval.decision == "once"
    assert approval.args == PROPOSED
    assert not approval.edited
    assert not approval.responded


def test_a_decision_not_offered_is_refused_and_decides_nothing(
    server: Server, person: Person
) -> None:
    with Client(server.url, session="decisions-refused") as client:
        question = client.create_question(
            {
                "kind": "approval",
                "prompt": "Deploy?",
                "answerers": ["api"],
                "action": {"tool": "deploy", "args": PROPOSED},
                "allowed": ["once", "reject"],
            }
        )
        for decision, reply in (("edit", {"args": PROPOSED}), ("respond", {"text": "no"})):
            error = refused(client, question.id, decision, **reply)  # type: ignore[arg-type]
            assert f'does not offer "{decision}"' in error.error, error
            assert "choose once or reject. Nothing was decided." in error.error, error
        assert client.get_question(question.id).pending
        decided = client.decide(question.id, "reject", message="not today")
        assert decided.status == "declined"
        assert decided.resolution is not None
        assert decided.resolution.message == "not today"


def test_a_decorated_function_runs_with_the_edited_arguments(
    server: Server, person: Person
) -> None:
    client = Client(server.url, session="decorator-edit")
    ran: list[tuple[str, int]] = []

    @require_approval(
        client=client, answerers=["api"], allowed=ALL[:2], args_schema=SCHEMA, timeout_s=WAIT
    )
    def deploy(env: str, replicas: int = 2) -> str:
        ran.append((env, replicas))
        return env

    thread, _ = deciding(
        server,
        person,
        client.session,
        lambda c, q: c.decide(q, "edit", args={"env": "staging", "replicas": 4}),
    )
    assert deploy("staging") == "staging"
    thread.join(10)
    assert ran == [("staging", 4)]
    client.close()


def test_a_decorated_function_cannot_be_answered_in_its_place() -> None:
    with pytest.raises(TypeError, match="respond"):

        @require_approval(allowed=ALL)
        def deploy() -> None: ...
