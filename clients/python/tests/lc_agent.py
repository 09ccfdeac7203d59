"""A real LangChain agent for the bridge's tests, without network: ``create_agent`` with
``HumanInTheLoopMiddleware`` and a fake chat model that proposes two parallel tool calls, then
ends once it has their results. The model reads the conversation rather than a script, so a
fresh process resuming the thread gets the same answers from it.

Each tool that runs appends ``{"tool", "args"}`` to a JSON-lines file, so a test sees what ran,
and how often, across processes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.types import Checkpointer
from pydantic import Field

#: The tool calls the model proposes, in one turn.
PROPOSED = [
    {"name": "deploy", "args": {"env": "staging", "replicas": 2}, "id": "call_deploy"},
    {"name": "drop_table", "args": {"name": "sessions"}, "id": "call_drop"},
]

_record: list[Path] = []


def _ran(name: str, args: dict[str, Any]) -> None:
    with _record[-1].open("a") as out:
        out.write(json.dumps({"tool": name, "args": args}) + "\n")


@tool
def deploy(
    env: Literal["staging", "production"], replicas: Annotated[int, Field(ge=1, le=10)] = 2
) -> str:
    """Deploy the service."""
    _ran("deploy", {"env": env, "replicas": replicas})
    return f"deployed {env} with {replicas} replicas"


@tool
def drop_table(name: str) -> str:
    """Drop a database table."""
    _ran("drop_table", {"name": name})
    return f"dropped {name}"


TOOLS: list[BaseTool] = [deploy, drop_table]


class FakeModel(BaseChatModel):
    """Proposes ``proposed`` (:data:`PROPOSED`) to a question, and ends once the tools have
    answered."""

    proposed: list[dict[str, Any]] = PROPOSED

    @property
    def _llm_type(self) -> str:
        return "askbridge-test-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            message = AIMessage(content="done")
        else:
            message = AIMessage(content="", tool_calls=self.proposed)
        return ChatResult(generations=[ChatGeneration(message=message)])


def build(
    checkpointer: Checkpointer, record: Path, proposed: list[dict[str, Any]] = PROPOSED
) -> Any:
    """The agent: deploy offers every decision, drop_table only approve and reject."""
    _record.append(record)
    record.touch()
    interrupt_on: dict[str, Any] = {
        "deploy": True,
        "drop_table": {"allowed_decisions": ["approve", "reject"]},
    }
    review = HumanInTheLoopMiddleware(interrupt_on=interrupt_on)
    model = FakeModel(proposed=proposed)
    return create_agent(model, TOOLS, middleware=[review], checkpointer=checkpointer)


def ran(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def tool_results(result: Any) -> dict[str, str]:
    """The tool messages of an agent's final state, by tool name."""
    return {str(m.name): str(m.content) for m in result["messages"] if isinstance(m, ToolMessage)}
