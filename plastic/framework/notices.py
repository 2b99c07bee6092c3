"""NoticeFollower: spot notices from Redis (`Store.read_notices`) into the Framework, on a thread.

Every source of notices (`plastic agent-watch` on each spot machine, an SQS/EventBridge poller)
publishes into the one ``notices`` stream, once per (kind, target) (`Store.publish_notice`).  The
follower turns each entry into `Framework.notice(agent_id, kind, at)`:

- target ``agent:<id>`` names a Mesos agent; ``instance:<i-...>`` an EC2 instance, mapped to the
  agent whose ``instance_id`` attribute holds it (`Framework.agent_for`);
- which entries are notices, their times (AWS's two minutes when a terminate notice has no
  ``terminate_at``), which notices published before start-up still count, and how long one for a
  target the Framework does not know (yet) is kept and retried: plastic.core.book.notice_rules, pure;
  this shell reads the stream from the beginning at start-up, then follows its end, and retries kept
  notices whenever it wakes;
- each (kind, agent) is handed over once; the JobBook ignores repeats anyway;
- Redis unreachable: logged (once per outage), retried with back-off; the follower never dies of it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from redis.exceptions import RedisError

from plastic.core.book.notice_rules import NotANotice, Notice, keep_unknown_until, notice_of, still_counts
from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from plastic.store import Event, Store

log = logging.getLogger(__name__)

__all__ = ["Notice", "NoticeFollower", "parse"]


def parse(entry: Event, now: float) -> Notice | None:
    """A stream entry as a Notice (plastic.core.book.notice_rules), or None (logged) when it is none."""
    notice = notice_of(entry.id, entry.fields, now)
    if isinstance(notice, NotANotice):
        log.warning("notice %s ignored: %s", entry.id, notice.reason)
        return None
    if notice.deadline_assumed:
        log.warning("terminate notice %s for %s has no terminate_at; assuming %.0f s after it was published",
                    entry.id, notice.target, INTERRUPTION_NOTICE_S)
    return notice


class NoticeFollower:
    """Follows the notices stream for one Framework (see the module docstring)."""

    def __init__(self, store: Store, framework: Any, *, block_ms: int = 1000, keep_unknown_s: float = 600.0,
                 grace_s: float = 5.0, wall_clock: Callable[[], float] = time.time):
        self.store = store
        self.framework = framework
        self.block_ms = block_ms
        self.keep_unknown_s = keep_unknown_s
        self.grace_s = grace_s
        self.wall_clock = wall_clock
        self.last_id = "0-0"
        self.caught_up = threading.Event()  # set once the stream's history is read
        self.pending: dict[tuple[str, str], tuple[Notice, float]] = {}  # (kind, target) -> notice, keep until
        self.delivered: set[tuple[str, str]] = set()  # (kind, agent id)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> NoticeFollower:
        self._thread = threading.Thread(target=self._run, name="plastic-notices", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s if timeout_s is not None else self.block_ms / 1000 + 5)
            if self._thread.is_alive():
                log.warning("the notices thread did not stop within its timeout")

    # ------------------------------------------------------------ the loop

    def _run(self) -> None:
        backoff = 0.0
        outage_since: float | None = None
        while not self._stop.is_set():
            try:
                if not self.caught_up.is_set():
                    self._catch_up()
                else:
                    for entry in self.store.read_notices(self.last_id, count=100, block_ms=self.block_ms):
                        self.last_id = entry.id
                        self._take(entry, history=False)
                self._retry_pending()
                if outage_since is not None:
                    log.info("notices: Redis is back after %.0f s", time.monotonic() - outage_since)
                outage_since, backoff = None, 0.0
            except RedisError as error:
                if outage_since is None:
                    outage_since = time.monotonic()
                    log.warning("notices: cannot read the notices stream (%s); retrying", error)
                backoff = min(max(backoff * 2, 0.5), 10.0)
                self._stop.wait(backoff)
            except Exception:  # the follower must survive anything
                log.exception("notices: unexpected error; going on")
                self._stop.wait(1.0)

    def _catch_up(self) -> None:
        """Everything published before now, keeping only what is still relevant."""
        taken = 0
        while not self._stop.is_set():
            batch = self.store.read_notices(self.last_id, count=500)
            for entry in batch:
                self.last_id = entry.id
                taken += self._take(entry, history=True)
            if len(batch) < 500:
                break
        self.caught_up.set()
        if taken:
            log.info("notices: %d notice(s) published before start-up still apply", taken)

    def _take(self, entry: Event, *, history: bool) -> int:
        now = self.wall_clock()
        notice = parse(entry, now)
        if notice is None:
            return 0
        if not still_counts(notice, now, from_history=history):
            return 0  # that machine is gone already
        key = (notice.kind, notice.target)
        if not self._deliver(notice):
            if key not in self.pending:
                log.info("notices: %s notice for %s (from %s): no such agent here (yet); kept for a while",
                         notice.kind, notice.target, notice.source)
            self.pending[key] = (notice, keep_unknown_until(notice, now, grace_s=self.grace_s,
                                                            keep_unknown_s=self.keep_unknown_s))
        return 1

    def _deliver(self, notice: Notice) -> bool:
        agent_id = self.framework.agent_for(notice.target)
        if agent_id is None:
            return False
        if (notice.kind, agent_id) not in self.delivered:
            self.delivered.add((notice.kind, agent_id))
            log.info("notices: %s notice for agent %s (%s, from %s)%s", notice.kind, agent_id, notice.target,
                     notice.source,
                     f", {notice.at - self.wall_clock():.0f} s before its end" if notice.kind == "terminate" else "")
            self.framework.notice(agent_id, notice.kind, notice.at)
        return True

    def _retry_pending(self) -> None:
        if not self.pending:
            return
        now = self.wall_clock()
        for key, (notice, keep_until) in list(self.pending.items()):
            if self._deliver(notice):
                del self.pending[key]
            elif now > keep_until:
                del self.pending[key]
                log.info("notices: %s notice for %s dropped: no such agent showed up", notice.kind, notice.target)
