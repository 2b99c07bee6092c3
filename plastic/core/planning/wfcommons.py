"""WfCommons (WfFormat) workflow traces -> a plastic `Workload`.

Pure: takes the parsed JSON document, returns tasks with their demands, runtimes,
dependencies and a preemption policy, or raises `TraceError` naming the field
path (`workflow.specification.tasks[4].parents`).

Two layouts are read, whatever the declared schema version:

* schema 1.5 (and 1.6, structurally the same): `workflow.specification.tasks[]`
  holds the DAG (`id`, `name`, `parents`, `children`, all references by `id`)
  and `workflow.execution.tasks[]` the measurements (`runtimeInSeconds`,
  `coreCount`, `avgCPU`, `memoryInBytes`, `command`), matched by `id`;
* schema 1.4: one flat `workflow.tasks[]` carrying both, where `name` is the
  task's identifier (parents and children refer to it), `cores` stands for
  `coreCount`, and an optional `category` names the task's kind.

Reading the two layouts is wfcommons_layouts.py; here, the graph, the numbers and the
preemption policy.  The graph work (cycle check and depths) is Kahn's algorithm, iterative and
O(V + E), so traces of tens of thousands of tasks load in milliseconds.
"""

from __future__ import annotations

import logging
import math
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plastic.core.describe import show, type_name
from plastic.core.errors import TraceError
from plastic.core.model import PREEMPTIBLE, RELIABLE, TaskSpec, Workload
from plastic.core.planning.wfcommons_layouts import TraceTasks, read_document

log = logging.getLogger(__name__)

PREEMPT_MODES: tuple[str, ...] = ("infer", "all", "none")

_MIB = 1 << 20
_LIMIT = 1e300  # numbers at or above this are refused (and could not be converted to float safely)
# `blastall_ID000002`, `cpuhog_forkjoin_00000001`, `task_12` -> the part before the suffix.
_INSTANCE_SUFFIX = re.compile(r"_(?:ID)?[0-9]+$")


def _bad_ref(ref: Any, *, kind: str, owner: str, source: str, field: str) -> TraceError:
    if not isinstance(ref, str):
        return TraceError(f"must list task id strings, got {show(ref)}", source=source, field=field)
    return TraceError(f"{kind} {show(ref)} of task {show(owner)} does not exist", source=source, field=field)


def _number_or_error(value: Any, *, source: str, field: str, what: str) -> float:
    """The slow path of the numeric checks: a finite number >= 0, or a TraceError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TraceError(f"must be a number ({what}), got {type_name(value)} {show(value)}", source=source, field=field)
    if value < 0:
        raise TraceError(f"negative {what}: {show(value)}", source=source, field=field)
    if not value < _LIMIT:  # also NaN and infinity
        raise TraceError(f"{what} out of range: {show(value)}", source=source, field=field)
    return value


def _program(record: Mapping[str, Any] | None) -> str | None:
    if record is None:
        return None
    command = record.get("command")
    if isinstance(command, Mapping):
        program = command.get("program")
        if isinstance(program, str) and program.strip():
            return program.strip()
    return None


def _category(spec: Mapping[str, Any], measured: Mapping[str, Any] | None) -> str | None:
    """The task's kind: `category`, else its name without an instance number, else its program."""
    for record in (spec, measured):
        if record is not None:
            category = record.get("category")
            if isinstance(category, str) and category.strip():
                return category.strip()
    name = spec.get("name")
    if isinstance(name, str):
        stem = _INSTANCE_SUFFIX.sub("", name.strip())
        if stem:
            return stem
    return _program(measured) or _program(spec)


def _graph(read: TraceTasks, *, source: str) -> tuple[list[list[int]], list[int]]:
    """Parents (as positions, deduplicated, in order of first mention) and depths; checks the DAG."""
    n = len(read.ids)
    index, ids = read.index, read.ids
    parents: list[list[int]] = [[] for _ in range(n)]
    # Own `parents` lists first, then edges known only from a `children` list.
    for i in range(n):
        refs = read.parents[i]
        if refs:
            mine = parents[i]
            for ref in refs:
                j = index.get(ref) if type(ref) is str else None
                if j is None:
                    raise _bad_ref(ref, kind="parent", owner=ids[i], source=source,
                                   field=f"{read.field(i)}.parents")
                mine.append(j)
    for i in range(n):
        refs = read.children[i]
        if refs:
            for ref in refs:
                k = index.get(ref) if type(ref) is str else None
                if k is None:
                    raise _bad_ref(ref, kind="child", owner=ids[i], source=source,
                                   field=f"{read.field(i)}.children")
                parents[k].append(i)

    children: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for i in range(n):
        ps = parents[i]
        if not ps:
            continue
        if len(ps) > 1:
            parents[i] = ps = list(dict.fromkeys(ps))
        if i in ps:
            raise TraceError(f"dependency cycle: task {show(ids[i])} depends on itself",
                             source=source, field=f"{read.field(i)}.parents")
        indegree[i] = len(ps)
        for j in ps:
            children[j].append(i)

    depth = [0] * n
    ready = deque(i for i in range(n) if not indegree[i])
    done = 0
    while ready:
        i = ready.popleft()
        done += 1
        below = depth[i] + 1
        for c in children[i]:
            if depth[c] < below:
                depth[c] = below
            indegree[c] -= 1
            if not indegree[c]:
                ready.append(c)
    if done < n:
        _raise_cycle(read, parents, indegree, source=source)
    return parents, depth


