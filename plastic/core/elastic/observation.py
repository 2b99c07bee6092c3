"""What the elastic controller observes, pure: the provider's nodes and the JobBook -> ClusterObserved.

The shell (plastic.framework.provisioner) lists the provider's nodes and moves their times onto the
book's clock; that is all it does to them (`NodeFact`, one look's `NodesListed`).  `observe` joins them
with the book (plastic.core.book: its queue, its agents, their health and notices, its runtime
estimates) at ``now``, under the Framework's lock in the shell and from the replayed book in a replay
(plastic.core.elastic.replay), so the same book and the same facts give the same observation.

A node's view (NodeView):

- state: the provider's, unless the book knows better of its agent: an agent the book has seen lost
  makes a ready or booting node GONE (ended now, if the provider still says otherwise), one with a
  terminate notice DRAINING, and a booting node whose agent the framework has already met is READY;
- capacity: its agent's, else its shape's usable room; used and running: its agent's live jobs;
- idle_since (ready, no task): when its agent was last busy or first seen, else since the provider
  says it became ready; ready_at: when its agent met the framework;
- task_ends (looking ahead only): when each running task should end, by its tool's estimate.

Looking a boot ahead (``policy.lead_s`` > 0), queued tasks carry their tool's estimate and their step,
each step with work in view its runtimes' spread (its tool's runtimes as the book knows them, else the
plan's for that step: `PlanAhead.priors`; plastic.core.elastic.spread), and the plan's
tasks the Toil leader has not issued yet are dated from the progress of the jobs it has issued
(plastic.core.elastic.forecast.plan_ahead).  That dating keeps a little state, `PlanAhead` (when the
elastic cluster started, the plan's tasks still to date), which `observe` takes and returns updated:
once the forecast has settled, the tasks are dropped for good.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from plastic.core.book.jobs import ENDED, LIVE, Job
from plastic.core.book.state import BookState
from plastic.core.elastic.forecast import Stage, TaskProgress, earliest_start, issued_by_step, plan_ahead
from plastic.core.elastic.model import ClusterObserved, ElasticPolicy, NodeState, NodeView, WaitingTask
from plastic.core.elastic.spread import Spreads, spread_summary
from plastic.core.model import Market, NodeShape, Resources, TaskSpec
from plastic.core.planning.plan import step_of

ENDED_STATES = (NodeState.GONE, NodeState.INTERRUPTED)


@dataclass(frozen=True, slots=True)
class NodeFact:
    """A node as the provider lists it, its times on the book's clock."""

    node_id: str
    cluster: str
    instance_type: str
    market: Market
    state: NodeState  # the provider's
    created_at: float
    state_since: float
    agent_id: str | None = None  # the Mesos agent it runs, when the provider knows it
    instance_id: str | None = None  # what its agent advertises as its instance_id

    def __post_init__(self) -> None:  # read back from the log, enums come as their values
        if not isinstance(self.market, Market):
            object.__setattr__(self, "market", Market(self.market))
        if not isinstance(self.state, NodeState):
            object.__setattr__(self, "state", NodeState(self.state))


@dataclass(frozen=True, slots=True)
class NodesListed:
    """The provisioner listed the provider's nodes (one look of the elastic controller)."""

    nodes: tuple[NodeFact, ...]


@dataclass(frozen=True, slots=True)
class PlanAhead:
    """The plan's tasks still to date as expected work, and when the elastic cluster started (None:
    at the first look that dates them)."""

    tasks: tuple[TaskSpec, ...] = ()
    started_at: float | None = None
    priors: Spreads = ()  # each step's runtimes in the plan (plastic.core.elastic.spread.plan_spreads)


@dataclass(frozen=True, slots=True)
class Observation:
    observed: ClusterObserved
    ahead: PlanAhead


Shapes = Mapping[tuple[str, Market], NodeShape]


