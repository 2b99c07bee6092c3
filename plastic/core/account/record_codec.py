"""A stored record read back as the record it was (pure): `decode(kind, fields)`.

The JobBook's records (plastic.core.book.records) and the elastic controller's (plastic.core.elastic.model)
are stored by their ``kind`` and ``fields`` (`Record.fields`) in two forms:

- a line of the decisions log (plastic.framework.recorder): JSON, so numbers, booleans, lists and objects
  come back as they were, enums as their values;
- an entry of the run's Redis stream (plastic.framework.store_recorder -> plastic.store): every value a
  string, a string as it is and anything else as its JSON text (``"3"``, ``"true"``, ``'["1", "2"]'``),
  fields that were None left out, plus the stream's own ``at``.

`decode` reads either into the record's class, each field as the class declares it: a string field keeps
its text whatever it looks like (a job id ``"10"`` stays ``"10"``), a number, boolean, list, mapping or
nested value (an ended attempt, what a task used) is read from its JSON text when it is one.  A field
the stored line lacks (an older log, before the field was added; a hand-written line) is the field's
default, or None when it has none; fields the class does not have (``t``, ``at``, ``m``) are ignored.

It never raises: a kind neither the JobBook nor the elastic controller writes (the store's own entries,
``transition``, ``run_created``, ...) is an `UnknownRecord` with the stored fields, and so is a line of
a known kind with a value that cannot be read as its field's type, with ``problem`` saying which.  The
decisions log's ``book`` line (a new JobBook: a new leader) is a `BookBegan`.  A ``notice`` is a
`TerminateNoticed` when its ``notice_kind`` is ``terminate`` (or missing, as in the oldest logs), else a
`RebalanceNoticed`, as every reader took it.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, is_dataclass
from dataclasses import fields as dataclass_fields
from enum import Enum
from typing import Any, ClassVar

from plastic.core.book import records as book
from plastic.core.book.records import Record
from plastic.core.elastic import model as elastic


@dataclass(frozen=True, slots=True)
class UnknownRecord(Record):
    """A stored line that is no record `decode` knows: its kind and its fields as stored; ``problem``
    None for a kind no writer of records has, else what could not be read in a known kind's line."""

    kind: str  # the kind it was stored with (a field here, not the class's)
    fields: Mapping[str, Any] = field(default_factory=dict)
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class BookBegan(Record):
    """The decisions log's line for a new JobBook (a new leader): its configuration."""

    kind: ClassVar[str] = "book"
    config: Mapping[str, Any] = field(default_factory=dict)


BOOK_RECORDS: tuple[type[Record], ...] = (
    book.TaskStateChanged, book.AgentStateChanged, book.JobQueued, book.AgentUpdated, book.TaskPlaced,
    book.TaskStarted, book.JobEnded, book.JobRequeued, book.JobEscalated, book.JobUnplaceable,
    book.JobPlaceableAgain, book.OffersDeclined, book.IgnoredOffersDeclined, book.OfferWithdrawn, book.KillSent,
    book.KillIgnored, book.IssueRepeated, book.StatusRepeated, book.StaleStatusSeen, book.UnknownTaskSeen,
    book.UnknownStateSeen, book.JobGoneIgnored, book.AgentGone, book.TerminateNoticed, book.RebalanceNoticed,
    book.NoticeRepeated, book.LeftToFinish, book.KilledForNotice, book.AgentIdled, book.JobStarved,
    book.FrameworkRegistered, book.Resubscribed, book.ResumeBegan, book.OrphanAdopted, book.OrphanKilled,
    book.OrphanCheckAsked, book.OrphanEnded, book.OrphanUnknown,
)
ELASTIC_RECORDS: tuple[type[Record], ...] = (
    elastic.NodesRequested, elastic.NodesStarted, elastic.NodeReady, elastic.NodeCordoned, elastic.NodeUncordoned,
    elastic.NodeReleased, elastic.NodeInterrupted, elastic.CreationRefused, elastic.GrowthStopped,
)
RECORDS = (*BOOK_RECORDS, *ELASTIC_RECORDS, BookBegan)  # every class `decode` gives (and UnknownRecord)
BY_KIND: Mapping[str, type[Record]] = {cls.kind: cls for cls in RECORDS if cls is not book.RebalanceNoticed}


class _Unreadable(ValueError):
    """A stored value that is not its field's type (decode turns it into an UnknownRecord's problem)."""


