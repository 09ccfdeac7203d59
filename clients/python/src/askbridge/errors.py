"""Outcomes and failures, kept apart.

A question nobody answered ends in an outcome every asker handles: :class:`Declined`,
:class:`TimedOut` or :class:`Cancelled` (all :class:`NoAnswer`). A call that could not be made
(askbridge unreachable, a refused request) raises :class:`AskbridgeError`. Neither is ever
``None`` or an empty string standing for "nobody answered".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import Question


class NoAnswer(Exception):
    """The question ended without an answer. ``question`` is the resolved question."""

    def __init__(self, text: str, question: Question) -> None:
        super().__init__(text)
        self.question = question


class Declined(NoAnswer):
    """The person declined (or rejected an approval); ``message`` is what they said, if anything."""

    def __init__(self, question: Question) -> None:
        resolution = question.resolution
        self.message: str | None = resolution.message if resolution else None
        self.by: str | None = resolution.by if resolution else None
        text = "Declined" + (f": {self.message}" if self.message else "")
        super().__init__(text, question)


class Rejected(Declined):
    """An approval was rejected; ``message`` is the person's feedback."""


class TimedOut(NoAnswer):
    """Nobody answered in time.

    When the question had a default, askbridge used it: ``default_used`` is true and ``default``
    holds it (for a ``multi`` question a list, for a confirm a bool).
    """

    def __init__(self, question: Question) -> None:
        resolution = question.resolution
        value = resolution.value if resolution else None
        self.default_used: bool = value is not None
        self.default: Any = value
        text = f"Nobody answered question {question.id} in time"
        if self.default_used:
            text += f"; the default was used: {value!r}"
        super().__init__(text, question)


class Cancelled(NoAnswer):
    """The question was withdrawn (its asker was interrupted, or its session was cancelled)."""

    def __init__(self, question: Question) -> None:
        resolution = question.resolution
        self.message: str | None = resolution.message if resolution else None
        text = f"Question {question.id} was cancelled" + (
            f": {self.message}" if self.message else ""
        )
        super().__init__(text, question)


class AskbridgeError(Exception):
    """A failure: the call could not be made or askbridge refused it."""


class Unreachable(AskbridgeError):
    """No askbridge answered at ``url`` (for longer than the client retries)."""

    def __init__(self, url: str, cause: str) -> None:
        super().__init__(f"cannot reach askbridge at {url}: {cause}")
        self.url = url


class ApiError(AskbridgeError):
    """askbridge answered with an error: ``status``, its one-line ``error`` and the ``field`` at
    fault when it names one."""

    def __init__(self, status: int, error: str, field: str | None, body: Any) -> None:
        text = f"askbridge answered {status}: {error}"
        if field:
            text += f" (field {field})"
        super().__init__(text)
        self.status = status
        self.error = error
        self.field = field
        self.body = body
