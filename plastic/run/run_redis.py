"""The run's Redis as `plastic run` holds it: opened (a given URL, or the run's embedded server),
kept alive (an embedded server that dies is started again on its files), and written to when it
answers (a run's end waits for a Redis that is away).

The embedded server keeps its data in run_dir/redis in an AOF (Redis writes it before it answers, so a
killed server loses nothing it acknowledged; only a machine crash can lose the last second, which is
fsynced every second); started again, it reloads the AOF and listens on the same unix socket, so the
Toil leader's and the watchers' clients (which reconnect on their own) find it where it was.  Writes
sent while it was away are retried by the batch system's writer, and state changes are compare-and-set,
so a transition is never applied twice.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plastic.core.book.lifecycle import RunState
from plastic.core.errors import InputError, RunFailedError
from plastic.store.store_errors import is_unavailable
from plastic.store.urls import URL_ENV, is_redacted, redact

log = logging.getLogger(__name__)

WAIT_S = 120.0  # at a run's end, how long to wait for an unreachable Redis
CHECK_EVERY_S = 1.0


class RunRedis:
    def __init__(self, store: Any, url: str, *, server: Any = None, data_dir: Path | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.url = url
        self.server = server  # the embedded server this run started, if any
        self.data_dir = data_dir
        self.restarts = 0
        self.clock = clock
        self._checked_at = 0.0
        self._closers: list[Callable[[], None]] = []

    @classmethod
    def open(cls, redis_url: str | None, run_dir: Path) -> RunRedis:
        """The Redis at ``redis_url``, else the run's embedded server (run_dir/redis), started here."""
        from plastic.store import Store, connect, start_embedded

        if redis_url:
            client, close = connect(redis_url, None)
            opened = cls(Store(client), redis_url)
            opened._closers.append(close)
            return opened
        server = start_embedded(run_dir / "redis")
        client = server.client()
        opened = cls(Store(client), server.url, server=server, data_dir=run_dir / "redis")
        opened._closers.append(client.close)
        return opened

    def keep_alive(self) -> None:
        """Start the embedded server again if it died (checked at most every CHECK_EVERY_S)."""
        if self.server is None or self.clock() - self._checked_at < CHECK_EVERY_S:
            return
        self._checked_at = self.clock()
        if self.server.running():
            return
        from plastic.store import start_embedded

        old_pid = self.server.pid
        self.server = start_embedded(self.data_dir)
        self.restarts += 1
        log.warning("the run's embedded Redis (pid %s) ended; started again on its files (pid %s, %s)", old_pid,
                    self.server.pid, "same address" if self.server.url == self.url else f"NEW address {redact(self.server.url)}")

    def when_answering(self, write: Callable[[], Any], run_id: str, wait_s: float = WAIT_S) -> Any:
        """``write()``, tried again while Redis is unreachable, for up to ``wait_s``."""
        deadline = self.clock() + wait_s
        while True:
            try:
                return write()
            except Exception as error:
                if not is_unavailable(error):
                    raise
                if self.clock() >= deadline:
                    raise RunFailedError(f"run {run_id}: Redis still unreachable ({error}); the run's end is in "
                                         f"its directory (report.json) but not in Redis", run_id=run_id) from None
                log.warning("run %s: Redis unreachable (%s); waiting for it to record the run's end", run_id, error)
                time.sleep(1.0)
                self.keep_alive()

    def go_planning(self, run_id: str, *, create: bool, fields: dict[str, Any]) -> None:
        """The run (created first when ``create``) goes from SUBMITTED to PLANNING with ``fields``."""
        if create:
            self.store.create_run(run_id, fields=fields)
        self.store.transition_run(run_id, RunState.PLANNING, expected=RunState.SUBMITTED, fields=fields)

    def close(self) -> None:
        for close in self._closers:
            close()
        if self.server is not None:
            self.server.stop()


def password_needed(saved: str, run_dir: Path) -> InputError:
    """The error for a run whose run.json keeps its Redis URL without the password, and nothing gave it."""
    return InputError(f"the run's Redis ({saved}) needs its password: give --redis URL (or set {URL_ENV})",
                      source=str(run_dir), field="--redis")


def open_to_read(run_dir: Path, given: str | None, ca: str | None) -> tuple[str, Any, Callable[[], None]]:
    """The Redis of the run in ``run_dir``, for `plastic status RUN_DIR` and `plastic logs RUN_DIR`:
    ``given``, else the URL its run.json keeps (kept without its password: $PLASTIC_REDIS_URL), else its
    embedded server (found if it serves, else started on the run's files and stopped again by the
    returned close).  -> (run id, Store, close)."""
    from plastic.store import Store, connect, start_embedded

    try:
        doc = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        run_id, saved = str(doc["run_id"]), doc.get("redis_url")
    except FileNotFoundError:
        raise InputError("not a run directory: it has no run.json", source=str(run_dir)) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"run.json unreadable ({exc})", source=str(run_dir)) from None
    url = given or saved
    if url and not given and is_redacted(saved):  # kept without its password: --redis, else the service's
        url = os.environ.get(URL_ENV) or None
        if url is None:
            raise password_needed(saved, run_dir)
    if url:
        client, close = connect(url, ca)
        return run_id, Store(client), close
    if not (run_dir / "redis").is_dir():
        raise InputError("the run has no Redis of its own (redis/) and run.json names none: give --redis URL",
                         source=str(run_dir))
    server = start_embedded(run_dir / "redis")
    client = server.client()

    def close() -> None:
        client.close()
        server.stop()  # only if this process started it: a run's own server is left serving it

    return run_id, Store(client), close
