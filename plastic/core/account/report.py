"""The end-of-run report, computed from what happened (pure).

Inputs are the run's decision events (the JobBook's records, as the batch system logged them),
the agents the run had with their prices, and the run's start and end; the output is a
`RunReport`: makespan, tasks, attempts, preemptions, requeues, spot events, agent-hours and
estimated cost per cluster, and the same agent-hours priced all on-demand.

Cost model: an agent costs its instance type's price (spot price for a preemptible agent) for
as long as it was part of the run, from the later of the run start and the first time it was
seen, to the earlier of the run end and the moment it was lost.  "All on-demand" prices the
same agent-hours at the on-demand price: what the same cluster would have cost with no spot.
Given the run's catalog, the report also has the run's floor (plastic.core.account.floor): the least
any policy that keeps an on-demand node could pay for the tasks that finished by the run's makespan.

Across a crash-resume the events of every leader incarnation are counted: a task is a Toil job
(its jobStoreID when recorded, so the job a new leader issues again is the same task), and the
previous leader's tasks adopted by the resume and finished count as finished there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from plastic.core.account.floor import RunFloor, agent_shape, run_floor
from plastic.core.account.record_codec import decode
from plastic.core.account.usage import StepUsage, UsageTally
from plastic.core.book.records import (
    AgentGone,
    AgentUpdated,
    JobEnded,
    JobEscalated,
    JobQueued,
    JobRequeued,
    JobUnplaceable,
    KilledForNotice,
    LeftToFinish,
    OrphanAdopted,
    OrphanEnded,
    OrphanKilled,
    RebalanceNoticed,
    Record,
    TaskPlaced,
    TerminateNoticed,
)
from plastic.core.elastic.model import (
    CreationRefused,
    GrowthStopped,
    NodeCordoned,
    NodeInterrupted,
    NodeReady,
    NodeReleased,
    NodesRequested,
    NodesStarted,
    NodeUncordoned,
)
from plastic.core.model import Catalog, InstanceType, NodeShape, node_shapes
from plastic.core.planning.plan import PlannedNode

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One record as the run stored it (a line of the decisions log, an entry of the run's stream): its
    kind (placed, requeue, notice, ...), when, its fields as stored, and ``record``, the record they hold
    (plastic.core.account.record_codec.decode: what the readers read)."""

    kind: str
    at: float
    fields: Mapping[str, Any] = field(default_factory=dict)
    record: Record = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "record", decode(self.kind, self.fields))


# The elastic controller's records about its nodes (kept whole, as the report's node timeline).
NODE_RECORDS = (NodesRequested, NodesStarted, NodeReady, NodeCordoned, NodeUncordoned, NodeReleased,
                NodeInterrupted, CreationRefused, GrowthStopped)
NODE_KINDS = frozenset(cls.kind for cls in NODE_RECORDS)
TIMELINE_FIELDS = ("node_id", "node_ids", "cluster", "instance_type", "market", "count", "reason", "detail", "limit",
                   "boot_s", "state", "tasks")


@dataclass(frozen=True, slots=True)
class NodeMoment:
    """A record of the elastic cluster's nodes on the report's timeline, at the time it happened (a node
    a look of the controller saw ready or gone late is put back to when it was)."""

    at: float
    record: Record

    @property
    def event(self) -> str:
        """What happened: requested, created, ready, cordoned, uncordoned, released, interrupted,
        create_refused, growth_stopped."""
        return self.record.kind.removeprefix("node_")

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "event": self.event,
                **{k: v for k, v in self.record.fields.items() if k in TIMELINE_FIELDS and v is not None}}


@dataclass(frozen=True, slots=True)
class AgentSpan:
    """An agent of the run with its prices (USD per hour; 0 when the catalog does not know it)."""

    agent_id: str
    cluster: str
    preemptible: bool
    instance_type: str | None
    usd_per_hour: float
    on_demand_usd_per_hour: float
    seen_at: float | None = None


@dataclass(frozen=True, slots=True)
class ClusterFigures:
    name: str
    preemptible: bool
    instance_type: str | None
    agents: int
    agents_lost: int
    agent_hours: float
    cost_usd: float
    on_demand_cost_usd: float
    placements: int
    tasks_finished: int
    peak_nodes: int = 0  # the most agents of the cluster alive at one time
    nodes_released: int = 0  # released by the elastic controller (idle)


