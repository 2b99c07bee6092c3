"""Run independent pieces of pure work at the same time, one forked process per spare core.

`plastic plan` of a big workload packs it with several strategies that share nothing
(plastic.core.planning.planner.solve's `run_each`); on a host with two cores they take half the time
side by side.  A forked worker starts from the caller's memory (the tasks, the catalog, the
closure to run), so nothing but each result is pickled, through a pipe.  (multiprocessing's
pool does the same, but importing it costs about 4% of a 10,000-task `plastic plan`, whose
whole process is meant to take under a second.)

A process that already runs threads is never forked (a fork copies a lock held by another
thread as it is), and neither is a single item or a host with one core: those run here, one by
one.  A worker whose work fails says only that; the item is run again here, so the error raised
is the one a run one by one raises.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fork_map(attempt: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """[attempt(x) for x in items], in that order, the items shared round-robin between this
    process and one forked worker per spare core."""
    ways = min(cores(), len(items))
    if ways < 2 or not hasattr(os, "fork") or threading.active_count() > 1:
        return [attempt(x) for x in items]
    workers: list[tuple[int, int, int]] = []  # (share, pid, read end)
    try:
        for share in range(1, ways):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker: its share, then out, whatever happens
                try:
                    os.close(read)
                    _work(attempt, items[share::ways], write)
                finally:
                    os._exit(0)
            os.close(write)
            workers.append((share, pid, read))
        results: list[R | None] = [None] * len(items)
        results[0::ways] = [attempt(x) for x in items[0::ways]]
        for share, pid, read in workers:
            with os.fdopen(read, "rb") as f:
                data = f.read()
            os.waitpid(pid, 0)
            workers = [w for w in workers if w[1] != pid]
            done = pickle.loads(data) if data else None
            # a worker that failed (or died) sent nothing usable: its share is run here
            results[share::ways] = done if done is not None else [attempt(x) for x in items[share::ways]]
        return results  # type: ignore[return-value]
    finally:
        for _, pid, read in workers:  # left behind by an exception here: stop and reap them
            os.close(read)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def _work(attempt: Callable[[T], R], items: Sequence[T], write: int) -> None:
    try:
        payload = pickle.dumps([attempt(x) for x in items], protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:
        payload = pickle.dumps(None)
    with os.fdopen(write, "wb") as f:
        f.write(payload)
