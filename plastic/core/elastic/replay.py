"""Replay a decisions log through the JobBook and the elastic controller, pure.

The book's lines replay as plastic.core.book.replay says.  The elastic controller's lines (``"m":
"elastic"``, plastic.framework.recorder) replay through an ElasticMachine (plastic.core.elastic.machine):
the ``elastic_event`` holding ElasticStarted builds the machine; a look (NodesListed) observes the book
as replayed up to that line together with the logged nodes, and the controller decides, at the logged
``now``; the provider's answers (NodesCreated, CreateRefused) go to the controller.  What it decides
is compared with the record and command lines logged after the event, as the book's are: a difference
is a Mismatch whose machine is ``elastic``; the last step of a book may be torn.  A new book (a new
leader) ends the machine: the new leader's provisioner starts its own.

The order of the log is the order the replay needs: the provisioner looks under the Framework's lock,
so every book event handled before a look is logged before it, and what the provisioner applies to the
book after the controller's step (AgentsIgnored, for a cordon) is a book event logged after the
controller's lines.

Logs written before the looks were logged whole (their looks are counts, ``ClusterObserved`` with
numbers) have no ElasticStarted: their elastic events are counted as ``skipped`` and only the book
replays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from plastic.core.book.replay import BookReplay, Mismatch, ReplayResult, StepCheck, output_line
from plastic.core.codec import decode, registry
from plastic.core.elastic.machine import ElasticMachine, ElasticStarted
from plastic.core.elastic.model import CreateRefused, ElasticPolicy, NodesCreated
from plastic.core.elastic.observation import NodeFact, NodesListed
from plastic.core.model import InstanceType, Market, NodeShape, Preempt, Resources, TaskSpec

ELASTIC = "elastic"  # the elastic controller's lines: "m": "elastic"
ELASTIC_EVENT = "elastic_event"
ELASTIC_TYPES = registry([ElasticStarted, NodesListed, NodeFact, NodesCreated, CreateRefused, ElasticPolicy,
                          NodeShape, InstanceType, Resources, TaskSpec, Preempt])


@dataclass(frozen=True, slots=True)
class ElasticReplayResult:
    starts: int  # machines built (ElasticStarted)
    looks: int
    answers: int
    decisions: int
    mismatches: tuple[Mismatch, ...]
    torn: int = 0  # last steps of a book cut short in the log
    skipped: int = 0  # elastic events with no machine to replay them into (older logs), or not an input


@dataclass(frozen=True, slots=True)
class FullReplayResult:
    book: ReplayResult
    elastic: ElasticReplayResult

    @property
    def mismatches(self) -> tuple[Mismatch, ...]:
        return self.book.mismatches + self.elastic.mismatches


def read_event(doc: Any) -> Any:
    """A logged elastic event (plastic.core.codec), or None when it is none this replay takes (an older
    log's summary of a look)."""
    if not isinstance(doc, Mapping) or doc.get("type") not in ELASTIC_TYPES:
        return None
    event = decode(doc, ELASTIC_TYPES)
    if isinstance(event, CreateRefused):
        event = replace(event, market=Market(event.market))
    return event


class ElasticReplay:
    """The elastic controller's side of a replay, line by line, reading the book of ``books``."""

    def __init__(self, books: BookReplay):
        self.books = books
        self.machine: ElasticMachine | None = None
        self.check = StepCheck(ELASTIC)
        self.starts = self.looks = self.answers = self.skipped = 0

    def new_book(self) -> None:
        self.check.settle(last_of_book=True)
        self.machine = None

    def take(self, entry: Mapping[str, Any]) -> None:
        """One line of the controller's: an event, or what it decided on the last one."""
        if entry.get("kind") != ELASTIC_EVENT:
            self.check.logged(entry)
            return
        event = read_event(entry.get("event"))
        if isinstance(event, ElasticStarted):
            self.check.settle(last_of_book=True)
            self.machine = ElasticMachine.of(event)
            self.starts += 1
            return
        book = self.books.book
        if event is None or self.machine is None or book is None:
            self.check.settle()
            self.skipped += 1
            return
        outputs = self.machine.handle(event, book, float(entry["now"]))
        if isinstance(event, NodesListed):
            self.looks += 1
        else:
            self.answers += 1
        self.check.step(entry["event"], [output_line(o) for o in outputs])

    def result(self) -> ElasticReplayResult:
        check = self.check
        check.settle(last_of_book=True)
        return ElasticReplayResult(self.starts, self.looks, self.answers, check.decisions, tuple(check.mismatches),
                                   check.torn, self.skipped)


def replay_all(entries: Iterable[Mapping[str, Any]]) -> FullReplayResult:
    """Replay parsed log lines through the JobBook and the elastic controller (the module docstring)."""
    books = BookReplay()
    elastic = ElasticReplay(books)
    for entry in entries:
        machine = entry.get("m", "book")
        if machine == ELASTIC:
            elastic.take(entry)
        elif machine == "book":
            if entry.get("kind") == "book":
                elastic.new_book()
            books.take(entry)
    return FullReplayResult(books.result(), elastic.result())