@dataclass(frozen=True, slots=True)
class RunReport:
    run_id: str
    workflow: str
    outcome: str  # succeeded | failed | cancelled
    started_at: float
    ended_at: float
    makespan_s: float
    tasks: int  # distinct jobs issued to the framework
    tasks_finished: int
    tasks_failed: int
    attempts: int  # placements (each one a Mesos task)
    preemptions: int  # requeues counted against a preempt budget (spot agent or notice)
    losses: int  # requeues after a reliable agent was lost
    requeues: int
    notices: int  # termination notices
    rebalances: int  # rebalance recommendations
    drain_kills: int  # tasks killed at a notice because they could not finish in the window
    let_finish: int  # tasks allowed to run on through a notice
    finished_in_window: int  # of those, how many finished
    escalations: int  # tasks moved to reliable nodes after spending their preempt budget
    unplaceable: int
    clusters: tuple[ClusterFigures, ...]
    cost_usd: float
    on_demand_cost_usd: float
    notes: tuple[str, ...] = ()
    orphans_adopted: int = 0  # resume: the previous leader's running tasks left to finish
    orphans_killed: int = 0  # resume: the previous leader's running tasks killed (run again)
    node_timeline: tuple[NodeMoment, ...] = ()  # the elastic cluster: nodes asked for, ready, released, lost
    steps: tuple[StepUsage, ...] = ()  # per step: asked against used (plastic's executor measures each task)
    floor: RunFloor | None = None  # no policy pays less for the finished tasks by the makespan (None: not known)

    @property
    def savings(self) -> float:
        """Fraction saved against all on-demand (0 when nothing was priced)."""
        return 1.0 - self.cost_usd / self.on_demand_cost_usd if self.on_demand_cost_usd > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["schema"] = "plastic.report/v1"
        doc["savings"] = round(self.savings, 6)
        doc["clusters"] = [asdict(c) for c in self.clusters]
        doc["notes"] = list(self.notes)
        doc["node_timeline"] = [m.to_json() for m in self.node_timeline]
        doc["steps"] = [asdict(s) for s in self.steps]
        return doc


@dataclass(frozen=True, slots=True)
class KnownAgent:
    """An agent the run started itself (a local cluster's), with the planned node it stands for."""

    agent_id: str
    cluster: str
    preemptible: bool
    instance_type: str | None
    node_id: str | None


def agent_price(itype: InstanceType | None, preemptible: bool) -> tuple[float, float]:
    """(USD per hour, the on-demand USD per hour) of an agent of ``itype``: a preemptible agent costs
    the spot price, or the on-demand price when the catalog has no spot price; 0 when unknown."""
    od = itype.on_demand_usd_per_hour if itype else 0.0
    return ((itype.spot_usd_per_hour or od) if (itype and preemptible) else od), od


def price_agents(nodes: Mapping[str, PlannedNode], known: Sequence[KnownAgent], events: Sequence[RunEvent],
                 catalog: Catalog) -> list[AgentSpan]:
    """The run's agents with prices: agents the run started by their planned node, any other agent the
    framework met (an ``agent`` event) by its instance type in the catalog, and any node the elastic run
    created that the framework never met (lost before its first offer: paid for all the same) by what
    its request asked for."""
    spans: dict[str, AgentSpan] = {}

    def met(agent_id: str, cluster: Any, preemptible: bool, itype: Any, at: float) -> None:
        if agent_id not in spans:
            price, od = agent_price(catalog.by_name(str(itype)) if itype else None, preemptible)
            spans[agent_id] = AgentSpan(agent_id, str(cluster or "?"), preemptible, str(itype) if itype else None,
                                        price, od, seen_at=at)

    for a in known:
        node = nodes.get(a.node_id or "")
        if node is not None:
            spans[a.agent_id] = AgentSpan(a.agent_id, a.cluster, a.preemptible, a.instance_type, node.usd_per_hour,
                                          node.on_demand_usd_per_hour or node.usd_per_hour)
    for ev in events:
        match ev.record:
            case AgentUpdated(agent_id=agent_id, cluster=cluster, preemptible=preemptible, instance_type=itype):
                met(str(agent_id), cluster, bool(preemptible), itype, ev.at)
    requests = {ev.record.request: ev.record for ev in events if isinstance(ev.record, NodesRequested)}
    for ev in events:
        match ev.record:
            case NodesStarted(request=request, node_ids=node_ids) if request in requests:
                asked = requests[request]
                for node_id in node_ids or ():
                    met(node_id, asked.cluster, asked.market == "spot", asked.instance_type, ev.at)
    return list(spans.values())


