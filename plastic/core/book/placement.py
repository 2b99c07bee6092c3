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
- agents that are draining (a spot notice arrived) take nothing new, nor do
  agents the Toil leader asked to ignore (their offers are declined);
- agents under a rebalance recommendation take no task marked
  `avoid_rebalancing`: those tasks are placed first, with such agents closed to
  them, then the rest of the queue on what is left;
- offers that launch nothing are declined with a refuse filter (briefly while
  work that fits the cluster still waits); with no work left the framework
  suppresses offers, and revives them when work arrives;
- a task that no agent of the cluster could ever hold is reported at once.

`place()` returns the whole decision (launches, declines with their refuse
times, unplaceable tasks); the JobBook only applies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from plastic.core.model import Preempt, Resources, type_allowed

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
    address: str = ""  # "ip:port" of the agent, when known
    instance_id: str = ""  # the agent's instance_id attribute (an EC2 instance id), when it has one


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
    avoid_rebalancing: bool = False  # not onto agents under a rebalance recommendation

    @property
    def needs_reliable(self) -> bool:
        """preempt=false, or preempt=N with N preemptions spent."""
        limit = self.preempt.max_preemptions
        return limit == 0 or (limit is not None and self.preemptions >= limit)


# ---------------------------------------------------------------- commands

@dataclass(frozen=True, slots=True)
class TaskPlacement:
    """Where the placement puts a queued task: an agent, through one of its offers (the JobBook turns each
    into a TaskLaunch of a LaunchTasks command, plastic.core.book.commands)."""

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
class Unplaceable:
    """A task no agent of the cluster could ever hold, and why."""

    task_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Placement:
    launches: tuple[TaskPlacement, ...] = ()
    declines: tuple[DeclineOffer, ...] = ()
    unplaceable: tuple[Unplaceable, ...] = ()
    still_waiting: tuple[str, ...] = ()  # task ids that fit the cluster but not these offers
    offers_used: tuple[str, ...] = field(default=())
    ignored: tuple[str, ...] = ()  # offers of ignored agents (declined, with refuse_seconds)


def priority(task: PendingTask) -> tuple:
    """Reliable first, then larger first; the id breaks ties so the order is total."""
    return (not task.needs_reliable, -task.demand.vcpus, -task.demand.ram_mib, task.task_id)


def why_unplaceable(task: PendingTask, agents: Iterable[AgentInfo]) -> str | None:
    """None when some agent of the cluster could hold the task alone; else the reason."""
    agents = list(agents)
    eligible = [a for a in agents if not (task.needs_reliable and a.preemptible)
                and type_allowed(task.instance_type, a.instance_type)]
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
    draining: AbstractSet[str] = frozenset(),
    rebalancing: AbstractSet[str] = frozenset(),
    ignored: AbstractSet[str] = frozenset(),
    work_held: bool = False,
) -> Placement:
    """Match `queue` to `offers`. `cluster` is every agent that takes new work (for unplaceable
    checks); `draining` agents (and those marked so) take nothing; `rebalancing` agents take no task
    marked avoid_rebalancing; the offers of `ignored` agents are declined at once.  `work_held`:
    queued work is held back for now (it will want offers soon), so refuse only briefly."""
    shut = [o for o in offers if o.agent.agent_id in ignored]
    open_offers = [o if o.agent.draining or o.agent.agent_id not in draining
                   else replace(o, agent=replace(o.agent, draining=True))
                   for o in offers if o.agent.agent_id not in ignored]
    free: dict[str, Resources] = {o.offer_id: o.available for o in open_offers}
    avoiding = [t for t in queue if t.avoid_rebalancing]
    launches: list[TaskPlacement] = []
    unplaceable: list[Unplaceable] = []
    waiting: list[str] = []
    if avoiding:
        closed = [replace(o, agent=replace(o.agent, draining=True)) if o.agent.agent_id in rebalancing else o
                  for o in open_offers]
        _place_pass(closed, avoiding, cluster, free, launches, unplaceable, waiting)
    _place_pass(open_offers, [t for t in queue if not t.avoid_rebalancing], cluster, free, launches, unplaceable,
                waiting)
    used = {lt.offer_id for lt in launches}
    # With work still waiting, refuse only briefly: the resources may fit it once tasks end.
    refuse = min(refuse_seconds, BUSY_REFUSE_SECONDS) if waiting or work_held else refuse_seconds
    declines = [DeclineOffer(o.offer_id, refuse) for o in open_offers if o.offer_id not in used]
    declines += [DeclineOffer(o.offer_id, refuse_seconds) for o in shut]
    return Placement(tuple(launches), tuple(declines), tuple(unplaceable), tuple(waiting),
                     tuple(o.offer_id for o in open_offers if o.offer_id in used),
                     tuple(o.offer_id for o in shut))


def _place_pass(offers: Sequence[Offer], queue: Sequence[PendingTask], cluster: Mapping[str, AgentInfo],
                free: dict[str, Resources], launches: list[TaskPlacement], unplaceable: list[Unplaceable],
                waiting: list[str]) -> None:
    """One first-fit-decreasing pass of `queue` over `offers` (their resources left in `free`)."""
    usable = [o for o in offers if not o.agent.draining]
    for task in sorted(queue, key=priority):
        reason = why_unplaceable(task, cluster.values())
        if reason is not None:
            unplaceable.append(Unplaceable(task.task_id, reason))
            continue
        best: tuple[tuple, Offer] | None = None
        for o in usable:
            if task.needs_reliable and o.agent.preemptible:
                continue
            if not type_allowed(task.instance_type, o.agent.instance_type):
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
        launches.append(TaskPlacement(task.task_id, o.agent.agent_id, o.offer_id, task.demand,
                                   f"{why}, tightest fit ({o.agent.cluster or o.agent.agent_id})"))


def offer_flow(queue_was_empty: bool, queue_is_empty: bool, suppressed: bool, *,
               agents_back: bool = False) -> SuppressOffers | ReviveOffers | None:
    """SUPPRESS when the queue has run dry, REVIVE when work arrives while suppressed, or when agents
    whose offers were declined (ignored agents) may take the queued work again."""
    if queue_is_empty and not suppressed:
        return SuppressOffers()
    if not queue_is_empty and (suppressed or queue_was_empty or agents_back):
        return ReviveOffers()
    return None
