"""@require_approval: the call's arguments are approved (or not) before the function runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import Person, Server

from askbridge import AsyncClient, Client, Rejected, require_approval


def test_an_approved_call_runs_with_its_arguments(server: Server, person: Person) -> None:
    client = Client(server.url, session="decorator-sync")
    ran: list[tuple[str, int]] = []

    @require_approval(client=client, answerers=["api"])
    def drop_table(name: str, keep_days: int = 7) -> str:
        ran.append((name, keep_days))
        return f"dropped {name}"

    seen: list[dict[str, Any]] = []

    def allow(q: dict[str, Any]) -> None:
        seen.append(q)
        person.post(q["id"], "reply", {"answer": "once", "digest": q["action"]["digest"]})

    person.later(client.session, allow)
    assert drop_table("users") == "dropped users"
    assert ran == [("users", 7)]
    assert seen[0]["action"]["tool"] == "drop_table"
    assert seen[0]["action"]["args"] == {"name": "users", "keep_days": 7}
    assert seen[0]["prompt"] == "Allow drop_table?"

    person.reject(client.session, "not the users table")
    with pytest.raises(Rejected) as rejected:
        drop_table("users", keep_days=0)
    assert rejected.value.message == "not the users table"
    assert ran == [("users", 7)]
    client.close()


def test_an_async_function_is_approved_or_rejected(server: Server, person: Person) -> None:
    ran: list[str] = []

    async def main() -> None:
        async with AsyncClient(server.url, session="decorator-async") as client:

            @require_approval(tool="deploy", prompt="Deploy?", client=client, answerers=["api"])
            async def deploy(env: str) -> str:
                ran.append(env)
                return env

            person.reply(client.session, "once")
            assert await deploy("staging") == "staging"
            person.reject(client.session, "freeze")
            with pytest.raises(Rejected, match="freeze"):
                await deploy("prod")

    asyncio.run(main())
    assert ran == ["staging"]


def test_the_client_must_fit_the_function(server: Server) -> None:
    with Client(server.url) as client, pytest.raises(TypeError, match="AsyncClient"):

        @require_approval(client=client)
        async def deploy() -> None: ...
