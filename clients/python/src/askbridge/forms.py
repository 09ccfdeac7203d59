"""Forms from dataclasses: the fields' types make askbridge's flat form schema, and the answer
(an object) becomes an instance.

``str`` → string, ``int`` → integer, ``float`` → number, ``bool`` → boolean, ``Literal["a", "b"]``
→ a choice, ``list[Literal[...]]`` → a multi-select; ``X | None`` or a default makes a field
optional. ``field(metadata={"title": ..., "description": ..., "format": ..., "minimum": ...})``
adds the schema's keywords.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from .errors import AskbridgeError

T = TypeVar("T")

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    if get_origin(hint) in (Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(get_args(hint)) == 2:
            return args[0], True
    return hint, False


def _field_schema(name: str, hint: Any) -> dict[str, Any]:
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if get_origin(hint) is Literal:
        values = list(get_args(hint))
        if all(isinstance(v, str) for v in values):
            return {"type": "string", "enum": values}
    if get_origin(hint) is list:
        (item,) = get_args(hint) or (Any,)
        if get_origin(item) is Literal and all(isinstance(v, str) for v in get_args(item)):
            return {"type": "array", "items": {"type": "string", "enum": list(get_args(item))}}
    raise TypeError(
        f"form field `{name}`: {hint!r} is not a form type (str, int, float, bool, "
        "Literal of strings, list of a Literal, or one of these | None)"
    )


def schema_of(cls: type[Any]) -> dict[str, Any]:
    """The form schema of dataclass ``cls``, fields in the order they are written."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        hint, optional = _unwrap_optional(hints[f.name])
        prop = _field_schema(f.name, hint)
        has_default = f.default is not dataclasses.MISSING
        if has_default and f.default is not None:
            prop["default"] = f.default
        prop.update(dict(f.metadata))
        properties[f.name] = prop
        if not optional and not has_default and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    return {"type": "object", "properties": properties, "required": required}


def instance_of(cls: type[T], answer: Any) -> T:
    """``answer`` (the form's object) as an instance of dataclass ``cls``; fields the person left
    out take the dataclass's defaults."""
    if not isinstance(answer, dict):
        raise AskbridgeError(f"a form's answer is not an object: {answer!r}")
    given = typing.cast(dict[str, Any], answer)
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in given:
            values[f.name] = given[f.name]
        elif (
            _unwrap_optional(hints[f.name])[1]
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ):
            values[f.name] = None
    return cls(**values)
