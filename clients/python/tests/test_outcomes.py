"""Every outcome of every kind of question, sync and async alike."""

from __future__ import annotations

import dataclasses
import time
from typing import Literal

import httpx
import pytest
from conftest import Api, Person, Server

from askbridge import (
    ApiError,
    Cancelled,
    Client,
    Declined,
    Rejected,
    TimedOut,
    Unreachable,
)


def test_a_choice_is_answered(api: Api, person: Person) -> None:
    person.reply(api.session, "LUXON", by="ops:alice")
    assert api.ask("Which date library?", ["dayjs", "luxon"]) == "luxon"


def test_several_choices(api: Api, person: Person) -> None:
    person.reply(api.session, ["a", "c"])
    assert api.ask("Which ones?", ["a", "b", "c"], multi=True) == ["a", "c"]


def test_free_text(api: Api, person: Person) -> None:
    person.reply(api.session, "call it Aurora")
    assert api.ask("What should the release be called?") == "call it Aurora"


def test_custom_text_beside_options(api: Api, person: Person) -> None:
    person.reply(api.session, "moment")
    assert api.ask("Which library?", ["dayjs"], allow_custom=True) == "moment"


@pytest.mark.parametrize("answer", [True, False])
def test_confirm(api: Api, person: Person, answer: bool) -> None:
    person.reply(api.session, answer)
    assert api.confirm("Archive all 87 emails?") is answer


def test_declined_carries_the_message(api: Api, person: Person) -> None:
    person.reject(api.session, "not during the freeze")
    with pytest.raises(Declined) as declined:
        api.ask("Deploy now?", ["yes", "later"])
    assert declined.value.message == "not during the freeze"
    assert declined.value.question.status == "declined"
    assert not isinstance(declined.value, Rejected)


def test_timed_out_without_default(api: Api) -> None:
    with pytest.raises(TimedOut) as late:
        api.ask("Anyone?", ["a", "b"], timeout_s=0.3)
    assert late.value.default_used is False
    assert late.value.default is None


def test_timed_out_with_the_default(api: Api) -> None:
    with pytest.raises(TimedOut) as late:
        api.ask("Anyone?", ["a", "b"], timeout_s=0.3, default="b")
    assert late.value.default_used is True
    assert late.value.default == "b"
    with pytest.raises(TimedOut) as late_multi:
        api.ask("Which?", ["a", "b"], multi=True, timeout_s=0.3, default=["a", "b"])
    assert late_multi.value.default == ["a", "b"]
    with pytest.raises(TimedOut) as late_confirm:
        api.confirm("Go?", timeout_s=0.3, default=False)
    assert late_confirm.value.default is False


def test_cancelled_by_someone_else(api: Api, person: Person, server: Server) -> None:
    def cancel_session(q: dict[str, object]) -> None:
        httpx.post(
            f"{server.url}/api/sessions/{api.session}/cancel", json={"reason": "the run ended"}
        )

    person.later(api.session, cancel_session)
    with pytest.raises(Cancelled) as cancelled:
        api.ask("Still there?")
    assert cancelled.value.message == "the run ended"


def test_approval_allowed_once_and_rejected(api: Api, person: Person) -> None:
    seen: list[dict[str, object]] = []

    def allow(q: dict[str, object]) -> None:
        seen.append(q)
        person.post(str(q["id"]), "reply", {"answer": "once", "digest": q["action"]["digest"]})  # type: ignore[index]

    person.later(api.session, allow)
    approval = api.approve("shell", {"command": "rm -rf build/"}, answerers=["api"])
    assert approval.decision == "once"
    assert seen[0]["action"]["args"] == {"command": "rm -rf build/"}  # type: ignore[index]
    assert approval.question.action.digest == seen[0]["action"]["digest"]  # type: ignore[index]

    person.later(
        api.session,
        lambda q: person.post(q["id"], "reply", {"answer": "reject", "message": "keep build/"}),
    )
    with pytest.raises(Rejected) as rejected:
        api.approve("shell", {"command": "rm -rf build/"}, answerers=["api"])
    assert rejected.value.message == "keep build/"


def test_always_makes_a_rule_listed_revoked_and_audited(api: Api, person: Person) -> None:
    args = {"workspace": f"prod-{api.session}"}
    person.reply(api.session, "always")
    first = api.approve("terraform", args, answerers=["api"])
    assert first.decision == "always"
    assert first.rule_id is not None
    # The rule allows the same action again without asking anyone.
    again = api.approve("terraform", args, answerers=["api"])
    assert again.decision == "rule"
    rules = {rule.id: rule for rule in api.rules()}
    assert rules[first.rule_id].action is not None
    assert rules[first.rule_id].action.args == args
    api.revoke_rule(first.rule_id)
    assert first.rule_id not in {rule.id for rule in api.rules()}
    entries = api.audit(session_id=api.session)
    assert {e.question_id for e in entries} >= {first.question.id, again.question.id}
    assert any(e.event == "resolved" and e.value == "always" for e in entries)


