"""Replay a decisions log (plastic.framework.recorder.JsonLinesRecorder) through the JobBook, pure.

Every ``book`` line starts a new JobBook with the logged configuration; every ``event`` line is
decoded and handled at its logged ``now``; what the book returns is compared with the command and
record lines that followed the event in the log: the commands in their order, the records in theirs
(a log holds a step's records, then its commands; logs of before 2026-11-29 interleave them).  Since every input of a decision is an
event in the log (the runtime history and the job store's answers included), a replay gives the same
decisions; a difference is a `Mismatch`.  The last step of a book may have been cut short in the log
when its process was killed (SIGKILL in the middle of writing it): when what was logged of it is the
beginning of what the replay gives, it is counted as ``torn``, not as a mismatch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from plastic.core import model
from plastic.core.book import commands as jobbook_commands
from plastic.core.book import events as jobbook_events
from plastic.core.book import placement
from plastic.core.book.jobbook import JobBook
from plastic.core.book.records import Record
from plastic.core.codec import decode, encode, registry

EVENT_TYPES = registry([
    *(getattr(jobbook_events, n) for n in ("JobIssued", "KillRequested", "OffersReceived", "OfferRescinded",
                                           "StatusReceived", "AgentSeen", "AgentLost", "AgentsIgnored",
                                           "NoticeReceived", "Registered", "Reconnected", "PriorTask", "Resumed",
                                           "JobStoreChecked", "RuntimeHistoryLoaded", "Tick")),
    placement.Offer, placement.AgentInfo, model.Resources, model.Preempt, model.TaskUsage,
])
_ = jobbook_commands  # commands are compared encoded: no decoding needed


@dataclass(frozen=True, slots=True)
class Mismatch:
    event_index: int  # the n-th event of the log (from 0)
    event: Mapping[str, Any]
    logged: list[dict[str, Any]]
    replayed: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ReplayResult:
    books: int
    events: int
    decisions: int
    mismatches: tuple[Mismatch, ...]
    torn: int = 0  # last steps of a book cut short in the log


def _normal(doc: Any) -> Any:
    return json.loads(json.dumps(doc, default=str))


def output_line(out: Any) -> dict[str, Any]:
    """A book output as its log line (without ``t``)."""
    if isinstance(out, Record):
        return _normal({"kind": out.kind, **out.fields})
    return _normal({"kind": "command", "command": encode(out)})


def _apart(lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A step's lines as (commands, records), each in its order."""
    return ([x for x in lines if x.get("kind") == "command"], [x for x in lines if x.get("kind") != "command"])


def replay(entries: Iterable[Mapping[str, Any]]) -> ReplayResult:
    """Replay parsed log lines (see the module docstring)."""
    book: JobBook | None = None
    books = events = decisions = 0
    mismatches: list[Mismatch] = []
    current: tuple[int, Mapping[str, Any], list[dict[str, Any]]] | None = None
    logged: list[dict[str, Any]] = []
    torn = 0

    def settle(last_of_book: bool = False) -> None:
        nonlocal current, logged, torn
        if current is None:
            logged = []
            return
        replayed, got = _apart(current[2]), _apart(logged)
        if replayed != got:
            if last_of_book and all(r[:len(g)] == g for r, g in zip(replayed, got, strict=True)):
                torn += 1
            else:
                mismatches.append(Mismatch(current[0], current[1], logged, current[2]))
        current, logged = None, []

    for entry in entries:
        if entry.get("m", "book") != "book":
            continue  # another machine's step (the elastic controller's)
        kind = entry.get("kind")
        if kind == "book":
            settle(last_of_book=True)
            book = JobBook(**dict(entry.get("config") or {}))
            books += 1
        elif kind == "event":
            settle()
            if book is None:
                continue  # a log that began before its book line: nothing to replay it into
            event = decode(entry["event"], EVENT_TYPES)
            step = book.handle(event, float(entry["now"]))
            outputs = [output_line(o) for o in (*step.records, *step.commands)]
            decisions += len(outputs)
            current = (events, entry["event"], outputs)
            events += 1
        elif current is not None:
            logged.append(_normal({k: v for k, v in entry.items() if k != "t"}))
    settle(last_of_book=True)
    return ReplayResult(books, events, decisions, tuple(mismatches), torn)
