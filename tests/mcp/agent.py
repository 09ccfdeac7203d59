"""An agent session driven by the official MCP Python SDK (a client no one here wrote).

Usage: agent.py stdio <askbridge binary> <askbridge URL>
       agent.py http <askbridge URL>

Runs one scenario of tool calls and prints one JSON line per step on stdout; the Rust test that
starts it plays the person (taps on the fake Telegram, replies over HTTP) and checks the lines.
Each prompt ends with what the person is to do, in brackets.
"""

import asyncio
import json
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def say(step, result, **extra):
    text = result.content[0].text if result.content else ""
    line = {"step": step, "text": text, "error": bool(result.is_error)}
    line.update(structured=result.structured_content, **extra)
    print(json.dumps(line), flush=True)


async def scenario(session: ClientSession, transport: str):
    init = await session.initialize()
    print(json.dumps({"step": "init", "protocol": init.protocol_version,
                      "server": init.server_info.name}), flush=True)
    tools = await session.list_tools()
    print(json.dumps({"step": "tools", "names": sorted(t.name for t in tools.tools)}), flush=True)

    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    result = await session.call_tool(
        "ask_user",
        {"prompt": f"Which library? [{transport}: tap luxon]", "options": ["dayjs", "luxon"],
         "targets": ["telegram:-100200"]},
        progress_callback=on_progress,
    )
    say("ask", result, progress=len(progress))

    result = await session.call_tool(
        "confirm", {"prompt": f"Ship it? [{transport}: reply yes]", "wait": False})
    say("pending", result)
    question_id = result.structured_content["id"]
    result = await session.call_tool("get_answer", {"id": question_id, "wait_s": 30})
    say("get_answer", result)

    result = await session.call_tool(
        "ask_user", {"prompt": f"Rename the table? [{transport}: decline]"})
    say("declined", result)

    result = await session.call_tool(
        "ask_user", {"prompt": f"Size? [{transport}: nothing]", "options": ["S", "M"],
                     "timeout_s": 1, "default": "M"})
    say("timeout", result)

    result = await session.call_tool(
        "request_approval",
        {"tool": "shell", "args": {"command": "make release"}, "answerers": ["api"],
         "prompt": f"Run make release? [{transport}: allow once with digest]"})
    say("approval", result)

    result = await session.call_tool(
        "request_approval",
        {"tool": "deploy", "args": {"env": "staging", "replicas": 2}, "answerers": ["api"],
         "allowed": ["once", "edit", "reject"],
         "args_schema": {"type": "object", "properties": {
             "env": {"type": "string", "enum": ["staging", "production"]},
             "replicas": {"type": "integer", "minimum": 1, "maximum": 10}}},
         "wait": False,
         "prompt": f"Deploy? [{transport}: edit replicas to 3]"})
    question_id = result.structured_content["id"]
    result = await session.call_tool("get_answer", {"id": question_id, "wait_s": 30})
    say("edited", result)


async def main():
    transport = sys.argv[1]
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.argv[2], args=["mcp", "--progress-s", "0.5"],
            env={"ASKBRIDGE_URL": sys.argv[3], "ASKBRIDGE_SESSION": "python-stdio"})
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await scenario(session, transport)
    else:
        async with streamable_http_client(sys.argv[2].rstrip("/") + "/mcp") as (read, write, *_):
            async with ClientSession(read, write) as session:
                await scenario(session, transport)


asyncio.run(main())
