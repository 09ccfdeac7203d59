"""LangGraph's anchor for askbridge's follow-up runs: the same three-question flow (a choice, free
text, a yes/no) as askbridge's example `release` flow, written as a LangGraph graph that pauses on
`interrupt()` and resumes with `Command(resume=...)` on the in-memory checkpointer.

Prints one line: `resumes_per_s <float>` over `--runs N` runs (three resumes each).
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


def build():
    graph = StateGraph(Release)
    for name, node in [("channel", ask_channel), ("notes", ask_notes), ("confirm", confirm), ("publish", publish)]:
        graph.add_node(name, node)
    graph.add_edge(START, "channel")
    graph.add_edge("channel", "notes")
    graph.add_edge("notes", "confirm")
    graph.add_edge("confirm", "publish")
    graph.add_edge("publish", END)
    return graph.compile(checkpointer=InMemorySaver())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=500)
    runs = parser.parse_args().runs
    app = build()
    answers = ["beta", "Faster.", True]
    started = time.perf_counter()
    for _ in range(runs):
        config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        app.invoke({"version": "2.0"}, config)
        for answer in answers:
            app.invoke(Command(resume=answer), config)
        assert app.get_state(config).values["result"].startswith("Published 2.0 on beta")
    elapsed = time.perf_counter() - started
    print(f"resumes_per_s {runs * len(answers) / elapsed:.1f}")


if __name__ == "__main__":
    main()
