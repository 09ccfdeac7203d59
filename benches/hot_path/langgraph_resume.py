"""LangGraph's anchor for askbridge's follow-up runs: the same three-question flow (a choice, free
text, a yes/no) as askbridge's example `release` flow, written as a LangGraph graph that pauses on
`interrupt()` and resumes with `Command(resume=...)` on the in-memory checkpointer.

Two shapes of the same flow, as a user may write it either way: `nodes`, a node per question (four
nodes with `publish`), and `one_node`, the three questions as ONE node with three `interrupt()`
calls. LangGraph re-runs an interrupted node from its top on each resume, replaying the earlier
interrupts' values, and checkpoints once per node: the one-node shape checkpoints less and runs
about twice as fast.

Prints one line per shape: `resumes_per_s <shape> <float>` over `--runs N` runs (three resumes
each), the shapes taking turns `--rounds` times (each line the sum over its rounds).
Run by benches/hot_path (scripts/bench makes the venv).
"""

import argparse
import time
import uuid
from typing import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class Release(TypedDict, total=False):
    version: str
    channel: str
    notes: str
    go: bool
    result: str


def ask_channel(state: Release) -> Release:
    return {"channel": interrupt(f"Release {state['version']} on which channel?")}


def ask_notes(state: Release) -> Release:
    return {"notes": interrupt("One line for the release notes?")}


def confirm(state: Release) -> Release:
    return {"go": interrupt(f"Publish {state['version']} on {state['channel']}?")}


def publish(state: Release) -> Release:
    if not state["go"]:
        return {"result": f"{state['version']} was not published."}
    return {"result": f"Published {state['version']} on {state['channel']}. Notes: {state['notes']}"}


def release(state: Release) -> Release:
    """The three questions in one node: on each resume LangGraph runs it again from the top, and
    each `interrupt()` already answered returns its recorded value."""
    channel = interrupt(f"Release {state['version']} on which channel?")
    notes = interrupt("One line for the release notes?")
    go = interrupt(f"Publish {state['version']} on {channel}?")
    return {"channel": channel, "notes": notes, "go": go}


def build_one_node():
    graph = StateGraph(Release)
    graph.add_node("release", release)
    graph.add_node("publish", publish)
    graph.add_edge(START, "release")
    graph.add_edge("release", "publish")
    graph.add_edge("publish", END)
    return graph.compile(checkpointer=InMemorySaver())


def build_nodes():
    graph = StateGraph(Release)
    for name, node in [("channel", ask_channel), ("notes", ask_notes), ("confirm", confirm), ("publish", publish)]:
        graph.add_node(name, node)
    graph.add_edge(START, "channel")
    graph.add_edge("channel", "notes")
    graph.add_edge("notes", "confirm")
    graph.add_edge("confirm", "publish")
    graph.add_edge("publish", END)
    return graph.compile(checkpointer=InMemorySaver())


def resume(app, runs):
    """Seconds `runs` runs of `app` took, each started and resumed three times."""
    answers = ["beta", "Faster.", True]
    started = time.perf_counter()
    for _ in range(runs):
        config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        app.invoke({"version": "2.0"}, config)
        for answer in answers:
            app.invoke(Command(resume=answer), config)
        assert app.get_state(config).values["result"].startswith("Published 2.0 on beta")
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    shapes = {"nodes": build_nodes(), "one_node": build_one_node()}
    spent = dict.fromkeys(shapes, 0.0)
    per_round = max(1, args.runs // args.rounds)
    for _ in range(args.rounds):
        for shape, app in shapes.items():
            spent[shape] += resume(app, per_round)
    for shape in shapes:
        print(f"resumes_per_s {shape} {per_round * args.rounds * 3 / spent[shape]:.1f}")


if __name__ == "__main__":
    main()
