"""What a pure core returned, filtered for assertions, and a recorder keeping the Framework's records.

``of(out, cls)`` and ``records(out, kind)`` read the outputs of the JobBook or of the elastic controller
(commands and ``Record``s); ``Kinds`` is a recorder (plastic.framework.recorder) that keeps every record's
kind and fields, and every event it was handed, in memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plastic.core.book.decisions import Decisions
from plastic.core.book.records import Record
from plastic.framework.recorder import RecordListener


def _all(out):
    """A JobBook step's records and commands (plastic.core.book.decisions), or a list of outputs as it is."""
    return [*out.records, *out.commands] if isinstance(out, Decisions) else out


def of(out, cls):
    """The outputs that are instances of ``cls``, in order."""
    return [o for o in _all(out) if isinstance(o, cls)]


def records(out, kind):
    """The fields of the records of ``kind`` among the outputs, in order."""
    return [o.fields for o in _all(out) if isinstance(o, Record) and o.kind == kind]


class Kinds(RecordListener):
    """A Recorder keeping the records' kinds and fields (and the events of the steps) in memory."""

    def __init__(self):
        self.seen: list[tuple[str, dict]] = []
        self.events: list[Any] = []

    def step(self, event: Any, now: float, records: Sequence[Record], commands: Sequence[Any],
             machine: str = "book") -> None:
        self.events.append(event)
        super().step(event, now, records, commands, machine)

    def record(self, kind: str, fields: Mapping[str, object]) -> None:
        self.seen.append((kind, dict(fields)))

    def of(self, kind: str) -> list[dict]:
        return [f for k, f in self.seen if k == kind]
