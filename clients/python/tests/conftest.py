"""A real askbridge on a free loopback port, a person answering through its HTTP API, and the
client in both flavours (one suite, run against Client and AsyncClient).

The binary comes from ``ASKBRIDGE_BIN`` (the Rust suite sets it); without it, from the
workspace's ``target/debug/askbridge`` when that exists.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from askbridge import AsyncClient, Client

ROOT = Path(__file__).resolve().parents[3]

# A test run started in the background (`nohup`, `cmd &` in a script) inherits SIGINT ignored,
# and so would every process a test starts: Python then never raises KeyboardInterrupt, and the
# Ctrl-C tests would wait for a child that cannot be interrupted. A handler installed here is
# reset to the default in each child at exec, so children start as they would in a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def binary() -> str:
    given = os.environ.get("ASKBRIDGE_BIN")
    if given:
        return given
    built = ROOT / "target" / "debug" / "askbridge"
    if built.exists():
        return str(built)
    pytest.skip("no askbridge binary: set ASKBRIDGE_BIN")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """``askbridge serve`` (``--ephemeral`` unless ``data_dir`` is given), restartable on the same
    port."""

    def __init__(self, tmp: Path, data_dir: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        self.log = tmp / f"askbridge-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKBRIDGE_", "REDIS"))}
        env.update(
            ASKBRIDGE_HTTP_ADDR=f"127.0.0.1:{self.port}",
            ASKBRIDGE_EXAMPLE_FLOWS="true",
            RUST_LOG="warn",
        )
        args = [binary(), "serve"]
        if self.data_dir is None:
            args.append("--ephemeral")
        else:
            env["ASKBRIDGE_DATA_DIR"] = str(self.data_dir)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(args, env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"askbridge exited: {self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"askbridge did not start: {self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("askbridge"))
    running.start()
    yield running
    running.stop()


class Person:
    """Plays the person: finds the question a session asked and answers it over HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=10)

    def pending(self, session: str, within: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            try:
                listed = self.http.get("/api/questions", params={"session_id": session})
                questions = listed.json()["questions"]
                if questions:
                    found: dict[str, Any] = questions[0]
                    return found
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"no question pending in session {session}")

    def post(self, question_id: str, what: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(f"/api/questions/{question_id}/{what}", json=body)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    def later(self, session: str, act: Callable[[dict[str, Any]], object]) -> threading.Thread:
        """In a thread: once ``session`` has a pending question, ``act(question)``."""

        def run() -> None:
            act(self.pending(session))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def reply(self, session: str, answer: Any, after: float = 0.0, **more: Any) -> threading.Thread:
        def act(q: dict[str, Any]) -> None:
            time.sleep(after)
            self.post(q["id"], "reply", {"answer": answer, **more})

        return self.later(session, act)

    def reject(self, session: str, message: str) -> threading.Thread:
        return self.later(session, lambda q: self.post(q["id"], "reject", {"message": message}))


@pytest.fixture
def batches(server: Server) -> None:
    """Skips where askbridge takes no batch approvals (issue 33) yet, saying so."""
    spec = httpx.get(f"{server.url}/api/openapi.json").json()
    if "actions" not in spec["components"]["schemas"]["Question"]["properties"]:
        pytest.skip("this askbridge has no batch approvals (issue 33) yet")


@pytest.fixture
def person(server: Server) -> Iterator[Person]:
    played = Person(server.url)
    yield played
    played.http.close()


class Api:
    """One client surface, called the same way whichever flavour: ``api.ask(...)`` runs
    ``Client.ask`` or awaits ``AsyncClient.ask`` (each call in a fresh event loop)."""

    def __init__(self, flavour: str, url: str, **options: Any) -> None:
        self.flavour = flavour
        self.url = url
        self.session = f"test-{secrets.token_hex(4)}"
        self.options = options

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.flavour == "sync":
                with Client(self.url, session=self.session, **self.options) as client:
                    return getattr(client, name)(*args, **kwargs)

            async def go() -> Any:
                async with AsyncClient(self.url, session=self.session, **self.options) as client:
                    return await getattr(client, name)(*args, **kwargs)

            return asyncio.run(go())

        return call


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.fixture
def api(flavour: str, server: Server) -> Api:
    return Api(flavour, server.url)