def _raise_cycle(read: TraceTasks, parents: list[list[int]], indegree: list[int], *, source: str) -> None:
    """Name a cycle among the tasks Kahn's algorithm could not order.

    Each of them still has an unordered parent, so walking from a task to an
    unordered parent must come back to a task already seen: that loop is a cycle.
    """
    start = next(i for i in range(len(indegree)) if indegree[i] > 0)
    position: dict[int, int] = {}
    walk: list[int] = []
    node = start
    while node not in position:
        position[node] = len(walk)
        walk.append(node)
        node = next(p for p in parents[node] if indegree[p] > 0)
    loop = walk[position[node]:]
    loop.reverse()  # parent -> child order
    first = loop.index(min(loop))  # start at the task listed first in the trace
    loop = loop[first:] + loop[:first]
    names = [show(read.ids[i]) for i in loop]
    shown = names if len(names) <= 8 else [*names[:8], "..."]
    first = loop[0]
    raise TraceError(
        f"dependency cycle through task {show(read.ids[first])}: {' -> '.join(shown)} -> {names[0]}",
        source=source, field=f"{read.field(first)}.parents",
    )


def workload_from_wfcommons(
    doc: object,
    *,
    source: str,
    default_ram_mib: int = 1024,
    preempt_mode: str = "infer",
) -> Workload:
    """Read a parsed WfCommons trace (schema 1.4, 1.5 or 1.6) into a `Workload`.

    * vcpus: `coreCount` (1.4: `cores`) rounded up, else ceil(avgCPU / 100), at least 1;
    * ram_mib: ceil(memoryInBytes / 2**20), else `default_ram_mib`;
    * runtime_s: `runtimeInSeconds` (None when absent);
    * parents: the union of every `parents` and `children` list;
    * preempt: `"all"` preemptible, `"none"` reliable, `"infer"` preemptible
      exactly when another task of the same category sits at the same DAG depth
      (functional replication: a lost replica is cheap to redo).

    Every fallback taken is stated in `Workload.assumptions`.
    """
    if preempt_mode not in PREEMPT_MODES:
        raise ValueError(f"preempt_mode must be one of {', '.join(PREEMPT_MODES)}, got {preempt_mode!r}")
    if isinstance(default_ram_mib, bool) or not isinstance(default_ram_mib, int) or default_ram_mib < 1:
        raise ValueError(f"default_ram_mib must be an integer >= 1, got {default_ram_mib!r}")
    version, read = read_document(doc, source=source)
    parents, depth = _graph(read, source=source)
    m = _measures(read, default_ram_mib, source=source)
    preempts = _preempts(read, depth, preempt_mode)
    ids = read.ids
    # Positional for speed (thousands of tasks): id, vcpus, ram_mib, preempt, runtime_s, instance_type, parents.
    tasks = tuple([
        TaskSpec(ids[i], m.vcpus[i], m.ram_mib[i], preempts[i], m.runtimes[i], None,
                 tuple([ids[j] for j in parents[i]]) if parents[i] else ())
        for i in range(len(ids))
    ])
    assumptions = _assumptions(m, preempts, default_ram_mib, preempt_mode)
    log.debug("%s: %d tasks, schema %s, %d assumptions", source, len(ids), version, len(assumptions))
    return Workload(tasks=tasks, assumptions=tuple(assumptions), source=source)


@dataclass(slots=True)
class _Measures:
    """Each task's vcpus, RAM and runtime as measured, and how many fell back on an assumption."""

    vcpus: list[int]
    ram_mib: list[int]
    runtimes: list[float | None]
    from_avg_cpu: int = 0
    no_cpu: int = 0
    no_ram: int = 0
    no_runtime: int = 0


