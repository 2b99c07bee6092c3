"""Runtime estimates per tool, for the JobBook's notice decisions (let a task finish, or kill it now).

Pure: the book learns each finished job's wall time as it ends, and the shell hands it each tool's
recorded history when the book asks for it (LoadRuntimeHistory -> RuntimeHistoryLoaded), so the
same events always give the same estimates.  The estimate is a high percentile (p90 by default) of
what is known, so a task is left to finish only when nearly all its earlier runs would have fitted
the window.  At most KEEP_PER_TOOL values are kept per tool, newest first.

A plan that carries runtimes (one made from a trace) gives each tool a prior: the runtimes of the
plan's tasks of that tool's step (`planned_runtimes`), used when the store has no history of it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from plastic.core.model import TaskSpec
from plastic.core.planning.plan import step_of
from plastic.core.stats import percentile

KEEP_PER_TOOL = 200
ESTIMATE_PERCENTILE = 90.0


class RuntimeHistory:
    def __init__(self, *, q: float = ESTIMATE_PERCENTILE, min_samples: int = 1):
        self.q = q
        self.min_samples = min_samples
        self.by_tool: dict[str, deque[float]] = {}

    def estimate(self, tool: str | None) -> float | None:
        if not tool:
            return None
        values = self.by_tool.get(tool, ())
        return percentile(values, self.q) if len(values) >= self.min_samples else None

    def values(self, tool: str | None) -> tuple[float, ...]:
        """What is known of the tool's runtimes (newest first)."""
        return tuple(self.by_tool.get(tool, ())) if tool else ()

    def first_sight(self, tool: str | None) -> bool:
        """True the first time a tool is seen (its recorded history is then worth loading)."""
        if not tool or tool in self.by_tool:
            return False
        self.by_tool[tool] = deque(maxlen=KEEP_PER_TOOL)
        return True

    def observed(self, tool: str | None, seconds: float) -> None:
        """A job of this run finished after ``seconds``: the newest value."""
        if tool and seconds > 0:
            self.by_tool.setdefault(tool, deque(maxlen=KEEP_PER_TOOL)).appendleft(float(seconds))

    def loaded(self, tool: str, seconds: Iterable[float]) -> None:
        """Recorded history (newest first) goes behind this run's own values, up to the limit."""
        known = self.by_tool.setdefault(tool, deque(maxlen=KEEP_PER_TOOL))
        for value in seconds:
            if len(known) >= KEEP_PER_TOOL:
                break
            known.append(float(value))


def planned_runtimes(tasks: Sequence[TaskSpec], step_of_tool: Mapping[str, str | None]) -> dict[str, tuple[float, ...]]:
    """Tool -> the runtimes (s) the plan gives the tasks of its step, for the tools whose step has any."""
    by_step: dict[str, list[float]] = {}
    for task in tasks:
        if task.runtime_s is not None and task.runtime_s > 0:
            by_step.setdefault(step_of(task.id), []).append(float(task.runtime_s))
    return {tool: tuple(by_step[step]) for tool, step in step_of_tool.items() if step in by_step}
