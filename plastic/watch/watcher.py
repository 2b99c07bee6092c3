"""AgentWatcher: polls one machine's IMDS for spot notices and publishes each once into Redis.

Every ``interval_s`` it reads ``spot/instance-action`` (a terminate/stop/hibernate notice with
its time) and, until one shows up, ``events/recommendations/rebalance``.  A notice seen is
published with `Store.publish_notice(kind, target, fields)`:

    kind     terminate (any instance-action) | rebalance
    target   agent:<agent id> when the agent id is known, else instance:<instance id>
    fields   terminate_at (epoch s, terminate), notice_time (epoch s, rebalance), action,
             instance_id, agent_id, source="imds", noticed_at (epoch s, when this watcher saw it)

Each kind is published at most once: after Redis took it (or said another publisher had), the
watcher never asks again; while Redis is unreachable it retries with back-off, and IMDS keeps
being polled.  IMDS unreachable: logged once per outage, polled again with back-off (at most
``max_backoff_s``).  Once a terminate notice is seen, IMDS is not read any more; the watcher
ends (`run` returns "gone") ``grace_s`` after the notice's time, when the machine is gone anyway.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from redis.exceptions import RedisError

from plastic.watch.imds_client import ImdsClient, ImdsError

log = logging.getLogger(__name__)

SOURCE = "imds"


class Publisher(Protocol):
    def publish_notice(self, kind: str, target: str, fields: dict[str, Any]) -> str | None: ...


class _Outage:
    """Logs the start and end of an outage once each; says how long to wait before the next try."""

    def __init__(self, what: str, base_s: float, max_s: float):
        self.what, self.base_s, self.max_s = what, base_s, max_s
        self.since: float | None = None
        self.failures = 0

    def failed(self, error: object) -> float:
        if self.since is None:
            self.since = time.monotonic()
            log.warning("%s unreachable (%s); retrying with back-off", self.what, error)
        else:
            log.debug("%s still unreachable: %s", self.what, error)
        self.failures += 1
        return min(self.base_s * 2 ** min(self.failures, 10), self.max_s)

    def ok(self) -> None:
        if self.since is not None:
            log.info("%s reachable again after %.0f s", self.what, time.monotonic() - self.since)
        self.since, self.failures = None, 0


class AgentWatcher:
    def __init__(self, imds: ImdsClient, store: Publisher, *, agent_id: str | None = None, interval_s: float = 2.0,
                 grace_s: float = 30.0, max_backoff_s: float = 10.0, clock: Callable[[], float] = time.time):
        self.imds = imds
        self.store = store
        self.agent_id = agent_id
        self.interval_s = interval_s
        self.grace_s = grace_s
        self.clock = clock
        self.instance_id: str | None = None
        self.seen: dict[str, dict[str, Any]] = {}  # kind -> fields to publish
        self.published: dict[str, str | None] = {}  # kind -> stream id (None: published by someone else)
        self.terminate_at: float | None = None
        self.imds_outage = _Outage("IMDS", interval_s, max(max_backoff_s, interval_s))
        self.redis_outage = _Outage("Redis", 0.5, max(max_backoff_s, interval_s))
        self._redis_retry_at = 0.0
        self._warned_identity = False

    # ------------------------------------------------------------ the loop

    def run(self, stop: threading.Event) -> str:
        """Poll until `stop` is set ("stopped") or the machine is gone ("gone")."""
        where = f"agent {self.agent_id}" if self.agent_id else "this instance"
        log.info("watching %s through %s every %.1f s", where, self.imds.base_url, self.interval_s)
        while not stop.is_set():
            wait = self.poll_once()
            if self.gone():
                missing = sorted(set(self.seen) - set(self.published))
                if missing:
                    log.error("the machine's time is up and the %s notice never reached Redis", ", ".join(missing))
                log.info("the instance-action time has passed (+%.0f s grace): stopping", self.grace_s)
                return "gone"
            stop.wait(wait)
        return "stopped"

    def gone(self) -> bool:
        return self.terminate_at is not None and self.clock() > self.terminate_at + self.grace_s

    def poll_once(self) -> float:
        """One round: read IMDS (unless a terminate notice is in), publish what is new.  Returns the
        seconds to wait before the next round."""
        wait = self.interval_s
        if "terminate" not in self.seen:
            try:
                self._read_imds()
                self.imds_outage.ok()
            except ImdsError as error:
                wait = self.imds_outage.failed(error)
        self._publish()
        if self.terminate_at is not None and "terminate" in self.published:
            # nothing left to do but wait for the end (or a signal)
            wait = max(min(self.terminate_at + self.grace_s - self.clock(), 60.0), 0.0) + 0.05
        return wait

    # ------------------------------------------------------------ IMDS

    def _read_imds(self) -> None:
        now = self.clock()
        if self.instance_id is None:
            self.instance_id = self.imds.instance_id()
        action = self.imds.instance_action(now)
        if action is not None:
            if not action.readable:
                log.warning("unreadable spot/instance-action document; assuming %s (two minutes)", "terminate")
            self.terminate_at = action.time
            self.seen["terminate"] = {"terminate_at": action.time, "action": action.action, "noticed_at": now,
                                      **self._identity()}
            log.warning("spot interruption notice: %s at %.0f (in %.0f s)", action.action, action.time,
                        action.time - now)
            return
        if "rebalance" not in self.seen:
            notice_time = self.imds.rebalance(now)
            if notice_time is not None:
                self.seen["rebalance"] = {"notice_time": notice_time, "noticed_at": now, **self._identity()}
                log.warning("rebalance recommendation (made at %.0f)", notice_time)

    def _identity(self) -> dict[str, Any]:
        return {"instance_id": self.instance_id, "agent_id": self.agent_id, "source": SOURCE}

    def target(self) -> str | None:
        if self.agent_id:
            return f"agent:{self.agent_id}"
        if self.instance_id:
            return f"instance:{self.instance_id}"
        return None

    # ------------------------------------------------------------ Redis

    def _publish(self) -> None:
        todo = [k for k in ("terminate", "rebalance") if k in self.seen and k not in self.published]
        if not todo or self.clock() < self._redis_retry_at:
            return
        target = self.target()
        if target is None:
            if not self._warned_identity:
                self._warned_identity = True
                log.warning("a notice is in but the instance id is not known yet (no --agent-id): waiting for IMDS")
            return
        for kind in todo:
            fields = {k: v for k, v in {**self.seen[kind], **self._identity()}.items() if v is not None}
            try:
                stream_id = self.store.publish_notice(kind, target, fields)
            except RedisError as error:
                self._redis_retry_at = self.clock() + self.redis_outage.failed(error)
                return
            self.redis_outage.ok()
            self.published[kind] = stream_id
            if stream_id:
                log.info("published the %s notice for %s (%s)", kind, target, stream_id)
            else:
                log.info("the %s notice for %s was published already (another source)", kind, target)
