"""A small hand-made workflow: the elastic simulation's (tests/test_bench_elastic.py), the cost floor's
(tests/core/account/test_floor.py) and a plan's for the Provisioner (tests/framework/test_provisioner.py)."""

from __future__ import annotations

from plastic.core.model import RELIABLE, Preempt, TaskSpec


def dag() -> list[TaskSpec]:
    """split (reliable) -> 8 x sort (preempt 2, 300 s) -> merge (reliable)."""
    sorts = [TaskSpec(f"sort{i}", 1, 1024, Preempt(2), 300.0, parents=("split",)) for i in range(8)]
    return [TaskSpec("split", 1, 512, RELIABLE, 30.0), *sorts,
            TaskSpec("merge", 1, 1024, RELIABLE, 30.0, parents=tuple(t.id for t in sorts))]
