"""The event stream (``GET /api/events``): Server-Sent Events read a line at a time, a
reconnecting stream's story kept whole, and how long to wait before reconnecting. Apart from the
operations (:mod:`askbridge._core`): the clients read the stream themselves, with these parts.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ._requests import Request
from .errors import Unreachable
from .models import Event

if TYPE_CHECKING:
    from ._core import Core


class SseParser:
    """Server-Sent Events, a line at a time."""

    def __init__(self) -> None:
        self._name = "message"
        self._data: list[str] = []

    def feed(self, line: str) -> tuple[str, str] | None:
        """Takes one line (without its end); gives ``(name, data)`` when it ends an event."""
        if line == "":
            if not self._data:
                self._name = "message"
                return None
            event = (self._name, "\n".join(self._data))
            self._name, self._data = "message", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._name = value
        elif name == "data":
            self._data.append(value)
        return None


#: The event that ends a question, by the status it ends in.
ENDINGS = {
    "answered": "question.replied",
    "declined": "question.rejected",
    "expired": "question.expired",
    "cancelled": "question.cancelled",
}


def _remember(ids: OrderedDict[str, None], key: str) -> None:
    ids[key] = None
    if len(ids) > 10_000:
        ids.popitem(last=False)


class EventFilter:
    """Keeps a reconnecting stream's story whole: askbridge replays the pending questions on
    every connect, so a ``question.asked`` already seen is dropped; and a question that ended
    while the stream was away is reported from ``GET /api/history`` (:meth:`Core.missed`), its
    ending dropped if the live stream then sends it too. Remembers the last 10,000 of each."""

    def __init__(self) -> None:
        self.pending: OrderedDict[str, None] = OrderedDict()
        self._ended: OrderedDict[str, None] = OrderedDict()

    def fresh(self, event: Event) -> bool:
        if event.question is None:
            return True
        key = event.question.id
        if key in self._ended:
            return False
        if event.name == "question.asked":
            if key in self.pending:
                return False
            _remember(self.pending, key)
        elif event.name in ENDINGS.values():
            self.pending.pop(key, None)
            _remember(self._ended, key)
        return True


class Reconnect:
    """When the event stream drops: how long to wait before the next attempt, or
    :class:`Unreachable` once askbridge stayed away for ``unreachable_for``."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._since: float | None = None
        self._connects = 0

    def connected(self) -> bool:
        """Notes a connection; true when it is a reconnection (events may have been missed)."""
        self._since = None
        self._connects += 1
        return self._connects > 1

    def dropped(self, cause: str) -> float:
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if now - self._since >= self._core.unreachable_for:
            raise Unreachable(self._core.url, cause)
        return self._core.retry_every


def events_request(session_id: str | None) -> Request:
    return Request("GET", "/api/events", {"session_id": session_id} if session_id else {})


def parse_event(name: str, data: str) -> Event:
    try:
        value: Any = json.loads(data)
    except ValueError:
        value = data
    return Event.parse(name, value)
