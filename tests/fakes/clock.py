"""A clock that moves only when the test moves it, for code that takes a ``clock`` callable."""

from __future__ import annotations


class Clock:
    """``clock()`` is ``clock.t`` (seconds); a test sets or advances ``t``."""

    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds
