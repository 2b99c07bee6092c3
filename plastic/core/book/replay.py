"""Replay a decisions log (plastic.framework.recorder.JsonLinesRecorder) through the JobBook, pure.

Every ``book`` line starts a new JobBook with the logged configuration; every ``event`` line is
decoded and handled at its logged ``now``; what the book returns is compared with the command and
record lines that followed the event in the log: the commands in their order, the records in theirs
(a log holds a step's records, then its commands; logs of before 2026-11-29 interleave them).  Since every input of a decision is an
event in the log (the runtime history and the job store's answers included), a replay gives the same
decisions; a difference is a `Mismatch`.  The last step of a book may have been cut short in the log
when its process was killed (SIGKILL in the middle of writing it): when what was logged of it is the
beginning of what the replay gives, it is counted as ``torn``, not as a mismatch.

The elastic controller's lines (``"m": "elastic"``) are left out here: plastic.core.elastic.replay
replays them with the book's, reading the book as replayed so far (`BookReplay`) and comparing the
controller's steps as the book's are (`StepCheck`).
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
    event_index: int  # the n-th event of the log (from 0), of the machine's events
    event: Mapping[str, Any]
    logged: list[dict[str, Any]]
    replayed: list[dict[str, Any]]
    machine: str = "book"  # whose step: the book's, or the elastic controller's


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
    """An output (the book's, or the elastic controller's) as its log line (without ``t`` and ``m``)."""
    if isinstance(out, Record):
        return _normal({"kind": out.kind, **out.fields})
    return _normal({"kind": "command", "command": encode(out)})


def _apart(lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A step's lines as (commands, records), each in its order."""
    return ([x for x in lines if x.get("kind") == "command"], [x for x in lines if x.get("kind") != "command"])


class StepCheck:
    """What a replay decided at each step against the lines logged after that step's input (for the book
    here, for the elastic controller in plastic.core.elastic.replay): commands in their order, records
    in theirs; the last step of a book (or of a killed process) may be torn."""

    def __init__(self, machine: str = "book") -> None:
        self.machine = machine
        self.steps = self.decisions = self.torn = 0
        self.mismatches: list[Mismatch] = []
        self._current: tuple[int, Mapping[str, Any], list[dict[str, Any]]] | None = None
        self._logged: list[dict[str, Any]] = []

    def step(self, event: Mapping[str, Any], outputs: list[dict[str, Any]]) -> None:
        """A step replayed: its input as logged and its outputs as log lines (output_line)."""
        self.settle()
        self.decisions += len(outputs)
        self._current = (self.steps, event, outputs)
        self.steps += 1

    def logged(self, entry: Mapping[str, Any]) -> None:
        """A line the log holds after the current step's input (nothing to compare it to without one)."""
        if self._current is not None:
            self._logged.append(_normal({k: v for k, v in entry.items() if k not in ("t", "m")}))

    def settle(self, last_of_book: bool = False) -> None:
        """Compare the current step with what was logged of it; no current step after this."""
        if self._current is not None:
            replayed, got = _apart(self._current[2]), _apart(self._logged)
            if replayed != got:
                if last_of_book and all(r[:len(g)] == g for r, g in zip(replayed, got, strict=True)):
                    self.torn += 1
                else:
                    self.mismatches.append(Mismatch(self._current[0], self._current[1], self._logged,
                                                    self._current[2], self.machine))
        self._current, self._logged = None, []


class BookReplay:
    """The JobBook's side of a replay, line by line (`take`), so that another machine's replay can read
    the book as replayed so far (``book``) at each of its own steps."""

    def __init__(self) -> None:
        self.book: JobBook | None = None
        self.books = 0
        self.check = StepCheck()

    def take(self, entry: Mapping[str, Any]) -> None:
        """One line of the book's (a ``book`` line, an ``event``, or what the book decided on it)."""
        kind = entry.get("kind")
        if kind == "book":
            self.check.settle(last_of_book=True)
            self.book = JobBook(**dict(entry.get("config") or {}))
            self.books += 1
        elif kind == "event":
            if self.book is None:  # a log that began before its book line: nothing to replay it into
                self.check.settle()
                return
            event = decode(entry["event"], EVENT_TYPES)
            step = self.book.handle(event, float(entry["now"]))
            self.check.step(entry["event"], [output_line(o) for o in (*step.records, *step.commands)])
        else:
            self.check.logged(entry)

    def result(self) -> ReplayResult:
        """The replay's result, the last step settled."""
        check = self.check
        check.settle(last_of_book=True)
        return ReplayResult(self.books, check.steps, check.decisions, tuple(check.mismatches), check.torn)


def replay(entries: Iterable[Mapping[str, Any]]) -> ReplayResult:
    """Replay parsed log lines through the JobBook (see the module docstring); another machine's lines
    (``"m": "elastic"``) are left out: plastic.core.elastic.replay replays both."""
    books = BookReplay()
    for entry in entries:
        if entry.get("m", "book") == "book":
            books.take(entry)
    return books.result()
