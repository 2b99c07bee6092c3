"""The master's deadlines in one heap (no I/O): each a time, a kind ("retry", "filter", "failover",
"agent_remove", "interrupt", "auto_interrupt"), a key and a generation.  A timer is never cancelled:
its owner bumps a generation instead and ignores a timer that fires with an older one."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any


class TimerHeap:
    """Deadlines in order of time, then of arming."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, Any, int]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, when: float, kind: str, key: Any = None, gen: int = 0) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, kind, key, gen))

    def next_deadline(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> Iterator[tuple[str, Any, int]]:
        """(kind, key, generation) of every timer due at `now`, earliest first, taking them off the heap;
        one armed meanwhile (by the caller, between two of these) comes out too if it is due."""
        while self._heap and self._heap[0][0] <= now:
            _, _, kind, key, gen = heapq.heappop(self._heap)
            yield kind, key, gen
