"""What each step asked for against what its tasks used, and the annotation that would have fit (pure).

plastic's executor measures each task when its process is reaped (CPU seconds, peak resident set,
wall seconds: plastic.core.model.TaskUsage) and the JobBook puts that on the attempt's record.  Folded
per step of the workflow (the ``issued`` record's step, else its tool), this gives the vcpus and vram
asked against the cores kept busy (CPU seconds over wall seconds) and the peak RSS, median and max.

An annotation is called out when it asks for much more than any task of the step used (at least twice
the need and at least one vcpu or 256 MiB more) or less than a task used: the annotation that would have
fit is the used maximum rounded up (whole vcpus; RAM to the next 256 MiB, with a quarter more for
headroom).  What it would have saved is priced at the run's prices: a task holds the larger of its CPU
and RAM shares of the node it ran on, for as long as it ran, so its cost is its node's price times that
share times its hours; the saving is that cost with the asked share less that with the fitting share.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

from plastic.core.book.records import AgentUpdated, JobEnded, JobQueued, Record
from plastic.core.model import TaskUsage

RAM_STEP_MIB = 256
RAM_HEADROOM = 1.25
WASTE_FACTOR = 2.0


@dataclass(frozen=True, slots=True)
class StepUsage:
    step: str
    tasks_measured: int
    vcpus_asked: int
    ram_mib_asked: int
    cores_used_median: float
    cores_used_max: float
    rss_mib_median: float
    rss_mib_max: float
    cpu_s_total: float
    vcpus_fit: int  # the annotation that would have fitted every measured task
    ram_mib_fit: int
    finding: str | None  # "asks for too much" / "asks for too little", in words; None when it fits
    usd_saved: float  # at the run's prices, had the step asked for what would fit (0 when it asks too little)


@dataclass
class _Task:
    step: str
    vcpus: int
    ram_mib: int


@dataclass
class UsageTally:
    """Folds a run's records one at a time: JobQueued (a task's step and what it asks), AgentUpdated (a
    node's capacity), JobEnded (a job's end, with what its last attempt used)."""

    tasks: dict[str, _Task] = field(default_factory=dict)
    agents: dict[str, tuple[int, int]] = field(default_factory=dict)  # agent id -> (vcpus, ram_mib)
    measured: dict[str, list[tuple[str, TaskUsage]]] = field(default_factory=dict)  # step -> (agent, usage)

    def add(self, record: Record) -> None:
        match record:
            case JobQueued(job_id=job_id, step=step, tool=tool, vcpus=vcpus, ram_mib=ram_mib) if job_id is not None:
                self.tasks[str(job_id)] = _Task(str(step or tool or "(unnamed)"), int(vcpus or 0), int(ram_mib or 0))
            case AgentUpdated(agent_id=agent_id, vcpus=vcpus, ram_mib=ram_mib) if agent_id:
                self.agents[str(agent_id)] = (int(vcpus or 0), int(ram_mib or 0))
            case JobEnded(job_id=job_id, agent_id=agent_id, usage=usage):
                task = self.tasks.get(str(job_id))
                if usage is not None and task is not None:
                    self.measured.setdefault(task.step, []).append((str(agent_id), usage))

    def steps(self, usd_per_hour: Mapping[str, float]) -> tuple[StepUsage, ...]:
        """Per step, in the order steps were first issued; ``usd_per_hour``: agent id -> its price."""
        asked: dict[str, _Task] = {}
        for task in self.tasks.values():
            asked.setdefault(task.step, task)
        return tuple(self._step(step, asked[step], self.measured[step], usd_per_hour)
                     for step in asked if step in self.measured)

    def _step(self, step: str, ask: _Task, measured: list[tuple[str, TaskUsage]],
              usd_per_hour: Mapping[str, float]) -> StepUsage:
        cores = [_cores(u) for _, u in measured]
        rss = [float(u.max_rss_mib or 0.0) for _, u in measured]
        vcpus_fit = max(1, math.ceil(max(cores) - 0.05))
        ram_fit = max(RAM_STEP_MIB, math.ceil(max(rss) * RAM_HEADROOM / RAM_STEP_MIB) * RAM_STEP_MIB)
        finding = _finding(ask, max(cores), max(rss), vcpus_fit, ram_fit)
        saved = 0.0
        if finding is not None and finding.startswith("asks for more"):
            fit_vcpus, fit_ram = min(vcpus_fit, ask.vcpus), min(ram_fit, ask.ram_mib)
            for agent_id, u in measured:
                capacity = self.agents.get(agent_id)
                price = usd_per_hour.get(agent_id, 0.0)
                if not capacity or not price:
                    continue
                hours = float(u.wall_s or 0.0) / 3600.0
                saved += price * hours * (_share(ask.vcpus, ask.ram_mib, capacity)
                                          - _share(fit_vcpus, fit_ram, capacity))
        return StepUsage(step, len(measured), ask.vcpus, ask.ram_mib, round(statistics.median(cores), 3),
                         round(max(cores), 3), round(statistics.median(rss), 1), round(max(rss), 1),
                         round(sum(float(u.cpu_s or 0.0) for _, u in measured), 3), vcpus_fit, ram_fit,
                         finding, round(max(saved, 0.0), 6))


def _cores(usage: TaskUsage) -> float:
    wall = float(usage.wall_s or 0.0)
    return float(usage.cpu_s or 0.0) / wall if wall > 0 else 0.0


def _share(vcpus: int, ram_mib: int, capacity: tuple[int, int]) -> float:
    return max(vcpus / capacity[0] if capacity[0] else 0.0, ram_mib / capacity[1] if capacity[1] else 0.0)


def _finding(ask: _Task, cores_max: float, rss_max: float, vcpus_fit: int, ram_fit: int) -> str | None:
    parts_over, parts_under = [], []
    if ask.vcpus >= WASTE_FACTOR * max(cores_max, 0.5) and ask.vcpus - vcpus_fit >= 1:
        parts_over.append(f"vcpus {ask.vcpus} (used at most {cores_max:.2f} cores; {vcpus_fit} would fit)")
    if ask.ram_mib >= WASTE_FACTOR * rss_max and ask.ram_mib - ram_fit >= RAM_STEP_MIB:
        parts_over.append(f"vram {ask.ram_mib} MiB (peak {rss_max:.0f} MiB; {ram_fit} would fit)")
    if rss_max > ask.ram_mib > 0:
        parts_under.append(f"vram {ask.ram_mib} MiB but a task peaked at {rss_max:.0f} MiB (ask {ram_fit})")
    if cores_max > ask.vcpus + 0.5:
        parts_under.append(f"vcpus {ask.vcpus} but a task kept {cores_max:.2f} cores busy (ask {vcpus_fit})")
    if parts_under:
        return "asks for less than it uses: " + "; ".join(parts_under)
    if parts_over:
        return "asks for more than it uses: " + "; ".join(parts_over)
    return None
