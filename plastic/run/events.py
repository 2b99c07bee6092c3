"""A run's decision events as the core's `RunEvent`s, read from the run's Redis stream: their fields as the
stream holds them (strings), each read into its record by plastic.core.account.record_codec.decode."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

from plastic.core.account.report import RunEvent
from plastic.store import Store
from plastic.store.store_errors import is_unavailable

log = logging.getLogger(__name__)


class EventFollower:
    """Reads a run's stream from the start, one batch per `poll`, remembering where it stopped.

    Redis unreachable is not the run's end: `poll` returns what it has (nothing more), waits a little
    and tries again at the next poll, from where it stopped, so no event is missed or read twice.
    Each outage is logged when it starts and when it ends; `outages` and `down_s` count them."""

    def __init__(self, store: Store, run_id: str, *, clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.run_id = run_id
        self.last_id = "0-0"
        self.clock = clock
        self.down_since: float | None = None
        self.outages = 0
        self.down_s = 0.0  # in total

    @property
    def reachable(self) -> bool:
        return self.down_since is None

    def poll(self, *, block_ms: int | None = None, count: int = 1000) -> list[RunEvent]:
        """The next events, at most ``count`` (one read of the stream): a caller loops, so however long
        the backlog (a resume reads the whole run's), no more than one batch is held at a time."""
        try:
            batch = self.store.read_events(self.run_id, self.last_id, count=count, block_ms=block_ms)
        except Exception as error:
            if not is_unavailable(error):
                raise
            if self.down_since is None:
                self.down_since = self.clock()
                self.outages += 1
                log.warning("run %s: Redis unreachable (%s); the run goes on, its progress shows again "
                            "when Redis is back", self.run_id, error)
            time.sleep(min((block_ms or 0) / 1000.0, 1.0) or 0.2)
            return []
        if self.down_since is not None:
            away_s = self.clock() - self.down_since
            self.down_s += away_s
            self.down_since = None
            log.warning("run %s: Redis is back after %.1f s; the run's events are read on from where they "
                        "stopped", self.run_id, away_s)
        if batch:
            self.last_id = batch[-1].id
        return [RunEvent(e.type, e.at, e.fields) for e in batch]

    def drain(self, *, wait_s: float, count: int = 1000) -> Iterator[RunEvent]:
        """Every event left in the stream, a batch at a time; when Redis is away, wait up to ``wait_s``."""
        deadline = self.clock() + wait_s
        while True:
            batch = self.poll(count=count)
            yield from batch
            if len(batch) < count and (self.reachable or self.clock() >= deadline):
                return

    def note(self) -> str | None:
        """A line for the report when Redis was away during the run."""
        if not self.outages:
            return None
        return (f"Redis was unreachable {self.outages} time(s), {self.down_s:.1f} s in all; the run went on and "
                f"the manager's writes waited for it (the leader's log says how many)")