def _shape_key(s: NodeShape) -> tuple:
    return s.name, s.market, s.usable, s.usd_per_hour


def _job(job_id: Any, same: Mapping[str, str] | None = None) -> str | None:
    """The task a record is about (its ``job_id``): its Toil jobStoreID when the job's issue recorded one."""
    if job_id is None:
        return None
    return (same or {}).get(str(job_id), str(job_id))


COUNTS = ("attempts", "preemptions", "losses", "requeues", "notices", "rebalances", "drain_kills", "let_finish",
          "finished_in_window", "escalations", "unplaceable")
AGENT_RECORDS = (AgentUpdated, AgentGone)  # with NODE_RECORDS: the records kept whole (per node, not per task)


class RunTally:
    """The report's figures folded from a run's events one at a time (`add`), so a long run's manager
    keeps no list of its events: only the task ids the counts need, per-agent placement counts, and
    the agent and node records whole (they grow with the nodes, not with the tasks).

    A task is its jobStoreID when its ``issued`` record gave one (``same``: job id -> jobStoreID).
    Folded live, a job id is resolved with the ``issued`` records met so far: the batch system writes
    a job's ``issued`` before any other record of it.  `build_report` gives the whole run's mapping."""

    def __init__(self, same: Mapping[str, str] | None = None):
        self.same: dict[str, str] = dict(same or {})
        self.issued: set[str] = set()
        self.finished: set[str] = set()
        self.failed: set[str] = set()
        self.left_to_finish: set[str] = set()  # through a notice (let_finish)
        self.counts = dict.fromkeys(COUNTS, 0)
        self.placed_on: dict[str, int] = {}  # agent id -> placements there
        self.finished_on: dict[str, int] = {}  # agent id -> tasks finished there
        self.adopted: set[str] = set()
        self.orphans_killed: set[str] = set()
        self.kept_events: list[RunEvent] = []  # agent and node records, in stream order
        self.usage = UsageTally()  # what each step asked for and used
        self.ran: dict[str, tuple[int, float]] = {}  # task -> (vCPUs asked, wall s of its attempt that finished)

    def add(self, ev: RunEvent) -> None:
        counts = self.counts
        self.usage.add(ev.record)
        match ev.record:
            case NodesRequested() | NodesStarted() | NodeReady() | NodeCordoned() | NodeUncordoned() | NodeReleased() \
                    | NodeInterrupted() | CreationRefused() | GrowthStopped() | AgentUpdated() | AgentGone():
                self.kept_events.append(ev)
            case JobQueued(job_id=job_id, job_store_id=store_id):
                if job_id is not None and store_id:
                    self.same.setdefault(str(job_id), str(store_id))
                job = _job(job_id, self.same)
                if job is not None:
                    self.issued.add(job)
            case TaskPlaced(agent_id=agent_id):
                counts["attempts"] += 1
                self.placed_on[str(agent_id)] = self.placed_on.get(str(agent_id), 0) + 1
            case JobRequeued(counted_as=counted_as):
                counts["requeues"] += 1
                if counted_as == "preempted":
                    counts["preemptions"] += 1
                elif counted_as == "lost":
                    counts["losses"] += 1
            case TerminateNoticed():
                counts["notices"] += 1
            case RebalanceNoticed():
                counts["rebalances"] += 1
            case KilledForNotice():
                counts["drain_kills"] += 1
            case LeftToFinish(job_id=job_id):
                counts["let_finish"] += 1
                job = _job(job_id, self.same)
                if job is not None:
                    self.left_to_finish.add(job)
            case JobEscalated():
                counts["escalations"] += 1
            case JobUnplaceable():
                counts["unplaceable"] += 1
            case OrphanAdopted(task=task):
                self.adopted.add(str(task))
            case OrphanKilled(task=task):
                self.orphans_killed.add(str(task))
            case OrphanEnded(task=task, state="TASK_FINISHED"):  # its work is in the job store
                job = _job(("" if task is None else str(task)).split(".")[0], self.same)
                if job is not None:
                    self.finished.add(job)
            case JobEnded(job_id=job_id, outcome=outcome, agent_id=agent_id, wall_time_s=wall):
                self._ended(_job(job_id, self.same), outcome, str(agent_id))
                self._ran(job_id, outcome, wall)

    def _ended(self, job: str | None, outcome: str | None, agent_id: str) -> None:
        if job is None:
            return
        if outcome == "finished":
            self.finished.add(job)
            if job in self.left_to_finish:
                self.counts["finished_in_window"] += 1
            self.finished_on[agent_id] = self.finished_on.get(agent_id, 0) + 1
        elif outcome in ("failed", "lost_for_good"):
            self.failed.add(job)

    def _ran(self, job_id: object, outcome: str | None, wall: float | None) -> None:
        """A finished job's vCPUs (its ``issued`` record's) and wall time, for the floor (a task finished
        twice, across a resume, counts its shorter run: the floor only goes down)."""
        asked = self.usage.tasks.get(str(job_id))
        job = _job(job_id, self.same)
        if outcome != "finished" or job is None or asked is None or not wall or wall <= 0:
            return
        before = self.ran.get(job)
        self.ran[job] = (asked.vcpus, float(wall) if before is None else min(before[1], float(wall)))

    def floor(self, agents: Sequence[AgentSpan], catalog: Catalog, makespan_s: float,
              cost_usd: float) -> RunFloor | None:
        """The floor of the finished tasks by ``makespan_s``, bought from the catalog's shapes and the
        run's agents as priced (plastic.core.account.floor); the rule of one on-demand node throughout
        only when the run had an on-demand agent."""
        shapes: dict[tuple, NodeShape] = {}  # an agent priced as its type in the catalog is that shape
        for a in agents:
            vcpus, ram_mib = self.usage.agents.get(a.agent_id, (0, 0))
            if vcpus > 0:
                shape = agent_shape(a.instance_type or a.agent_id, a.preemptible, vcpus, ram_mib, a.usd_per_hour)
                shapes[_shape_key(shape)] = shape
        shapes.update((_shape_key(s), s) for s in node_shapes(catalog))
        return run_floor(self.ran.values(), list(shapes.values()), makespan_s, cost_usd,
                         one_reliable_node=any(not a.preemptible for a in agents))

    def report(self, *, run_id: str, workflow: str, outcome: str, started_at: float, ended_at: float,
               agents: Sequence[AgentSpan], notes: Sequence[str] = (), catalog: Catalog | None = None) -> RunReport:
        """The report of what was folded, with ``agents`` priced over the run (see the module docstring);
        with the run's ``catalog``, and the run ended (``outcome`` not ``running``), its floor."""
        placements: dict[str, int] = {}
        done_on: dict[str, int] = {}
        for a in agents:
            if a.agent_id in self.placed_on:
                placements[a.cluster] = placements.get(a.cluster, 0) + self.placed_on[a.agent_id]
            if a.agent_id in self.finished_on:
                done_on[a.cluster] = done_on.get(a.cluster, 0) + self.finished_on[a.agent_id]
        clusters: dict[str, dict[str, Any]] = {}
        alive: dict[str, list[tuple[float, int]]] = {}
        for w in agent_windows(agents, self.kept_events, started_at, ended_at):
            a = w.agent
            c = clusters.setdefault(a.cluster, {"preemptible": a.preemptible, "instance_type": a.instance_type,
                                                "agents": 0, "lost": 0, "hours": 0.0, "usd": 0.0, "od": 0.0,
                                                "released": 0})
            alive.setdefault(a.cluster, []).extend(((w.start_at, 1), (w.end_at, -1)))
            usd, od = w.cost_until(w.end_at)
            c["agents"] += 1
            c["released"] += w.released
            c["lost"] += w.lost
            c["hours"] += w.hours
            c["usd"] += usd
            c["od"] += od
            if c["instance_type"] != a.instance_type:
                c["instance_type"] = None  # mixed types in one cluster
        figures = tuple(ClusterFigures(name, c["preemptible"], c["instance_type"], c["agents"], c["lost"],
                                       c["hours"], c["usd"], c["od"], placements.get(name, 0), done_on.get(name, 0),
                                       _peak(alive.get(name, [])), c["released"])
                        for name, c in clusters.items())
        timeline = tuple(_node_moment(ev) for ev in self.kept_events if isinstance(ev.record, NODE_RECORDS))
        makespan_s, cost_usd = max(ended_at - started_at, 0.0), sum(c.cost_usd for c in figures)
        floor = (self.floor(agents, catalog, makespan_s, cost_usd)
                 if catalog is not None and outcome != "running" else None)  # a run still going has none yet
        return RunReport(
            run_id=run_id, workflow=workflow, outcome=outcome, started_at=started_at, ended_at=ended_at,
            makespan_s=makespan_s, tasks=len(self.issued | self.finished | self.failed),
            tasks_finished=len(self.finished), tasks_failed=len(self.failed - self.finished), **self.counts,
            clusters=figures, cost_usd=cost_usd,
            on_demand_cost_usd=sum(c.on_demand_cost_usd for c in figures), notes=tuple(notes),
            orphans_adopted=len(self.adopted), orphans_killed=len(self.orphans_killed - self.adopted),
            node_timeline=timeline, steps=self.usage.steps({a.agent_id: a.usd_per_hour for a in agents}),
            floor=floor)


