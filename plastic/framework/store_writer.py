"""A background thread that carries out Store writes in order, a pipeline per batch.

Scheduling must never wait for Redis: `StoreWriter.submit` only puts `Write`s on a bounded queue
(a full queue drops the write and says so in the log).  The thread takes everything queued (up to
``batch_max``), queues each write on one MULTI/EXEC pipeline and runs it; Redis applies a batch
whole or not at all, so a batch that met a connection error is retried as it is, with back-off,
until Redis answers again (the outage is logged, not raised).  A write Redis refuses (a state
transition the table does not allow, an unknown record) is logged as an error with the refusal;
the other writes of its batch stand.  `close` flushes, waiting at most its timeout.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import ResponseError

from plastic.store import Store
from plastic.store.store_errors import is_unavailable, translate

log = logging.getLogger(__name__)

OUTAGE_LOG_EVERY_S = 30.0


@dataclass(frozen=True, slots=True)
class Write:
    """One call of a Store method that takes ``pipeline=``; ``what`` names it in logs."""

    what: str
    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


class StoreWriter:
    def __init__(self, store: Store, *, batch_max: int = 256, queue_max: int = 100_000,
                 retry_max_s: float = 5.0, name: str = "plastic-store-writer"):
        self.store = store
        self.batch_max = batch_max
        self.retry_max_s = retry_max_s
        self.queue: queue.Queue[Write] = queue.Queue(maxsize=queue_max)
        self.written = 0  # writes Redis applied
        self.refused = 0  # writes Redis refused (logged)
        self.dropped = 0  # writes never sent (queue full, outage at close, bad arguments)
        self._pending = 0  # submitted, not yet done
        self._idle = threading.Condition()
        self._closing = threading.Event()
        self._deadline: float | None = None
        self._outage_since: float | None = None
        self._waited = 0  # writes waiting when the last outage was seen
        self._outage_logged_at = 0.0
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ callers

    def submit(self, writes: Iterable[Write]) -> None:
        """Queue writes (never blocks)."""
        for w in writes:
            if self._closing.is_set() and not self._thread.is_alive():
                self._drop(w, "the writer is closed")
                continue
            with self._idle:
                self._pending += 1
            try:
                self.queue.put_nowait(w)
            except queue.Full:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()
                self._drop(w, f"the queue is full ({self.queue.maxsize} writes waiting)")

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every submitted write is done (applied, refused or dropped); False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._idle:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is queued, waiting at most ``timeout_s``; then the thread ends."""
        self._deadline = time.monotonic() + timeout_s
        self._closing.set()
        self._thread.join(timeout_s + 1.0)
        if self._thread.is_alive() or self._pending:
            log.error("Redis writer closed with %d writes not written (Redis unreachable or slow)", self._pending)

    # ------------------------------------------------------------ the thread

    def _loop(self) -> None:
        while True:
            try:
                first = self.queue.get(timeout=0.2)
            except queue.Empty:
                if self._closing.is_set():
                    return
                continue
            batch = [first]
            while len(batch) < self.batch_max:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._write(batch)
            except Exception:  # the writer must survive anything
                log.exception("Redis writer: a batch of %d writes failed; dropped", len(batch))
                self.dropped += len(batch)
            finally:
                with self._idle:
                    self._pending -= len(batch)
                    self._idle.notify_all()

    def _past_deadline(self) -> bool:
        return self._closing.is_set() and self._deadline is not None and time.monotonic() >= self._deadline

    def _write(self, batch: list[Write]) -> None:
        delay = 0.2
        while True:
            pipe = self.store.pipeline(transaction=True)
            spans: list[tuple[Write, int, int]] = []
            for w in batch:
                start = len(pipe)
                try:
                    getattr(self.store, w.method)(*w.args, **w.kwargs, pipeline=pipe)
                except Exception as error:  # noqa: BLE001 (bad arguments: nothing was queued for it)
                    self.dropped += 1
                    log.error("Redis write %s not sent: %s", w.what, error)
                    continue
                spans.append((w, start, len(pipe)))
            if not spans:
                return
            try:
                results = pipe.execute(raise_on_error=False)
                unavailable = next((r for r in results if isinstance(r, Exception) and is_unavailable(r)), None)
                if unavailable is not None:  # refused for now (MISCONF: Redis cannot write its AOF): retried
                    raise unavailable
            except Exception as error:
                if not is_unavailable(error):
                    raise
                self._outage(error, len(batch))
                if self._past_deadline():
                    self.dropped += len(spans)
                    log.error("Redis writer: %d writes dropped at close (%s)", len(spans), error)
                    return
                time.sleep(delay)
                delay = min(delay * 2, self.retry_max_s)
                continue
            finally:
                pipe.reset()
            self._recovered()
            self._check(spans, results)
            return

    def _check(self, spans: list[tuple[Write, int, int]], results: list[Any]) -> None:
        for w, start, end in spans:
            errors = [r for r in results[start:end] if isinstance(r, Exception)]
            if not errors:
                self.written += 1
                continue
            self.refused += 1
            err = errors[0]
            err = translate(err) if isinstance(err, ResponseError) else err
            log.error("Redis refused %s: %s", w.what, err)

    def _outage(self, error: Exception, waiting: int) -> None:
        now = time.monotonic()
        if self._outage_since is None:
            self._outage_since = now
        self._waited = waiting + self.queue.qsize()
        if now - self._outage_logged_at >= OUTAGE_LOG_EVERY_S:
            self._outage_logged_at = now
            log.warning("Redis unreachable for %.0f s (%s); %d writes wait and are retried",
                        now - self._outage_since, error, waiting + self.queue.qsize())

    def _recovered(self) -> None:
        if self._outage_since is not None:
            log.warning("Redis reachable again after %.1f s; the %d writes that waited are sent in order, "
                        "state changes compare-and-set (one applied already is refused, not applied twice)",
                        time.monotonic() - self._outage_since, self._waited)
            self._outage_since = None
            self._outage_logged_at = 0.0

    def _drop(self, w: Write, why: str) -> None:
        self.dropped += 1
        if self.dropped == 1 or self.dropped % 1000 == 0:
            log.error("Redis write %s dropped: %s (%d dropped so far)", w.what, why, self.dropped)
