"""The event stream as an iterator, across a restart of askbridge."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from conftest import Api, Person, Server

from askbridge import AsyncClient, Client, Event


def test_events_follow_a_session_and_reconnect(flavour: str, tmp_path: Path) -> None:
    server = Server(tmp_path, data_dir=tmp_path / "data")
    server.start()
    try:
        api = Api(flavour, server.url)
        first = api.create_question({"prompt": "First?"})
        person = Person(server.url)

        def restart_then_answer() -> None:
            time.sleep(0.5)
            server.stop()
            server.start()
            person.post(first.id, "reply", {"answer": "one"})

        seen: list[Event] = []

        def wanted(event: Event) -> bool:
            seen.append(event)
            return event.name == "question.replied"

        threading.Thread(target=restart_then_answer, daemon=True).start()
        if flavour == "sync":
            with Client(server.url, retry_every=0.2) as client:
                for event in client.events(api.session):
                    if wanted(event):
                        break
        else:

            async def follow() -> None:
                async with AsyncClient(server.url, retry_every=0.2) as client:
                    async for event in client.events(api.session):
                        if wanted(event):
                            break

            asyncio.run(follow())
        # The pending question is replayed on the first connect only: the reconnect's replay
        # of it was already seen.
        assert [e.name for e in seen] == ["question.asked", "question.replied"]
        assert seen[1].question is not None
        assert seen[1].question.answer() == "one"
    finally:
        server.stop()