def build_report(*, run_id: str, workflow: str, outcome: str, started_at: float, ended_at: float,
                 agents: Sequence[AgentSpan], events: Sequence[RunEvent],
                 notes: Sequence[str] = (), catalog: Catalog | None = None) -> RunReport:
    """Count what the events say and price the agents' time (see the module docstring and `RunTally`);
    with the run's ``catalog``, its floor."""
    same = {str(ev.record.job_id): str(ev.record.job_store_id) for ev in events
            if isinstance(ev.record, JobQueued) and ev.record.job_id is not None and ev.record.job_store_id}
    tally = RunTally(same)
    for ev in events:
        tally.add(ev)
    return tally.report(run_id=run_id, workflow=workflow, outcome=outcome, started_at=started_at,
                        ended_at=ended_at, agents=agents, notes=notes, catalog=catalog)


@dataclass(frozen=True, slots=True)
class AgentWindow:
    """The time an agent is paid for in the run (see the module docstring), and how it ended."""

    agent: AgentSpan
    start_at: float
    end_at: float  # never before start_at
    released: bool = False  # released by the elastic controller
    lost: bool = False  # lost (or interrupted) before the run ended, not released

    @property
    def hours(self) -> float:
        return (self.end_at - self.start_at) / SECONDS_PER_HOUR

    def cost_until(self, at: float) -> tuple[float, float]:
        """(USD, USD all on-demand) of this agent from its start to ``at`` (its end at the latest)."""
        hours = max(min(at, self.end_at) - self.start_at, 0.0) / SECONDS_PER_HOUR
        return hours * self.agent.usd_per_hour, hours * self.agent.on_demand_usd_per_hour


