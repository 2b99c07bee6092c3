"""Synthetic workloads for benchmarks: a seeded mix of task shapes, and a writer
that stores them as a WfCommons (schema 1.5) trace so the CLI can plan them.

    python bench/synthetic.py 10000 --seed 1 -o /tmp/mixed-10000.json
    plastic plan /tmp/mixed-10000.json --concurrent

The mix: vCPUs uniform in 1..8, RAM per vCPU uniform in 0.5..8 GiB, so shapes
span compute-heavy to memory-heavy and no single instance family fits all.
`--wide`: vCPUs drawn from 1, 2, 4, 8, 16 (small ones twice as likely), RAM per
vCPU uniform in 0.25..6.75 GiB, runtimes 10 s..1 h: more shapes, bigger nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

try:
    from plastic.core.model import PREEMPTIBLE, Preempt, TaskSpec
except ModuleNotFoundError:  # run as a script from a checkout without an installed plastic
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from plastic.core.model import PREEMPTIBLE, Preempt, TaskSpec

RUNTIME_S = 60.0
TASK_NAME = "mixed_task"


def mixed_tasks(n: int, seed: int, *, preempt: Preempt = PREEMPTIBLE) -> list[TaskSpec]:
    """`n` independent tasks `t00001`... with seeded random shapes and a 60 s runtime.

    They are preemptible by default: written with `write_wfcommons` and read
    back with the default `preempt_mode="infer"` they all share one category
    at depth 0, so the round trip gives the same tasks.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    width = max(5, len(str(n)))
    tasks: list[TaskSpec] = []
    for i in range(1, n + 1):
        vcpus = rng.randint(1, 8)
        gib_per_vcpu = rng.uniform(0.5, 8.0)
        tasks.append(TaskSpec(
            id=f"t{i:0{width}d}",
            vcpus=vcpus,
            ram_mib=round(vcpus * gib_per_vcpu * 1024),
            preempt=preempt,
            runtime_s=RUNTIME_S,
        ))
    return tasks


def wide_tasks(n: int, seed: int, *, preempt: Preempt = PREEMPTIBLE) -> list[TaskSpec]:
    """`n` independent tasks of a wider mix (see the module's doc), every one fits a 16-vCPU node."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    width = max(5, len(str(n)))
    tasks: list[TaskSpec] = []
    for i in range(1, n + 1):
        vcpus = rng.choice((1, 1, 2, 2, 4, 4, 8, 16))
        gib_per_vcpu = rng.uniform(0.25, 6.75)
        tasks.append(TaskSpec(id=f"t{i:0{width}d}", vcpus=vcpus, ram_mib=round(vcpus * gib_per_vcpu * 1024),
                              preempt=preempt, runtime_s=rng.uniform(10.0, 3600.0)))
    return tasks


def wfcommons_document(tasks: Sequence[TaskSpec], *, name: str = "plastic-synthetic-mixed") -> dict:
    """The WfCommons 1.5 document for `tasks` (edges from `TaskSpec.parents`, if any)."""
    children: dict[str, list[str]] = {t.id: [] for t in tasks}
    for t in tasks:
        for p in t.parents:
            children.setdefault(p, []).append(t.id)
    spec_tasks = []
    exec_tasks = []
    for t in tasks:
        spec_tasks.append({
            "name": TASK_NAME,
            "id": t.id,
            "parents": list(t.parents),
            "children": children.get(t.id, []),
            "inputFiles": [],
            "outputFiles": [],
        })
        exec_tasks.append({
            "id": t.id,
            "runtimeInSeconds": t.runtime_s if t.runtime_s is not None else RUNTIME_S,
            "command": {"program": TASK_NAME, "arguments": []},
            "coreCount": t.vcpus,
            "memoryInBytes": t.ram_mib * 1024 * 1024,
        })
    return {
        "name": name,
        "description": f"{len(tasks)} synthetic tasks (plastic bench/synthetic.py)",
        "createdAt": "2025-01-01T00:00:00Z",
        "schemaVersion": "1.5",
        "workflow": {
            "specification": {"tasks": spec_tasks, "files": []},
            "execution": {
                "makespanInSeconds": 0,
                "executedAt": "2025-01-01T00:00:00Z",
                "tasks": exec_tasks,
            },
        },
    }


def write_wfcommons(tasks: Iterable[TaskSpec], path: str | os.PathLike[str]) -> None:
    """Write `tasks` as a WfCommons schema-1.5 JSON trace at `path`."""
    doc = wfcommons_document(list(tasks))
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, separators=(",", ":"))
        fh.write("\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a seeded synthetic WfCommons trace of mixed tasks.")
    parser.add_argument("n", type=int, help="number of tasks")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--wide", action="store_true", help="the wider mix (see the module's doc)")
    parser.add_argument("-o", "--output", required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("n must be >= 1")
    tasks = (wide_tasks if args.wide else mixed_tasks)(args.n, args.seed)
    write_wfcommons(tasks, args.output)
    print(f"{args.output}: {len(tasks)} tasks, seed {args.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
