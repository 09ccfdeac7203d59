"""The LangChain bridge against a real askbridge: a real agent (``create_agent`` with
``HumanInTheLoopMiddleware``, a fake model proposing two parallel tool calls) whose interrupt is
one askbridge approval decided action by action; the agent's process exiting while it waits and
a fresh process resuming the thread from a sqlite checkpointer; a timeout; and a plain
``interrupt()`` in a custom graph."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import httpx
import lc_agent
import pytest
from conftest import ROOT, Person, Server
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from askbridge import AsyncClient, Client
from askbridge._hitl import thread_session
from askbridge.langchain import AsyncReviewer, Reviewer

TESTS = Path(__file__).resolve().parent
ASK = {"messages": [{"role": "user", "content": "Ship it and clean up"}]}
REVIEW: dict[str, Any] = {"tools": lc_agent.TOOLS, "answerers": ["api"]}


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def deciding(
    server: Server, person: Person, thread: str, decide: Callable[[Client, dict[str, Any]], None]
) -> tuple[threading.Thread, list[BaseException]]:
    """In a thread, as the person: once the thread's approval is pending, ``decide`` it."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            with Client(server.url) as client:
                decide(client, person.pending(thread_session(thread), within=60))
        except BaseException as error:
            failures.append(error)

    thread_ = threading.Thread(target=run, daemon=True)
    thread_.start()
    return thread_, failures


def reviewed(
    flavour: str, server: Server, graph: Any, input: Any, thread: str, **options: Any
) -> Any:
    """``graph`` run on ``input`` by a :class:`Reviewer`, or an :class:`AsyncReviewer`."""
    if flavour == "sync":
        with Client(server.url) as client:
            return Reviewer(client, **options).invoke(graph, input, config(thread))

    async def go() -> Any:
        async with AsyncClient(server.url) as client:
            return await AsyncReviewer(client, **options).invoke(graph, input, config(thread))

    return asyncio.run(go())


def only_question(server: Server, thread: str) -> dict[str, Any]:
    """The one question the thread asked (none is pending; exactly one resolved)."""
    session = thread_session(thread)
    pending = httpx.get(f"{server.url}/api/questions", params={"session_id": session}).json()
    history = httpx.get(f"{server.url}/api/history", params={"session_id": session}).json()
    assert pending["questions"] == []
    assert len(history["questions"]) == 1, history
    found: dict[str, Any] = history["questions"][0]
    return found


def transcript(question: dict[str, Any], results: dict[str, str]) -> str:
    lines = ["The model proposed (one turn, parallel tool calls):"]
    lines += [f"  {c['name']}({json.dumps(c['args'])})" for c in lc_agent.PROPOSED]
    lines.append(f"askbridge asked ({question['id']}, batch digest #{question['digest']}):")
    lines.append(f"  {question['prompt']}")
    for action in question["actions"]:
        lines.append(
            f"  {action['n']}. {action['tool']} {json.dumps(action['args'])} "
            f"#{action['digest']}  offers: {', '.join(action['allowed'])}"
            + ("  (edited field by field)" if action.get("args_schema") else "")
        )
    lines.append("The person decided:")
    for d in question["resolution"]["decisions"]:
        said = {k: d[k] for k in ("args", "proposed_args", "message", "text") if k in d}
        lines.append(f"  {d['action']}. {d['decision']} by {d['by']} via {d['via']} {said}")
    lines.append(f"  outcome: {question.get('outcome')}")
    lines.append("The tools answered:")
    lines += [f"  {name}: {text}" for name, text in results.items()]
    return "\n".join(lines)


def edit_deploy_reject_drop(client: Client, question: dict[str, Any]) -> None:
    assert [a["tool"] for a in question["actions"]] == ["deploy", "drop_table"]
    client.decide(question["id"], "edit", action=1, args={"env": "production", "replicas": 3})
    client.decide(question["id"], "reject", action=2, message="keep the sessions")


@pytest.mark.usefixtures("batches")
def test_an_agents_tool_calls_are_one_approval_decided_action_by_action(
    flavour: str, server: Server, person: Person, tmp_path: Path
) -> None:
    record = tmp_path / "ran.jsonl"
    agent = lc_agent.build(InMemorySaver(), record)
    thread = f"agent-{flavour}-{tmp_path.name}"
    waiting, failures = deciding(server, person, thread, edit_deploy_reject_drop)
    result = reviewed(flavour, server, agent, ASK, thread, **REVIEW, timeout_s=60)
    waiting.join(10)
    assert failures == []

    assert lc_agent.ran(record) == [
        {"tool": "deploy", "args": {"env": "production", "replicas": 3}}
    ]
    results = lc_agent.tool_results(result)
    assert results["deploy"].endswith("deployed production with 3 replicas"), results
    assert "replaced this tool call" in results["deploy"]
    assert (
        (results["drop_table"])
        == "User rejected the tool call for `drop_table` with reason: keep the sessions"
    )
    question = only_question(server, thread)
    deploy, drop = question["actions"]
    assert deploy["allowed"] == ["once", "always", "edit", "respond", "reject"]
    assert drop["allowed"] == ["once", "always", "reject"]
    assert deploy["args_schema"]["properties"]["replicas"]["maximum"] == 10
    assert "args_schema" not in drop
    text = transcript(question, results)
    print(text)
    if flavour == "sync":
        artifacts = ROOT / "target" / "test-artifacts"
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "langchain-transcript.txt").write_text(text + "\n")


