"""Waiting in tests: on a condition, never on time.

``eventually(predicate, timeout, what)`` calls ``predicate`` until it gives a truthy value and returns
that value.  On timeout it fails the test with an AssertionError that says what it waited for, for how
long, and what the predicate gave (or raised) the last time, so a failure report tells the story
without a rerun.  Options cover what the suite's waits need:

- ``alive``: processes that must keep running while we wait; one that ends fails the wait at once,
  with its exit code (waiting 90 s for a dead process to do something is a slow way to fail);
- ``ignoring``: exception types that mean "not yet" (a server still starting, a file half written);
  any other exception from the predicate ends the wait and propagates as it is;
- ``condition``: a ``threading.Condition`` that the producer notifies; the wait sleeps on it (with the
  interval as an upper bound) instead of polling, and calls the predicate with it held;
- ``describe``: a callable whose text is appended to the failure (a log's tail, a status snapshot).

The timeout is a bound on a failure, not a bet on a duration: it is set well above the time the
condition takes on a loaded two-core machine, so it only matters when something is wrong.  A sleep that
paces a loop is fine; a sleep that hopes something has happened by its end is not (tests/test_suite_rules.py).
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

_NOTHING = object()


def _show(value: Any, limit: int = 600) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ended(alive: Iterable[subprocess.Popen]) -> subprocess.Popen | None:
    for proc in alive:
        if proc.poll() is not None:
            return proc
    return None


def eventually(predicate: Callable[[], T], timeout: float, what: str, *, interval: float = 0.05,
               alive: subprocess.Popen | Iterable[subprocess.Popen] = (),
               ignoring: type[BaseException] | tuple[type[BaseException], ...] = (),
               condition: threading.Condition | None = None,
               describe: Callable[[], str] | None = None) -> T:
    """The first truthy value of ``predicate()``, called every ``interval`` s (or on each notify of
    ``condition``) for at most ``timeout`` s; an AssertionError naming ``what`` and the last value seen
    otherwise.  See the module's docstring for the options."""
    procs = [alive] if isinstance(alive, subprocess.Popen) else list(alive)
    deadline = time.monotonic() + timeout
    last: Any = _NOTHING
    calls = 0

    def fail(why: str) -> AssertionError:
        seen = "never called" if last is _NOTHING else f"last saw {_show(last)} (after {calls} look(s))"
        extra = ""
        if describe is not None:
            try:
                extra = "\n" + describe()
            except Exception as error:  # the description is a help, never the failure itself
                extra = f"\n(describe failed: {error!r})"
        return AssertionError(f"{why} waiting for {what}; {seen}{extra}")

    def look() -> Any:
        nonlocal last, calls
        calls += 1
        try:
            last = predicate()
        except ignoring as error:  # type: ignore[misc]  # "not yet", as the caller said
            last = error
            return None
        return last

    while True:
        if condition is not None:
            with condition:
                value = look()
                while not value:
                    left = deadline - time.monotonic()
                    if left <= 0 or _ended(procs) is not None:
                        break
                    condition.wait(min(left, interval))
                    value = look()
        else:
            value = look()
        if value:
            return value
        ended = _ended(procs)
        if ended is not None:
            command = " ".join(map(str, ended.args)) if isinstance(ended.args, (list, tuple)) else str(ended.args)
            raise fail(f"{command[:200]} ended with exit code {ended.returncode}")
        if time.monotonic() >= deadline:
            raise fail(f"timed out after {timeout:g} s")
        time.sleep(interval)