def _measures(read: TraceTasks, default_ram_mib: int, *, source: str) -> _Measures:
    n = len(read.ids)
    m = _Measures([1] * n, [default_ram_mib] * n, [None] * n)
    vcpus_list, ram_list, runtimes = m.vcpus, m.ram_mib, m.runtimes
    limit = _LIMIT
    for i, record in enumerate(read.measured):
        if record is None:
            m.no_cpu += 1
            m.no_ram += 1
            m.no_runtime += 1
            continue
        # Fast path: plain int/float in range; anything else goes to the checking slow path.
        runtime = record.get("runtimeInSeconds")
        if runtime is None:
            m.no_runtime += 1
        else:
            if not ((type(runtime) is float or type(runtime) is int) and 0 <= runtime < limit):
                runtime = _number_or_error(runtime, source=source, what="runtime in seconds",
                                           field=f"{read.measured_field(i)}.runtimeInSeconds")
            runtimes[i] = float(runtime)
        key = "coreCount"
        cores = record.get(key)
        if cores is None:
            key = "cores"
            cores = record.get(key)
        if cores is not None:
            if not ((type(cores) is int or type(cores) is float) and 0 <= cores < limit):
                cores = _number_or_error(cores, source=source, what="core count",
                                         field=f"{read.measured_field(i)}.{key}")
            if type(cores) is not int:
                cores = math.ceil(cores)
            vcpus_list[i] = cores if cores > 1 else 1
        avg_cpu = record.get("avgCPU")
        if avg_cpu is not None and not ((type(avg_cpu) is float or type(avg_cpu) is int) and 0 <= avg_cpu < limit):
            avg_cpu = _number_or_error(avg_cpu, source=source, what="CPU utilisation in %",
                                       field=f"{read.measured_field(i)}.avgCPU")
        if cores is None:
            if avg_cpu is not None:
                vcpus_list[i] = max(1, math.ceil(avg_cpu / 100))
                m.from_avg_cpu += 1
            else:
                m.no_cpu += 1
        memory = record.get("memoryInBytes")
        if memory is not None and not ((type(memory) is int or type(memory) is float) and 0 <= memory < limit):
            memory = _number_or_error(memory, source=source, what="memory in bytes",
                                      field=f"{read.measured_field(i)}.memoryInBytes")
        if memory:  # absent, or 0 (not measured)
            ram_list[i] = -(-memory // _MIB) if type(memory) is int else max(1, math.ceil(memory / _MIB))
        else:
            m.no_ram += 1
    return m


def _preempts(read: TraceTasks, depth: list[int], preempt_mode: str) -> list:
    n = len(read.ids)
    if preempt_mode == "all":
        return [PREEMPTIBLE] * n
    if preempt_mode == "none":
        return [RELIABLE] * n
    measured = read.measured
    keys = []
    strip_suffix = _INSTANCE_SUFFIX.sub
    for i, spec in enumerate(read.specs):
        name = spec.get("name")
        if type(name) is str and "category" not in spec and (measured[i] is None or "category" not in measured[i]):
            category = strip_suffix("", name.strip()) or _category(spec, measured[i])  # the usual case
        else:
            category = _category(spec, measured[i])
        keys.append((category, depth[i]))
    counts: dict[tuple[str | None, int], int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return [PREEMPTIBLE if key[0] is not None and counts[key] > 1 else RELIABLE for key in keys]


def _assumptions(m: _Measures, preempts: list, default_ram_mib: int, preempt_mode: str) -> list[str]:
    n = len(preempts)
    assumptions: list[str] = []
    if m.from_avg_cpu:
        assumptions.append(f"vcpus of {m.from_avg_cpu} of {n} tasks derived from avgCPU as ceil(avgCPU / 100): "
                           "no core count recorded.")
    if m.no_cpu:
        assumptions.append(f"vcpus of {m.no_cpu} of {n} tasks unknown: assumed 1 vCPU.")
    if m.no_ram:
        assumptions.append(f"ram of {m.no_ram} of {n} tasks unknown: assumed {default_ram_mib} MiB.")
    if m.no_runtime:
        assumptions.append(f"runtime of {m.no_runtime} of {n} tasks unknown: left unset.")
    if preempt_mode == "infer":
        count = sum(1 for p in preempts if p is PREEMPTIBLE)
        assumptions.append(
            f"preempt inferred from replicated categories: {count} of {n} tasks preemptible "
            "(another task of the same category at the same DAG depth)."
        )
    return assumptions
