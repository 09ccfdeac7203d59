"""A long wait across a restart of askbridge, and Ctrl-C cancelling the question."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Api, Person, Server


def test_a_wait_survives_a_restart_of_askbridge(flavour: str, tmp_path: Path) -> None:
    server = Server(tmp_path, data_dir=tmp_path / "data")
    server.start()
    try:
        api = Api(flavour, server.url, poll_s=1.0, unreachable_for=30.0, retry_every=0.2)
        result: dict[str, Any] = {}

        def ask() -> None:
            try:
                result["answer"] = api.ask("Which version goes out?", ["1.4", "1.5"])
            except BaseException as error:  # reported below
                result["error"] = error

        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        person = Person(server.url)
        question = person.pending(api.session)
        server.stop()
        time.sleep(1.5)  # the client's polls fail meanwhile; it keeps trying
        server.start()
        person.post(question["id"], "reply", {"answer": "1.5"})
        asking.join(20)
        assert result == {"answer": "1.5"}
    finally:
        server.stop()


SCRIPT = """
import asyncio, sys
from askbridge import AsyncClient, Client
url, session, flavour = sys.argv[1:]
if flavour == "sync":
    with Client(url, session=session) as client:
        client.ask("Deploy?", ["yes", "no"])
else:
    async def main():
        async with AsyncClient(url, session=session) as client:
            await client.ask("Deploy?", ["yes", "no"])
    asyncio.run(main())
"""


def test_ctrl_c_cancels_the_question(flavour: str, server: Server, person: Person) -> None:
    session = f"ctrl-c-{flavour}"
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, server.url, session, flavour],
        stderr=subprocess.PIPE,
    )
    try:
        question = person.pending(session)
        time.sleep(0.3)  # inside the long poll
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=15)
    finally:
        if child.poll() is None:
            child.kill()
    assert b"KeyboardInterrupt" in stderr, stderr.decode()
    after = httpx.get(f"{server.url}/api/questions/{question['id']}").json()
    assert after["status"] == "cancelled"
    assert after["resolution"]["message"] == "the Python program that asked it was interrupted"


@pytest.mark.parametrize("flavour", ["sync"])
def test_a_process_that_dies_leaves_the_question_pending(
    flavour: str, server: Server, person: Person
) -> None:
    session = "killed"
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, server.url, session, flavour], stderr=subprocess.PIPE
    )
    question = person.pending(session)
    child.kill()
    child.wait(10)
    after = httpx.get(f"{server.url}/api/questions/{question['id']}").json()
    assert after["status"] == "pending"
