"""Creates retried safely: a create whose response is lost on the way back is sent again with
the same Idempotency-Key, and the server answers it with what the first one made."""

from __future__ import annotations

import httpx
from conftest import Person, Server

from askbridge import Client


class DropFirstResponse(httpx.BaseTransport):
    """Sends every request; the first response to a POST on ``path`` is dropped, as a cut
    connection would, after the server has handled it."""

    def __init__(self, path: str) -> None:
        self.inner = httpx.HTTPTransport()
        self.path = path
        self.dropped = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST" and request.url.path == self.path and not self.dropped:
            response.read()
            response.close()
            self.dropped += 1
            raise httpx.ReadError("connection cut before the response arrived", request=request)
        return response


def test_a_create_retried_after_a_dropped_response_makes_one_question(
    server: Server, person: Person
) -> None:
    transport = DropFirstResponse("/api/questions")
    with Client(server.url, session="retried-create", retry_every=0.05) as client:
        client._http = httpx.Client(base_url=server.url, transport=transport)
        created = client.create_question({"prompt": "Ship?", "options": ["yes", "no"]})
    assert transport.dropped == 1
    listed = person.http.get("/api/questions", params={"session_id": "retried-create"}).json()
    assert [q["id"] for q in listed["questions"]] == [created.id]