AGENT_PROCESS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import lc_agent
from pathlib import Path
from langgraph.checkpoint.sqlite import SqliteSaver
from askbridge import Client
from askbridge.langchain import Reviewer
_, _, url, db, thread, record, mode = sys.argv
with SqliteSaver.from_conn_string(db) as saver, Client(url) as client:
    agent = lc_agent.build(saver, Path(record))
    reviewer = Reviewer(client, tools=lc_agent.TOOLS, answerers=["api"], timeout_s=600)
    start = {"messages": [{"role": "user", "content": "Ship it and clean up"}]}
    result = reviewer.invoke(agent, start if mode == "start" else None,
                             {"configurable": {"thread_id": thread}})
    print(json.dumps(lc_agent.tool_results(result)))
"""


@pytest.mark.usefixtures("batches")
def test_a_new_process_resumes_the_thread_when_the_answer_comes(
    server: Server, person: Person, tmp_path: Path
) -> None:
    db, record, thread = tmp_path / "checkpoints.sqlite", tmp_path / "ran.jsonl", "durable"

    def agent(mode: str) -> list[str]:
        script = [sys.executable, "-c", AGENT_PROCESS, str(TESTS), server.url]
        return [*script, str(db), thread, str(record), mode]

    first = subprocess.Popen(agent("start"), stderr=subprocess.DEVNULL)
    try:
        question = person.pending(thread_session(thread), within=60)
        # The agent's process ends (Ctrl-C) while the person takes their time.
        first.send_signal(signal.SIGINT)
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode != 0
    assert lc_agent.ran(record) == []
    assert person.pending(thread_session(thread))["id"] == question["id"], "still pending"

    person.post(
        question["id"],
        "reply",
        {
            "decisions": [{"action": 1, "decision": "once"}, {"action": 2, "decision": "once"}],
            "digest": question["digest"],
        },
    )
    second = subprocess.run(agent("resume"), capture_output=True, timeout=120, check=False)
    assert second.returncode == 0, second.stderr.decode()
    results = json.loads(second.stdout)
    assert results == {
        "deploy": "deployed staging with 2 replicas",
        "drop_table": "dropped sessions",
    }
    assert sorted(lc_agent.ran(record), key=lambda r: r["tool"]) == [
        {"tool": "deploy", "args": {"env": "staging", "replicas": 2}},
        {"tool": "drop_table", "args": {"name": "sessions"}},
    ], "each ran once (in parallel: in either order)"
    assert only_question(server, thread)["id"] == question["id"], "asked once, across processes"


@pytest.mark.usefixtures("batches")
def test_what_nobody_decided_in_time_is_rejected(
    server: Server, person: Person, tmp_path: Path
) -> None:
    record = tmp_path / "ran.jsonl"
    agent = lc_agent.build(InMemorySaver(), record)
    thread = f"late-{tmp_path.name}"

    def approve_drop_only(client: Client, question: dict[str, Any]) -> None:
        client.decide(question["id"], "once", action=2)

    waiting, failures = deciding(server, person, thread, approve_drop_only)
    result = reviewed("sync", server, agent, ASK, thread, **REVIEW, timeout_s=4)
    waiting.join(10)
    assert failures == []
    results = lc_agent.tool_results(result)
    assert results["deploy"].startswith("User rejected the tool call for `deploy` with reason: ")
    assert "Nobody decided in time" in results["deploy"], results
    assert "so `deploy` was not run" in results["deploy"]
    assert lc_agent.ran(record) == [{"tool": "drop_table", "args": {"name": "sessions"}}]
    assert only_question(server, thread)["status"] == "expired"


@pytest.mark.usefixtures("batches")
def test_arguments_breaking_the_tools_schema_are_asked_without_it(
    server: Server, person: Person, tmp_path: Path
) -> None:
    too_many = [{**lc_agent.PROPOSED[0], "args": {"env": "staging", "replicas": 20}}]
    agent = lc_agent.build(InMemorySaver(), tmp_path / "ran.jsonl", too_many)
    thread = f"unfit-{tmp_path.name}"

    def reject(client: Client, question: dict[str, Any]) -> None:
        assert "args_schema" not in question["actions"][0]
        client.decide(question["id"], "reject", action=1, message="20 is too many")

    waiting, failures = deciding(server, person, thread, reject)
    result = reviewed("sync", server, agent, ASK, thread, **REVIEW, timeout_s=60)
    waiting.join(10)
    assert failures == []
    assert lc_agent.tool_results(result)["deploy"].endswith("with reason: 20 is too many")
    assert only_question(server, thread)["actions"][0]["args"]["replicas"] == 20


class Release(TypedDict, total=False):
    version: str
    note: str


def release_graph() -> Any:
    def choose(state: Release) -> Release:
        version = interrupt({"question": "Which version goes out?", "options": ["1.4", "1.5"]})
        note = interrupt("Anything to tell the team?")
        return {"version": version, "note": note}

    graph = StateGraph(Release)
    graph.add_node("choose", choose)
    graph.add_edge(START, "choose")
    graph.add_edge("choose", END)
    return graph.compile(checkpointer=InMemorySaver())


def test_a_plain_interrupt_is_asked_and_resumed_with_the_answer(
    flavour: str, server: Server, person: Person, tmp_path: Path
) -> None:
    thread = f"plain-{flavour}-{tmp_path.name}"
    session = thread_session(thread)
    answers = ["1.5", "ship it friday"]

    def answer() -> None:
        for value in answers:
            question = person.pending(session, within=60)
            person.post(question["id"], "reply", {"answer": value})

    person_thread = threading.Thread(target=answer, daemon=True)
    person_thread.start()
    graph = release_graph()
    result = reviewed(flavour, server, graph, {}, thread, answerers=["api"])
    person_thread.join(10)
    assert result == {"version": "1.5", "note": "ship it friday"}
    history = httpx.get(f"{server.url}/api/history", params={"session_id": session}).json()
    prompts = sorted(q["prompt"] for q in history["questions"])
    assert prompts == ["Anything to tell the team?", "Which version goes out?"]