def shapes_by_type(shapes: Iterable[NodeShape]) -> dict[tuple[str, Market], NodeShape]:
    return {(s.instance_type.name, s.market): s for s in shapes}


def agent_on(book: BookState, node: NodeFact) -> str | None:
    """The Mesos agent of a node: the one the provider names, else the book's agent of its instance."""
    if node.agent_id:
        return node.agent_id
    return book.agent_of_instance(node.instance_id) if node.instance_id else None


def agents_of(book: BookState, listed: NodesListed, node_ids: Sequence[str]) -> tuple[str, ...]:
    """The agents of these listed nodes (those the book can name), in their order."""
    by_id: dict[str, NodeFact] = {}
    for n in listed.nodes:
        by_id.setdefault(n.node_id, n)
    agents = (agent_on(book, by_id[i]) for i in node_ids if i in by_id)
    return tuple(a for a in agents if a)


def observe(book: BookState, listed: NodesListed, shapes: Shapes, policy: ElasticPolicy, ahead: PlanAhead,
            now: float) -> Observation:
    """The book's queue and the listed nodes at ``now`` (see the module docstring)."""
    looking = policy.lead_s > 0  # runtime estimates let the controller look a boot ahead
    queued = tuple(WaitingTask(j.job_id, j.demand, j.needs_reliable, j.instance_type, max(now - j.queued_at, 0.0),
                               runtime_s=book.estimate(j.tool) if looking else None,
                               step=j.step if looking else None)
                   for j in book.queued())
    on_agent: dict[str, list[Job]] = {}
    for job in book.live():
        on_agent.setdefault(job.agent_id or "", []).append(job)
    views = []
    for node in listed.nodes:
        agent_id = agent_on(book, node)
        shape = shapes.get((node.instance_type, node.market))
        views.append(_view(book, node, agent_id, on_agent.get(agent_id or "", []), shape, now, looking))
    expected: tuple[WaitingTask, ...] = ()
    spreads: Spreads = ()
    if looking:
        expected, ahead = _expected(book, policy, ahead, now, earliest_start(views, now, policy.lead_s))
        spreads = _spreads(book, (*queued, *expected), ahead.priors)
    return Observation(ClusterObserved(queued, tuple(views), expected, spreads), ahead)


def _spreads(book: BookState, tasks: Iterable[WaitingTask], priors: Spreads) -> Spreads:
    """The runtimes' spread of each step of these tasks: its tool's, as the book knows them (this run's
    runtimes, then the recorded ones or the plan's), when no other step of the run uses that tool (a tool
    several steps run mixes their runtimes); else the plan's runtimes of the step."""
    steps = {t.step for t in tasks if t.step}
    if not steps:
        return ()
    tools: dict[str, str] = {}
    steps_of_tool: dict[str, set[str]] = {}
    for job in book.jobs.values():
        if job.tool and job.step:
            steps_of_tool.setdefault(job.tool, set()).add(job.step)
            if job.step in steps:
                tools.setdefault(job.step, job.tool)
    prior = dict(priors)
    out = []
    for step in sorted(steps):
        tool = tools.get(step)
        own = tool is not None and steps_of_tool[tool] == {step}
        summary = (spread_summary(book.runtimes.values(tool)) if own else ()) or prior.get(step, ())
        if summary:
            out.append((step, summary))
    return tuple(out)