def agent_windows(agents: Sequence[AgentSpan], events: Sequence[RunEvent], started_at: float,
                  ended_at: float) -> list[AgentWindow]:
    """Each agent's paid-for time: from the later of the run start and its creation (an elastic node)
    or first sighting, to the earlier of the run end and the first time it was lost or released."""
    created_at: dict[str, float] = {}
    lost_at: dict[str, float] = {}
    released: set[str] = set()
    for ev in events:
        match ev.record:
            case NodesStarted(node_ids=node_ids):
                for node_id in node_ids or ():
                    created_at.setdefault(node_id, ev.at)
            case NodeReleased(node_id=node_id):
                lost_at.setdefault(str(node_id), ev.at)
                released.add(str(node_id))
            case NodeInterrupted(node_id=node_id) | AgentGone(agent_id=node_id):
                lost_at.setdefault(str(node_id), ev.at)
    out = []
    for a in agents:
        seen = created_at.get(a.agent_id, a.seen_at)  # an elastic node is paid for from its creation
        start = max(started_at, seen) if seen is not None else started_at
        end = min(ended_at, lost_at.get(a.agent_id, ended_at))
        out.append(AgentWindow(a, start, max(end, start), a.agent_id in released,
                               a.agent_id in lost_at and a.agent_id not in released))
    return out


def _node_moment(ev: RunEvent) -> NodeMoment:
    match ev.record:
        case NodeReady(seen_after_s=seen_after_s) | NodeInterrupted(seen_after_s=seen_after_s):
            return NodeMoment(ev.at - float(seen_after_s or 0.0), ev.record)  # it happened before a look saw it
    return NodeMoment(ev.at, ev.record)


def _peak(changes: list[tuple[float, int]]) -> int:
    """The most at once, from (time, +1 / -1) changes (an end before a start at the same time)."""
    peak = now = 0
    for _at, delta in sorted(changes):
        now += delta
        peak = max(peak, now)
    return peak
