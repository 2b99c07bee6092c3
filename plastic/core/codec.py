"""Frozen dataclasses of plain values <-> JSON values, for the decisions log and its replay (pure).

`encode` writes a dataclass as ``{"type": ClassName, field: value, ...}`` (nested dataclasses the
same way, tuples as lists, enums as their values); `decode` turns that back into the dataclass,
given the classes it may meet by name.  JSON keeps floats exactly (repr round trip), so an event
read back from the log equals the one the book handled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass
from enum import Enum
from typing import Any

TYPE = "type"
_PLAIN = (str, int, float, bool, type(None))  # exactly these types (an enum may be a str) are written as they are
_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, by class (the log encodes every step)


def encode(value: Any) -> Any:
    cls = type(value)
    if cls in _PLAIN:
        return value
    names = _FIELDS.get(cls)
    if names is None and is_dataclass(value) and not isinstance(value, type):
        names = _FIELDS[cls] = tuple(f.name for f in fields(value))
    if names is not None:
        out: dict[str, Any] = {TYPE: cls.__name__}
        for name in names:
            out[name] = encode(getattr(value, name))
        return out
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    return value


def registry(classes: Iterable[type]) -> dict[str, type]:
    """Classes by name, for `decode`."""
    return {cls.__name__: cls for cls in classes}


def decode(doc: Any, types: Mapping[str, type]) -> Any:
    """The value `encode` wrote; lists become tuples; a dict naming an unknown type is a ValueError."""
    if isinstance(doc, list):
        return tuple(decode(v, types) for v in doc)
    if isinstance(doc, dict):
        if TYPE in doc:
            name = doc[TYPE]
            cls = types.get(name)
            if cls is None:
                raise ValueError(f"unknown type {name!r} in an encoded value")
            names = {f.name for f in fields(cls)}
            return cls(**{k: decode(v, types) for k, v in doc.items() if k != TYPE and k in names})
        return {k: decode(v, types) for k, v in doc.items()}
    return doc
