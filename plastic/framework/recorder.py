"""Where the Framework's steps go: the decisions log (JSON lines), the run's state in Redis, or a log.

The Framework applies one event at a time to the JobBook (plastic.core.book.jobbook) and hands every
recorder the step: the event, the book's ``now`` and what the book decided (its records and its
commands, plastic.core.book.decisions), each in order, under its lock.  A recorder
must never block: the Redis one (plastic.framework.store_recorder) only queues writes for a
background thread.

The decisions log (`JsonLinesRecorder`, ``decisions.jsonl`` of a run) holds, one JSON object a line,
each with ``t`` (epoch seconds when written):

| kind | what |
|---|---|
| book | a new JobBook (a new leader): ``config``, its constructor's arguments |
| event | an event the book handled: ``now`` (the book's clock) and ``event`` (plastic.core.codec) |
| command | a command the book returned: ``command`` (plastic.core.codec) |
| any record kind | a record the book returned: its fields (plastic.core.book.records lists them) |

So a log can be replayed (plastic.core.book.replay): the same events into a book of the same config give
the same commands and records.  The elastic controller's steps (plastic.framework.provisioner) are
logged too, every one, each line marked ``"m": "elastic"``: its input whole (``kind`` elastic_event,
``now`` and ``event``: ElasticStarted, its configuration, once per book; NodesListed, a look's nodes;
NodesCreated and CreateRefused, the provider's answers: plastic.core.elastic.machine), then its
records and commands, so they replay too (plastic.core.elastic.replay).  Older logs hold only the
elastic steps that decided something, after a summary of the look (its counts).  A step's
records come before its commands (logs of before 2026-11-29 interleave them in the order decided).  The
records' kinds are the ones the run's Redis event stream, the
progress display and the report read: issued, placed, running, kill, drain_kill, let_finish, ended,
requeue, escalation, unplaceable, placeable_again, agent, agent_lost, notice, duplicate_notice,
idle_agent, starving, declined, declined_ignored, rescinded, kill_ignored, duplicate_issue,
duplicate_status, stale_status, unknown_task, unknown_state, job_gone_ignored, reconnected,
registered, resumed, orphan_adopted, orphan_kill, orphan_check, orphan_ended, orphan_unknown, and
task_state / agent_state (the state moves stored in Redis).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from plastic.core.book.records import Record
from plastic.core.codec import encode

log = logging.getLogger(__name__)


class Recorder(Protocol):
    def begin(self, config: Mapping[str, Any]) -> None:
        """A new JobBook with this configuration starts taking events."""

    def step(self, event: Any, now: float, records: Sequence[Record], commands: Sequence[Any],
             machine: str = "book") -> None:
        """One event and what the book (or the elastic controller) decided: its records and its commands;
        must return at once (called under the Framework's lock)."""

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is pending (waiting at most ``timeout_s``) and release everything."""


def record_line(record: Record, at: float) -> dict[str, Any]:
    return {"t": at, "kind": record.kind, **record.fields}


class JsonLinesRecorder:
    """The decisions log: one JSON object per line, flushed at once (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def _write(self, lines: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(line, default=str) + "\n" for line in lines)
        with self._lock:
            if self._file is None:
                return
            self._file.write(text)
            self._file.flush()

    def begin(self, config: Mapping[str, Any]) -> None:
        self._write([{"t": time.time(), "kind": "book", "config": dict(config)}])

    def step(self, event: Any, now: float, records: Sequence[Record], commands: Sequence[Any],
             machine: str = "book") -> None:
        at = time.time()
        if machine == "book":
            lines = [{"t": at, "kind": "event", "now": now, "event": encode(event)}]
            mark: dict[str, str] = {}
        else:
            mark = {"m": machine}
            lines = [{"t": at, **mark, "kind": f"{machine}_event", "now": now, "event": encode(event)}]
        lines += [{**record_line(r, at), **mark} for r in records]
        lines += [{"t": at, **mark, "kind": "command", "command": encode(c)} for c in commands]
        self._write(lines)

    def close(self, timeout_s: float = 10.0) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class RecordListener:
    """Base of recorders that want only the records, one `record(kind, fields)` call each."""

    def begin(self, config: Mapping[str, Any]) -> None:
        pass

    def step(self, event: Any, now: float, records: Sequence[Record], commands: Sequence[Any],
             machine: str = "book") -> None:
        for r in records:
            self.record(r.kind, r.fields)

    def record(self, kind: str, fields: Mapping[str, Any]) -> None:
        pass

    def close(self, timeout_s: float = 10.0) -> None:
        pass


class LogRecorder(RecordListener):
    """Records as DEBUG log lines (what the Framework does when it has no other recorder)."""

    def record(self, kind: str, fields: Mapping[str, Any]) -> None:
        log.debug("%s %s", kind, dict(fields))
