"""Placement: Mesos offers in, launch / decline / suppress / revive decisions out.

Pure: the framework adapter turns OFFERS events into `Offer` values, calls
`place()` with the queue, and carries out the returned commands.

Rules (the paper's and the seeds'):
- a reliable task (preempt=false, or a task that has used up its N
  preemptions) never goes to a preemptible agent;
- a preemptible task prefers preemptible (burst) agents and falls back to
  reliable ones only when no burst agent fits;
- priority: reliable tasks first, then larger tasks first (first-fit decreasing);
- dense packing: among the agents that fit, the one left with the fewest free
  resources after the launch (the seeds' "fewest free resources first");
- agents that are draining (a spot notice arrived) take nothing new;
- offers that launch nothing are declined with a refuse filter; with no work
  left the framework suppresses offers, and revives them when work arrives;
- a task that no agent of the cluster could ever hold is reported at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from plastic.core.model import Preempt, Resources

DEFAULT_REFUSE_SECONDS = 5.0
BUSY_REFUSE_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """What the framework knows of an agent: its whole capacity and its attributes."""

    agent_id: str
    capacity: Resources
    preemptible: bool
    cluster: str = ""
    instance_type: str = ""
    draining: bool = False


@dataclass(frozen=True, slots=True)
class Offer:
    offer_id: str
    agent: AgentInfo
    available: Resources


@dataclass(frozen=True, slots=True)
class PendingTask:
    """A task waiting for an agent."""

    task_id: str
    demand: Resources
    preempt: Preempt
    preemptions: int = 0  # how many times it was preempted so far
    instance_type: str | None = None  # pinned: only agents of this type

    @property
    def needs_reliable(self) -> bool:
        """preempt=false, or preempt=N with N preemptions spent."""
        limit = self.preempt.max_preemptions
        return limit == 0 or (limit is not None and self.preemptions >= limit)


# ---------------------------------------------------------------- commands

@dataclass(frozen=True, slots=True)
class LaunchTask:
    task_id: str
    agent_id: str
    offer_id: str
    demand: Resources
    reason: str


@dataclass(frozen=True, slots=True)
class DeclineOffer:
    offer_id: str
    refuse_seconds: float


@dataclass(frozen=True, slots=True)
class SuppressOffers:
    pass


@dataclass(frozen=True, slots=True)
class ReviveOffers:
    pass


@dataclass(frozen=True, slots=True)
class ReportUnplaceable:
    task_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Placement:
    launches: tuple[LaunchTask, ...] = ()
    declines: tuple[DeclineOffer, ...] = ()
    unplaceable: tuple[ReportUnplaceable, ...] = ()
    still_waiting: tuple[str, ...] = ()  # task ids that fit the cluster but not these offers
    offers_used: tuple[str, ...] = field(default=())


def priority(task: PendingTask) -> tuple:
    """Reliable first, then larger first; the id breaks ties so the order is total."""
    return (not task.needs_reliable, -task.demand.vcpus, -task.demand.ram_mib, task.task_id)


def why_unplaceable(task: PendingTask, agents: Iterable[AgentInfo]) -> str | None:
    """None when some agent of the cluster could hold the task alone; else the reason."""
    agents = list(agents)
    eligible = [a for a in agents if not (task.needs_reliable and a.preemptible)
                and (task.instance_type is None or a.instance_type == task.instance_type)]
    if not agents:
        return "the cluster has no agents"
    if not eligible:
        if task.instance_type is not None:
            return f"no agent of instance type {task.instance_type}"
        return "needs a reliable (non-preemptible) agent and the cluster has none"
    if any(a.capacity.holds(task.demand) for a in eligible):
        return None
    cpu = max(a.capacity.vcpus for a in eligible)
    ram = max(a.capacity.ram_mib for a in eligible)
    kind = "reliable " if task.needs_reliable else ""
    return (f"needs {task.demand.vcpus} vcpus / {task.demand.ram_mib} MiB; the largest {kind}agent offers "
            f"{cpu} vcpus / {ram} MiB")


def place(
    offers: Sequence[Offer],
    queue: Sequence[PendingTask],
    cluster: Mapping[str, AgentInfo],
    *,
    refuse_seconds: float = DEFAULT_REFUSE_SECONDS,
) -> Placement:
    """Match `queue` to `offers`. `cluster` is every agent known (for unplaceable checks)."""
    free: dict[str, Resources] = {o.offer_id: o.available for o in offers}
    usable = [o for o in offers if not o.agent.draining]
    launches: list[LaunchTask] = []
    unplaceable: list[ReportUnplaceable] = []
    waiting: list[str] = []
    for task in sorted(queue, key=priority):
        reason = why_unplaceable(task, cluster.values())
        if reason is not None:
            unplaceable.append(ReportUnplaceable(task.task_id, reason))
            continue
        best: tuple[tuple, Offer] | None = None
        for o in usable:
            if task.needs_reliable and o.agent.preemptible:
                continue
            if task.instance_type is not None and o.agent.instance_type != task.instance_type:
                continue
            left = free[o.offer_id] - task.demand
            if not left.nonnegative:
                continue
            # burst agents first for preemptible work; then the tightest fit
            key = (not o.agent.preemptible if not task.needs_reliable else False,
                   left.vcpus / max(o.agent.capacity.vcpus, 1) + left.ram_mib / max(o.agent.capacity.ram_mib, 1),
                   o.offer_id)
            if best is None or key < best[0]:
                best = (key, o)
        if best is None:
            waiting.append(task.task_id)
            continue
        o = best[1]
        free[o.offer_id] = free[o.offer_id] - task.demand
        where = "burst" if o.agent.preemptible else "reliable"
        why = ("reliable task on a reliable agent" if task.needs_reliable
               else f"preemptible task on a {where} agent")
        launches.append(LaunchTask(task.task_id, o.agent.agent_id, o.offer_id, task.demand,
                                   f"{why}, tightest fit ({o.agent.cluster or o.agent.agent_id})"))
    used = {lt.offer_id for lt in launches}
    # With work still waiting, refuse only briefly: the resources may fit it once tasks end.
    refuse = min(refuse_seconds, BUSY_REFUSE_SECONDS) if waiting else refuse_seconds
    declines = tuple(DeclineOffer(o.offer_id, refuse) for o in offers if o.offer_id not in used)
    return Placement(tuple(launches), declines, tuple(unplaceable), tuple(waiting),
                     tuple(o.offer_id for o in offers if o.offer_id in used))


def offer_flow(queue_was_empty: bool, queue_is_empty: bool, suppressed: bool) -> SuppressOffers | ReviveOffers | None:
    """SUPPRESS when the queue has run dry, REVIVE when work arrives while suppressed."""
    if queue_is_empty and not suppressed:
        return SuppressOffers()
    if not queue_is_empty and (suppressed or queue_was_empty):
        return ReviveOffers()
    return None
