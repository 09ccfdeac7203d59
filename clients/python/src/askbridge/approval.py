"""``@require_approval``: a function that runs only when a person approved that very call."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar, cast, overload

from ._async import AsyncClient
from ._sync import Client
from .models import Approval, Decision

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


def edited_call(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    approval: Approval,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call to make once approved: as made, or with the arguments the person changed (an
    argument they left as proposed keeps its Python value, which JSON may not carry)."""
    if not approval.edited or not isinstance(approval.args, dict):
        return args, kwargs
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    proposed = call_args(function, args, kwargs)
    for name, value in cast(dict[str, Any], approval.args).items():
        if name in bound.arguments and proposed.get(name) != value:
            bound.arguments[name] = value
    return bound.args, bound.kwargs


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
    allowed: Sequence[Decision] | None = None,
    args_schema: Mapping[str, Any] | None = None,
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
    allowed: Sequence[Decision] | None = None,
    args_schema: Mapping[str, Any] | None = None,
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Each call asks a person to approve the action ``{tool, args}`` — ``tool`` defaults to the
    function's name, ``args`` are the call's arguments by name — and runs the function only once
    approved (once, always, or by an "always" rule). A rejection raises
    :class:`~askbridge.Rejected` with the person's feedback; a timeout :class:`~askbridge.TimedOut`.

    ``allowed`` names the decisions offered (default once, always, reject); with ``edit`` the
    function runs with the arguments the person changed (checked against ``args_schema`` when
    given). ``respond`` is not offered here: a decorated function runs or is refused, nothing
    answers in its place (use :meth:`Client.approve` for that).

    Works on plain and ``async`` functions. Without ``client`` each call makes one from the
    environment (``ASKBRIDGE_URL``, ``ASKBRIDGE_API_TOKEN``, ``ASKBRIDGE_SESSION``).
    """

    if allowed is not None and "respond" in allowed:
        raise TypeError(
            "@require_approval cannot offer respond: the function runs or is refused; "
            "use client.approve(..., allowed=[..., 'respond']) to take a response in its place"
        )

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        name = tool or fn.__name__
        options: dict[str, Any] = {"allowed": allowed, "args_schema": args_schema}
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
                    approval = await client.approve(name, action_args, prompt=prompt, **options)
                else:
                    async with AsyncClient() as own:
                        approval = await own.approve(name, action_args, prompt=prompt, **options)
                call, named = edited_call(fn, args, kwargs, approval)
                return await async_fn(*call, **named)

            return cast(Callable[P, R], run_async)

        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            action_args = call_args(fn, args, kwargs)
            if isinstance(client, Client):
                approval = client.approve(name, action_args, prompt=prompt, **options)
            else:
                with Client() as own:
                    approval = own.approve(name, action_args, prompt=prompt, **options)
            call, named = edited_call(fn, args, kwargs, approval)
            return fn(*call, **named)

        return run

    if function is not None:
        return decorate(function)
    return decorate