@dataclasses.dataclass
class Deploy:
    environment: Literal["staging", "production"]
    replicas: int = dataclasses.field(metadata={"title": "Replicas", "minimum": 1})
    notify: bool = False
    note: str | None = None


def test_a_form_as_a_dict_and_as_a_dataclass(api: Api, person: Person) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "e": {"type": "string", "enum": ["x", "y"]}},
        "required": ["n"],
    }
    person.reply(api.session, {"n": 3, "e": "y"})
    assert api.form("Numbers?", schema) == {"n": 3, "e": "y"}

    person.reply(api.session, {"environment": "staging", "replicas": 2})
    deploy = api.form("Deploy settings?", Deploy)
    assert deploy == Deploy(environment="staging", replicas=2, notify=False, note=None)


def test_a_wait_outlives_client_timeouts(flavour: str, server: Server, person: Person) -> None:
    # Each long poll is cut by the client after 0.3 s; the wait goes on until the answer.
    api = Api(flavour, server.url, poll_s=1.0, read_timeout=0.3)
    person.reply(api.session, "b", after=1.5)
    started = time.monotonic()
    assert api.ask("Which?", ["a", "b"]) == "b"
    assert time.monotonic() - started >= 1.5


def test_another_process_picks_a_question_up_by_id(api: Api, person: Person) -> None:
    created = api.create_question({"prompt": "Which?", "options": ["a", "b"]})
    assert created.pending
    assert api.wait(created.id, timeout=0.2).pending
    person.reply(api.session, "a")
    resolved = api.wait(created.id)
    assert resolved.answer() == "a"
    assert resolved.resolution is not None
    assert resolved.resolution.by == "api"
    assert api.get_question(created.id).status == "answered"


def test_cancel_withdraws_and_is_idempotent(api: Api) -> None:
    created = api.create_question({"prompt": "Which?", "options": ["a", "b"]})
    assert [q.id for q in api.list_questions(session_id=api.session)] == [created.id]
    cancelled = api.cancel(created.id, "changed my mind")
    assert cancelled.status == "cancelled"
    with pytest.raises(Cancelled):
        cancelled.answer()
    assert api.cancel(created.id).status == "cancelled"
    assert api.cancel_session() == 0


def test_a_run_is_started_waited_on_and_answered(api: Api) -> None:
    run = api.start_run("release", "2.0.0", wait_s=10)
    assert run.state == "waiting"
    assert run.question is not None
    assert run.question.options == ["stable", "beta", "nightly"]
    run = api.answer_run(run.id, "beta", question_id=run.question.id, timeout_s=10)
    assert run.question is not None
    assert run.question.prompt == "One line for the release notes?"
    first = run.question.id
    api.reply(first, "faster")
    run = api.wait_run(run.id, after=first)
    assert run.question is not None
    assert run.question.kind == "confirm"
    run = api.answer_run(run.id, True, timeout_s=10)
    assert run.state == "done", run
    assert run.result is not None
    assert run.result.startswith("Published 2.0.0 on beta")
    assert api.get_run(run.id).state == "done"


def test_refusals_are_failures_naming_the_field(api: Api) -> None:
    with pytest.raises(ApiError) as refused:
        api.approve("shell", {"command": "ls"})  # no approvers anywhere
    assert refused.value.status == 422
    assert refused.value.field == "answerers"


def test_nobody_there_is_a_failure_said_once(flavour: str) -> None:
    from conftest import free_port

    api = Api(flavour, f"http://127.0.0.1:{free_port()}", unreachable_for=0.5, retry_every=0.1)
    with pytest.raises(Unreachable):
        api.ask("Anyone?")


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASKBRIDGE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("ASKBRIDGE_SESSION", "deploy-42")
    with Client() as client:
        assert client.url == "http://127.0.0.1:9"
        assert client.session == "deploy-42"
    monkeypatch.delenv("ASKBRIDGE_URL")
    monkeypatch.setenv("ASKBRIDGE_HTTP_ADDR", "127.0.0.1:7000")
    monkeypatch.delenv("ASKBRIDGE_SESSION")
    with Client() as client:
        assert client.url == "http://127.0.0.1:7000"
        assert client.session.startswith("py-")