def _expected(book: BookState, policy: ElasticPolicy, ahead: PlanAhead, now: float,
              start_at: float) -> tuple[tuple[WaitingTask, ...], PlanAhead]:
    """The plan's tasks not issued yet, as expected work (plastic.core.elastic.forecast.plan_ahead): the
    book's jobs of each step in issue order (one per Toil job: a re-issue takes its place) stand for
    the plan's tasks of that step, and a step's tool's estimate, once the book has one, replaces the
    plan's runtimes."""
    started_at = ahead.started_at if ahead.started_at is not None else now
    if not ahead.tasks:
        return (), replace(ahead, tasks=(), started_at=started_at)
    issued = [job for job in sorted(book.jobs.values(), key=lambda j: j.issued_at) if job.step is not None]
    by_step = issued_by_step((job.step, job.job_store_id, _progress(job)) for job in issued)
    estimates: dict[str, float] = {}
    for job in issued:
        if job.step not in estimates and (estimate := book.estimate(job.tool)) is not None:
            estimates[job.step] = estimate
    tasks = [t if (e := estimates.get(step_of(t.id))) is None or e == t.runtime_s else replace(t, runtime_s=e)
             for t in ahead.tasks]
    # a first-wave task the leader has not issued is held from the leader's first issue (Toil may take
    # a minute to start a large workflow: until it issues anything, the first wave is still coming)
    leader_up_at = min((job.issued_at for job in issued), default=now)
    outlook = plan_ahead(tasks, by_step, now, max(started_at, leader_up_at), policy.idle_s, lead_s=policy.lead_s,
                         start_at=start_at)
    # settled for good: issued jobs and the time since their parents ended only grow
    return outlook.expected, replace(ahead, tasks=() if outlook.settled else ahead.tasks, started_at=started_at)


def _state(book: BookState, node: NodeFact, agent_id: str | None) -> NodeState:
    """The node's state: the provider's, unless the book knows better of its agent."""
    state = node.state
    if agent_id is not None and state in (NodeState.READY, NodeState.PENDING):
        if agent_id in book.gone:
            return NodeState.GONE
        if agent_id in book.notices.draining:
            return NodeState.DRAINING
        if state is NodeState.PENDING and agent_id in book.agents:
            return NodeState.READY  # the framework already met its agent
    return state


def _view(book: BookState, node: NodeFact, agent_id: str | None, jobs: list[Job], shape: NodeShape | None,
          now: float, looking: bool) -> NodeView:
    state = _state(book, node, agent_id)
    agent = book.agents.get(agent_id or "")
    capacity = agent.capacity if agent is not None else (shape.usable if shape else Resources(0, 0))
    used = Resources(sum(j.demand.vcpus for j in jobs), sum(j.demand.ram_mib for j in jobs))
    health = book.health
    idle_since = None
    if state is NodeState.READY and not jobs:
        idle_since = node.state_since
        if agent_id in health.agent_since:
            idle_since = max(health.agent_since[agent_id], health.last_busy.get(agent_id, 0.0))
    ready_at = None  # when its agent met the framework (else when the provider says it became ready)
    if state in (NodeState.READY, NodeState.DRAINING):
        ready_at = health.agent_since.get(agent_id or "", node.state_since if state is NodeState.READY else None)
    ended = node.state_since if state in ENDED_STATES else None
    if ended is not None and node.state not in ENDED_STATES:
        ended = now  # lost as far as the framework knows; the provider has not said so yet
    ends: list[tuple[float, Resources]] = []
    for job in jobs if looking else ():  # when the running tasks should end, by their tools' estimates
        attempt, estimate = job.current, book.estimate(job.tool)
        if attempt is not None and estimate is not None:
            ends.append((attempt.began_at + estimate, job.demand))
    return NodeView(node.node_id, node.cluster, node.instance_type, node.market, state, capacity,
                    shape.usd_per_hour if shape is not None else 0.0, node.created_at, used, len(jobs), idle_since,
                    ended, task_ends=tuple(sorted(ends, key=lambda e: e[0])), ready_at=ready_at)


def _progress(job: Job) -> TaskProgress:
    """A book job as the forecast's progress of the plan task it stands for (book clock)."""
    attempt = job.attempts[-1] if job.attempts else None
    if job.state in ENDED:
        return TaskProgress(Stage.DONE, ended_at=attempt.ended_at if attempt else None)
    if job.state in LIVE and attempt is not None:
        return TaskProgress(Stage.RUNNING, started_at=attempt.began_at)
    return TaskProgress(Stage.QUEUED)
