"""Batches through the client on both sides: ``approve_actions`` asks one approval of several
actions and gets one typed decision per action, in order; the person decides action by action
with ``decide(..., action=n)``, and a refusal (a decision not offered, an action decided twice)
names the action and decides nothing."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from conftest import Api, Person, Server

from askbridge import ApiError, Client, ProposedAction, TimedOut

pytestmark = pytest.mark.usefixtures("batches")

SCHEMA = {
    "type": "object",
    "properties": {"replicas": {"type": "integer", "minimum": 1, "maximum": 10}},
    "required": ["replicas"],
}
BATCH: list[ProposedAction] = [
    {"tool": "deploy", "args": {"replicas": 2}, "allowed": ["once", "edit", "reject"]},
    {"tool": "shell", "args": {"command": "rm -rf build/"}},
    {"tool": "ask_user", "args": {"question": "Colour?"}, "allowed": ["respond", "reject"]},
]


def as_person(server: Server, person: Person, session: str, decide: Any) -> list[BaseException]:
    failures: list[BaseException] = []

    def run() -> None:
        try:
            with Client(server.url) as client:
                decide(client, person.pending(session)["id"])
        except BaseException as error:
            failures.append(error)

    threading.Thread(target=run, daemon=True).start()
    return failures


def test_each_action_gets_its_own_decision_in_order(
    api: Api, server: Server, person: Person
) -> None:
    def decide(client: Client, qid: str) -> None:
        with pytest.raises(ApiError) as refused:
            client.decide(qid, "always", action=1)
        assert refused.value.status == 422
        assert 'Action 1 does not offer "always"' in refused.value.error
        client.decide(qid, "edit", action=1, args={"replicas": 3})
        with pytest.raises(ApiError) as twice:
            client.decide(qid, "reject", action=1)
        assert twice.value.status == 409
        assert "Action 1 was decided already" in twice.value.error
        assert client.get_question(qid).pending
        client.decide(qid, "reject", action=2, message="too broad")
        client.decide(qid, "respond", action=3, text="blue")

    schema_batch: list[ProposedAction] = [{**BATCH[0], "args_schema": SCHEMA}, *BATCH[1:]]
    failures = as_person(server, person, api.session, decide)
    decided = api.approve_actions(schema_batch, answerers=["api"], timeout_s=30)
    assert failures == []
    assert [(d.action, d.decision) for d in decided] == [
        (1, "edit"),
        (2, "reject"),
        (3, "respond"),
    ]
    edit, reject, respond = decided
    assert edit.runs
    assert (edit.args, edit.proposed_args) == ({"replicas": 3}, {"replicas": 2})
    assert not reject.runs
    assert reject.message == "too broad"
    assert respond.text == "blue"
    assert respond.args is None
    assert {d.by for d in decided} == {"api"}


def test_a_batch_nobody_finished_deciding_times_out_with_what_was_decided(
    api: Api, server: Server, person: Person
) -> None:
    failures = as_person(
        server, person, api.session, lambda client, qid: client.decide(qid, "once", action=2)
    )
    with pytest.raises(TimedOut) as late:
        api.approve_actions(BATCH, answerers=["api"], timeout_s=3)
    assert failures == []
    question = late.value.question
    assert question.status == "expired"
    assert [(d.action, d.decision) for d in question.decided()] == [(2, "once")]
    assert [a.n for a in question.actions] == [1, 2, 3]
    assert question.digest is not None
