"""`RuntimeRecords`: the runtime history part of `Store` (plastic.store.part): the recent runtimes of
each tool, over every run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plastic.core.stats import percentile
from plastic.store.part import StorePart

if TYPE_CHECKING:
    from redis.client import Pipeline


class RuntimeRecords(StorePart):
    runtime_cap: int  # runtimes kept per tool

    def record_runtime(self, tool: str, seconds: float, *, pipeline: Pipeline | None = None) -> None:
        """Remember one runtime of ``tool``; only the newest ``runtime_cap`` are kept."""
        key = self.keys.runtime(tool)
        pipe = pipeline if pipeline is not None else self.client.pipeline(transaction=True)
        pipe.lpush(key, repr(float(seconds)))
        pipe.ltrim(key, 0, self.runtime_cap - 1)
        if pipeline is None:
            pipe.execute()

    def runtime_history(self, tool: str, limit: int | None = None) -> list[float]:
        """Recent runtimes of ``tool`` in seconds, newest first."""
        end = -1 if limit is None else limit - 1
        return [float(v) for v in self.client.lrange(self.keys.runtime(tool), 0, end)]

    def runtime_percentile(self, tool: str, q: float) -> float | None:
        """The q-th percentile (0-100) of ``tool``'s recent runtimes; None without history."""
        history = self.runtime_history(tool)
        return percentile(history, q) if history else None
