"""``@require_approval``: a function that runs only when a person approved that very call."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ParamSpec, TypeVar, cast, overload

from ._async import AsyncClient
from ._sync import Client

P = ParamSpec("P")
R = TypeVar("R")


def call_args(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The call's arguments by parameter name, defaults applied, as JSON (a value JSON cannot
    carry is shown by its ``repr``): what the person approves, and what the server digests."""
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    arguments: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        if name in ("self", "cls"):
            continue
        arguments[name] = value
    return json.loads(json.dumps(arguments, default=repr))


@overload
def require_approval(
    function: Callable[P, R],
) -> Callable[P, R]: ...


@overload
def require_approval(
    *,
    tool: str | None = None,
    prompt: str | None = None,
    client: Client | AsyncClient | None = None,
    targets: Sequence[str] | None = None,
    answerers: Sequence[str] | None = None,
    timeout_s: float | None = None,
    session: str | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def require_approval(
    function: Callable[P, R] | None = None,
    *,
    tool: str | None = None,
    prompt: str | None = None,
    client: Client | AsyncClient | None = None,
    targets: Sequence[str] | None = None,
    answerers: Sequence[str] | None = None,
    timeout_s: float | None = None,
    session: str | None = None,
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Each call asks a person to approve the action ``{tool, args}`` — ``tool`` defaults to the
    function's name, ``args`` are the call's arguments by name — and runs the function only once
    approved (once, always, or by an "always" rule). A rejection raises
    :class:`~askbridge.Rejected` with the person's feedback; a timeout :class:`~askbridge.TimedOut`.

    Works on plain and ``async`` functions. Without ``client`` each call makes one from the
    environment (``ASKBRIDGE_URL``, ``ASKBRIDGE_API_TOKEN``, ``ASKBRIDGE_SESSION``).
    """

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        name = tool or fn.__name__
        options: dict[str, Any] = {}
        for key, value in (
            ("targets", targets),
            ("answerers", answerers),
            ("timeout_s", timeout_s),
            ("session", session),
        ):
            if value is not None:
                options[key] = value

        is_async = inspect.iscoroutinefunction(fn)
        if client is not None and isinstance(client, AsyncClient) != is_async:
            wanted = "an AsyncClient" if is_async else "a Client"
            raise TypeError(f"@require_approval on {fn.__name__}: its client must be {wanted}")
        if is_async:
            async_fn = cast(Callable[P, Awaitable[Any]], fn)

            @functools.wraps(fn)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                action_args = call_args(fn, args, kwargs)
                if isinstance(client, AsyncClient):
                    await client.approve(name, action_args, prompt=prompt, **options)
                else:
                    async with AsyncClient() as own:
                        await own.approve(name, action_args, prompt=prompt, **options)
                return await async_fn(*args, **kwargs)

            return cast(Callable[P, R], run_async)

        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            action_args = call_args(fn, args, kwargs)
            if isinstance(client, Client):
                client.approve(name, action_args, prompt=prompt, **options)
            else:
                with Client() as own:
                    own.approve(name, action_args, prompt=prompt, **options)
            return fn(*args, **kwargs)

        return run

    if function is not None:
        return decorate(function)
    return decorate
