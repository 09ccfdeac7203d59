"""Reading askbridge's JSON: the small checks every model uses, in one place."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from .errors import AskbridgeError

JsonObject = dict[str, Any]


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time as askbridge writes it (``2026-12-06T03:53:10.192Z``)."""
    if not isinstance(value, str):
        return None
    # Python 3.10's fromisoformat does not read a trailing Z.
    return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)


def as_object(value: Any, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise AskbridgeError(f"unexpected answer shape: {what} is not a JSON object: {value!r}")
    return cast(JsonObject, value)


def req_str(raw: JsonObject, name: str) -> str:
    value = raw.get(name)
    if not isinstance(value, str):
        raise AskbridgeError(f"unexpected answer shape: `{name}` is not a string: {value!r}")
    return value


def opt_str(raw: JsonObject, name: str) -> str | None:
    value = raw.get(name)
    return value if isinstance(value, str) else None


def str_list(raw: JsonObject, name: str) -> list[str]:
    value = raw.get(name)
    if not isinstance(value, list):
        return []
    return [str(item) for item in value]


def objects(raw: JsonObject, name: str) -> list[JsonObject]:
    value = raw.get(name)
    if not isinstance(value, list):
        return []
    return [cast(JsonObject, item) for item in value if isinstance(item, dict)]