def decode(kind: str, fields: Mapping[str, Any]) -> Record:
    """The record a stored line holds (see the module docstring); never raises."""
    cls = BY_KIND.get(kind)
    if cls is book.TerminateNoticed and fields.get("notice_kind") not in (None, "terminate"):
        cls = book.RebalanceNoticed
    if cls is None:
        return UnknownRecord(kind, dict(fields))
    try:
        return _reader(cls)(fields)
    except _Unreadable as exc:
        return UnknownRecord(kind, dict(fields), problem=str(exc))


# ------------------------------------------------------------------ reading values by their declared type

Read = Callable[[Any], Any]
_READERS: dict[type, Callable[[Mapping[str, Any]], Any]] = {}


def _reader(cls: type) -> Callable[[Mapping[str, Any]], Any]:
    """A function making a ``cls`` (a dataclass) from stored fields, built once per class."""
    made = _READERS.get(cls)
    if made is not None:
        return made
    hints = typing.get_type_hints(cls)
    plan = []
    for f in dataclass_fields(cls):
        blank: Callable[[], Any] = (f.default_factory if f.default_factory is not MISSING
                                    else (lambda d=f.default: None if d is MISSING else d))
        plan.append((f.name, _value_reader(hints[f.name], f"{cls.__name__}.{f.name}"), blank,
                     _SAME.get(_optional(hints[f.name]))))

    def read(stored: Mapping[str, Any]) -> Any:
        if isinstance(stored, str):
            stored = _json(stored, cls.__name__)
        if not isinstance(stored, Mapping):
            raise _Unreadable(f"{cls.__name__}: {stored!r} is not an object")
        values = []
        for name, read_value, blank, same in plan:
            value = stored.get(name)  # None (missing, or None in the log): the field's default
            if value is None:
                values.append(blank())
            elif value.__class__ is same:  # already its type (most values of the log, text in the stream)
                values.append(value)
            else:
                values.append(read_value(value))
        return cls(*values)

    _READERS[cls] = read
    return read


_SAME = {str: str, int: int, float: float, bool: bool}  # a value of exactly this class is read as it is


def _optional(tp: Any) -> Any:
    """``X`` of ``X | None`` (else ``tp``)."""
    args = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else ()
    kinds = [a for a in args if a is not type(None)]
    return kinds[0] if len(kinds) == 1 else tp


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise _Unreadable(f"{where}: {text!r} is not JSON") from None


def _value_reader(tp: Any, where: str) -> Read:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) != 1:
            raise TypeError(f"{where}: decode reads one type or None, not {tp}")
        return _value_reader(kinds[0], where)  # a field's None is read before its value is
    if tp is Any:
        return lambda v: v
    if origin is tuple:
        item = _value_reader(args[0], where)
        return lambda v: tuple(item(x) for x in _items(v, where))
    if origin in (Mapping, dict):
        return lambda v: _mapping(v, where)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return lambda v: _enum(tp, v, where)
    if isinstance(tp, type) and is_dataclass(tp):
        return _reader(tp)
    simple = {str: _str, bool: _bool, int: _int, float: _float}.get(tp)
    if simple is None:
        raise TypeError(f"{where}: decode cannot read {tp}")
    return lambda v: simple(v, where)


def _str(v: Any, where: str) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, int | float):  # a log written by hand, or before the field was text
        return str(v)
    raise _Unreadable(f"{where}: {v!r} is not text")


def _bool(v: Any, where: str) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise _Unreadable(f"{where}: {v!r} is not a boolean")


def _int(v: Any, where: str) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            try:
                v = float(v)
            except ValueError:
                pass
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise _Unreadable(f"{where}: {v!r} is not a whole number")


def _float(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise _Unreadable(f"{where}: {v!r} is not a number")
    try:
        return float(v)
    except ValueError:
        raise _Unreadable(f"{where}: {v!r} is not a number") from None


def _items(v: Any, where: str) -> list[Any] | tuple[Any, ...]:
    if isinstance(v, str):  # its JSON text in the stream; other text is one item (as the readers took it)
        try:
            parsed = json.loads(v)
        except ValueError:
            return [v]
        return parsed if isinstance(parsed, list) else [v]
    if isinstance(v, list | tuple):
        return v
    raise _Unreadable(f"{where}: {v!r} is not a list")


def _mapping(v: Any, where: str) -> dict[str, Any]:
    if isinstance(v, str):
        v = _json(v, where)
    if isinstance(v, Mapping):
        return dict(v)
    raise _Unreadable(f"{where}: {v!r} is not an object")


def _enum(tp: type[Enum], v: Any, where: str) -> Enum:
    try:
        return tp(v)
    except ValueError:
        raise _Unreadable(f"{where}: {v!r} is not one of {[m.value for m in tp]}") from None
