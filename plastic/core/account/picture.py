"""A picture of one run, as data (pure): what `plastic report RUN --html` draws.

From the run's decision events (the JobBook's records and the elastic controller's node events),
its priced agents and its plan, `build_picture` makes:

- lanes: one per agent (its cluster, spot or on-demand, instance type, when it joined the run and
  how it left: lost, interrupted, released by the elastic controller, or still there at the end);
- attempts: one per Mesos task (a ``placed`` record), with its job, tool and step, agent, start and
  end, and how it ended: finished, failed, preempted (``killed_at_notice`` when a terminate notice
  killed it), lost, killed, or still running at the end;
- marks: notices, kills at a notice, requeues, agents lost, and the elastic cluster's nodes asked
  for, created, released, interrupted or refused;
- cost over time: the run's cumulative USD and the same agent-time all on-demand, sampled at the
  agents' start and end times and the marks' times (the agents' windows and prices are those of
  plastic.core.account.report, so the last point is the report's cost);
- the plan's clusters (node count, instance type, USD per hour) beside what ran (the report's).

An attempt ends at the first record that ends it: its task's state move carrying the ended
attempt (TaskStateChanged, by its Mesos task id), a requeue of its task (JobRequeued), the end of its
job (JobEnded), or the end of a resumed run's left-over task (OrphanEnded); the ended attempt, when
there is one, says how; otherwise the JobBook's tables (plastic.core.book.lifecycle) say how a job's end
or a requeue ends an attempt.  A new ``book`` line (BookBegan: a new leader after a resume) starts a
new set of Mesos task ids: the same id in two leaders is two attempts.  An attempt still open when the
events end is ``running``, drawn up to the run's end; one whose agent was lost is ``lost`` at that moment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from plastic.core.account.record_codec import BookBegan
from plastic.core.account.report import (
    AgentSpan,
    RunEvent,
    RunReport,
    agent_windows,
    build_report,
)
from plastic.core.book.lifecycle import ATTEMPT_OUTCOME_OF_JOB, ATTEMPT_OUTCOME_OF_LOSS, AttemptOutcome, JobOutcome
from plastic.core.book.records import (
    AgentGone,
    JobEnded,
    JobQueued,
    JobRequeued,
    KilledForNotice,
    OrphanEnded,
    RebalanceNoticed,
    Record,
    TaskPlaced,
    TaskStarted,
    TaskStateChanged,
    TerminateNoticed,
)
from plastic.core.elastic.model import (
    CreationRefused,
    GrowthStopped,
    NodeInterrupted,
    NodeReleased,
    NodesRequested,
    NodesStarted,
)
from plastic.core.model import Catalog
from plastic.core.planning.plan import Plan

MAX_COST_POINTS = 600
OUTCOMES = ("finished", "failed", "preempted", "lost", "killed", "running")
# An orphan (a previous leader's task) ended in this Mesos state: how its attempt ended.
_ORPHAN_OUTCOME = {"TASK_FINISHED": "finished", "TASK_FAILED": "failed", "TASK_KILLED": "killed"}


@dataclass(slots=True)
class AttemptSpan:
    """One Mesos task: a job's attempt on one agent, from its placement to its end."""

    task: str  # the Mesos task id ("10.1")
    job_id: str
    number: int  # 1 for the job's first attempt in this picture, 2 for its second...
    agent_id: str
    cluster: str
    preemptible: bool
    instance_type: str | None
    start_at: float
    end_at: float | None = None
    outcome: str = "running"  # one of OUTCOMES
    killed_at_notice: bool = False
    running_at: float | None = None  # when the task started running (after its launch)
    tool: str | None = None
    step: str | None = None
    reason: str | None = None
    job_key: str = ""  # the same for every attempt of one job (its job-store id when known)

    @property
    def ran_s(self) -> float:
        return max((self.end_at if self.end_at is not None else self.start_at) - self.start_at, 0.0)


@dataclass(frozen=True, slots=True)
class Lane:
    """An agent of the run, as a lane of the timeline."""

    agent_id: str
    cluster: str
    preemptible: bool
    instance_type: str | None
    start_at: float  # joined the run (created, first seen, or the run's start)
    end_at: float  # left it (or the run's end)
    gone: str | None = None  # lost | interrupted | released | None (there at the end)
    created: bool = False  # created during the run by the elastic controller
    usd_per_hour: float = 0.0


@dataclass(frozen=True, slots=True)
class Mark:
    """A record of something that happened at one moment, on an agent's lane (agent_id) or the cluster's:
    a notice (TerminateNoticed, RebalanceNoticed), a kill at a notice (KilledForNotice), a requeue
    (JobRequeued), an agent lost (AgentGone), or the elastic cluster's nodes (NodesRequested, NodesStarted,
    NodeReleased, NodeInterrupted, CreationRefused, GrowthStopped)."""

    at: float
    agent_id: str | None
    text: str
    record: Record

    @property
    def kind(self) -> str:
        """Its name on the page: the record's kind, but ``rebalance`` for a rebalance recommendation."""
        return "rebalance" if isinstance(self.record, RebalanceNoticed) else self.record.kind


@dataclass(frozen=True, slots=True)
class CostPoint:
    at: float
    usd: float
    on_demand_usd: float


@dataclass(frozen=True, slots=True)
class ClusterRow:
    """A cluster as planned beside the same cluster as it ran (zeros/None for a side it is missing from)."""

    name: str
    preemptible: bool
    planned_type: str | None
    planned_nodes: int
    planned_usd_per_hour: float
    ran_type: str | None
    ran_agents: int
    ran_peak: int
    agent_hours: float
    placements: int
    finished: int
    cost_usd: float
    on_demand_cost_usd: float


@dataclass(frozen=True, slots=True)
class RunPicture:
    report: RunReport
    lanes: tuple[Lane, ...]
    attempts: tuple[AttemptSpan, ...]
    marks: tuple[Mark, ...]
    cost: tuple[CostPoint, ...]
    clusters: tuple[ClusterRow, ...]
    plan_usd_per_hour: float | None = None
    plan_on_demand_usd_per_hour: float | None = None
    running: bool = False  # the run had not ended (no report yet): the picture stops at its last event
    elastic: bool = False  # the cluster grew or shrank during the run
    tools: Mapping[str, int] = field(default_factory=dict)  # attempts per tool

    @property
    def started_at(self) -> float:
        return self.report.started_at

    @property
    def ended_at(self) -> float:
        return self.report.ended_at


def build_picture(*, run_id: str, workflow: str, outcome: str, started_at: float, ended_at: float,
                  agents: Sequence[AgentSpan], events: Sequence[RunEvent], plan: Plan | None = None,
                  notes: Sequence[str] = (), running: bool = False, catalog: Catalog | None = None) -> RunPicture:
    """The picture of a run (see the module docstring); ``running``: the run had not ended; ``catalog``:
    the run's, for its report's floor."""
    report = build_report(run_id=run_id, workflow=workflow, outcome=outcome, started_at=started_at,
                          ended_at=ended_at, agents=agents, events=events, notes=notes,
                          catalog=None if running else catalog)
    attempts, marks = _attempts_and_marks(events, ended_at)
    lanes = _lanes(agents, events, attempts, started_at, ended_at)
    windows = agent_windows(agents, events, started_at, ended_at)
    times = [w.start_at for w in windows] + [w.end_at for w in windows]
    cost = _cost_series(windows, started_at, ended_at, times, [m.at for m in marks] + [a.start_at for a in attempts])
    tools: dict[str, int] = {}
    for a in attempts:
        tools[a.tool or "?"] = tools.get(a.tool or "?", 0) + 1
    return RunPicture(report=report, lanes=lanes, attempts=tuple(attempts), marks=tuple(marks), cost=cost,
                      clusters=_cluster_rows(plan, report), running=running,
                      plan_usd_per_hour=plan.usd_per_hour if plan else None,
                      plan_on_demand_usd_per_hour=plan.on_demand_usd_per_hour if plan else None,
                      elastic=any(isinstance(m.record, NodesStarted | NodeReleased | NodeInterrupted) for m in marks),
                      tools=tools)


# ------------------------------------------------------------------ attempts and marks


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


class _Attempts:
    """The attempts as the events are read: open ones by (leader, task) and by (leader, job)."""

    def __init__(self) -> None:
        self.all: list[AttemptSpan] = []
        self.by_task: dict[tuple[int, str], AttemptSpan] = {}
        self.current: dict[tuple[int, str], AttemptSpan] = {}
        self.numbers: dict[str, int] = {}
        self.issued: dict[tuple[int, str], JobQueued] = {}
        self.leader = 0

    def task(self, task: Any) -> AttemptSpan | None:
        """The attempt of Mesos task ``task`` of this leader."""
        return None if task is None else self.by_task.get((self.leader, str(task)))

    def orphan(self, task: Any) -> AttemptSpan | None:
        """The attempt of Mesos task ``task`` of a previous leader (the latest), left running by it."""
        for leader in range(self.leader - 1, -1, -1):
            found = self.by_task.get((leader, str(task)))
            if found is not None:
                return found
        return None

    def placed(self, p: TaskPlaced, at: float) -> AttemptSpan:
        job_id = str(p.job_id)
        issued = self.issued.get((self.leader, job_id))
        key = str((issued.job_store_id if issued else None) or f"{self.leader}:{job_id}")
        self.numbers[key] = self.numbers.get(key, 0) + 1
        attempt = AttemptSpan(task=str(p.task or f"{job_id}.?"), job_id=job_id, number=self.numbers[key],
                          agent_id=str(p.agent_id), cluster=str(p.cluster or "?"), preemptible=bool(p.preemptible),
                          instance_type=_text(p.instance_type), start_at=at,
                          tool=_text(issued.tool if issued else None), step=_text(issued.step if issued else None),
                          job_key=key)
        self.all.append(attempt)
        self.by_task[(self.leader, attempt.task)] = attempt
        self.current[(self.leader, job_id)] = attempt
        return attempt


def _close(attempt: AttemptSpan | None, at: float, outcome: str, reason: str | None = None) -> None:
    """End an open attempt (an ended one keeps its end: the first record that ends it wins)."""
    if attempt is None or attempt.end_at is not None:
        return
    attempt.end_at, attempt.outcome = at, outcome
    attempt.reason = attempt.reason or reason


def _attempts_and_marks(events: Sequence[RunEvent], ended_at: float) -> tuple[list[AttemptSpan], list[Mark]]:
    book = _Attempts()
    marks: list[Mark] = []
    lost_at: dict[str, float] = {}
    released: set[str] = set()
    for ev in events:
        rec, at = ev.record, ev.at
        match rec:
            case BookBegan():
                if book.all or book.issued:
                    book.leader += 1
            case JobQueued(job_id=job_id) if job_id is not None:
                book.issued[(book.leader, str(job_id))] = rec
            case TaskPlaced():
                book.placed(rec, at)
            case TaskStarted(task=task):
                found = book.task(task)
                if found is not None and found.running_at is None:
                    found.running_at = at
            case TaskStateChanged(attempt=ended) if ended is not None:
                found = book.task(ended.mesos_task_id)
                outcome = str(ended.outcome or "lost")
                if found is not None and found.end_at in (None, at):  # the record that says how, at the end
                    found.end_at, found.outcome = at, outcome if outcome in OUTCOMES else "lost"
                    found.reason = _text(ended.reason) or found.reason
            case JobRequeued():
                marks.append(_requeued(book, rec, at))
            case JobEnded():
                _job_ended(book, rec, at)
            case KilledForNotice(task=task, agent_id=agent_id):
                found = book.task(task)
                if found is not None:
                    found.killed_at_notice = True
                marks.append(Mark(at, _text(agent_id) or (found.agent_id if found else None),
                                  f"task {task} killed at the notice (it could not finish in the window)", rec))
            case TerminateNoticed(agent_id=agent_id, window_s=window, jobs=jobs):
                marks.append(Mark(at, _text(agent_id), (f"terminate notice ({float(window):.0f} s left)"
                                                        if window is not None else "terminate notice")
                                  + f", {len(jobs or ())} task(s) on it", rec))
            case RebalanceNoticed(agent_id=agent_id, jobs=jobs):
                marks.append(Mark(at, _text(agent_id), f"rebalance recommendation, {len(jobs or ())} task(s) on it",
                                  rec))
            case OrphanEnded(task=task, state=state, reason=reason):
                _close(book.orphan(task), at, _ORPHAN_OUTCOME.get(str(state), "lost"), _text(reason))
            case AgentGone(agent_id=agent_id):
                lost_at.setdefault(str(agent_id), at)
                if str(agent_id) not in released:  # a released node's agent going away is no news
                    marks.append(Mark(at, str(agent_id), "agent lost", rec))
            case NodeReleased(node_id=node_id):
                released.add(str(node_id))
                marks.extend(_node_marks(rec, at))
            case NodesRequested() | NodesStarted() | NodeInterrupted() | CreationRefused() | GrowthStopped():
                marks.extend(_node_marks(rec, at))
    for attempt in book.all:  # still open: lost with its agent, else running at the end
        gone = lost_at.get(attempt.agent_id)
        if attempt.end_at is None and gone is not None and gone >= attempt.start_at:
            _close(attempt, gone, "lost", "its agent was lost")
        elif attempt.end_at is None:
            attempt.outcome = "running"
    marks.sort(key=lambda m: m.at)
    return book.all, marks


def _requeued(book: _Attempts, r: JobRequeued, at: float) -> Mark:
    """The requeued attempt ends as the JobBook ends it for how the loss counts; a mark on its agent."""
    counted = str(r.counted_as or "lost")
    _close(book.task(r.old_task), at, str(ATTEMPT_OUTCOME_OF_LOSS.get(counted, AttemptOutcome.LOST)), _text(r.cause))
    return Mark(at, _text(r.agent_id), f"task {r.old_task} requeued as {r.new_task} ({r.cause}, counted as {counted})",
                r)


def _job_ended(book: _Attempts, r: JobEnded, at: float) -> None:
    """The job's current attempt ends as the JobBook ends a job's last attempt (if nothing ended it yet)."""
    found = book.current.get((book.leader, str(r.job_id)))
    if found is not None and found.end_at is None:
        try:
            outcome = ATTEMPT_OUTCOME_OF_JOB[JobOutcome(r.outcome)]
        except ValueError:  # an outcome no JobBook writes
            outcome = AttemptOutcome.LOST
        _close(found, at, str(outcome), _text(r.message))
    elif found is not None and r.reason == "done_by_earlier_attempt":
        found.reason = "; ".join(x for x in (found.reason, "its work was kept: the job was not run again") if x)


def _node_marks(rec: Record, at: float) -> list[Mark]:
    """The marks of a record of the elastic cluster's nodes (one per node it created)."""
    match rec:
        case NodesRequested():
            return [Mark(at, None, f"asked for {rec.count} {rec.market} node(s) of {rec.instance_type} for "
                                   f"{rec.cluster} ({rec.reason})", rec)]
        case NodesStarted(node_ids=node_ids):  # its record does not say the cluster
            return [Mark(at, node_id, "node created (?)", rec) for node_id in node_ids or ()]
        case NodeReleased(node_id=node_id):
            return [Mark(at, _text(node_id), f"node released ({rec.reason})", rec)]
        case NodeInterrupted(node_id=node_id):
            return [Mark(at, _text(node_id), "node interrupted", rec)]
        case CreationRefused():  # nor how many
            return [Mark(at, None, f"creation refused: ? {rec.market} node(s) of {rec.instance_type} ({rec.reason})",
                         rec)]
        case GrowthStopped():
            return [Mark(at, None, f"growth stopped by {rec.limit}", rec)]
    return []


# ------------------------------------------------------------------ lanes, cost, plan


def _lanes(agents: Sequence[AgentSpan], events: Sequence[RunEvent], attempts: Sequence[AttemptSpan],
           started_at: float, ended_at: float) -> tuple[Lane, ...]:
    how: dict[str, str] = {}
    created: set[str] = set()
    for ev in events:
        match ev.record:
            case NodesStarted(node_ids=node_ids):
                created.update(node_ids or ())
            case NodeReleased(node_id=node_id):
                how.setdefault(str(node_id), "released")
            case NodeInterrupted(node_id=node_id):
                how.setdefault(str(node_id), "interrupted")
            case AgentGone(agent_id=agent_id):
                how.setdefault(str(agent_id), "lost")
    lanes = [Lane(w.agent.agent_id, w.agent.cluster, w.agent.preemptible, w.agent.instance_type, w.start_at,
                  w.end_at, how.get(w.agent.agent_id), w.agent.agent_id in created, w.agent.usd_per_hour)
             for w in agent_windows(agents, events, started_at, ended_at)]
    known = {lane.agent_id for lane in lanes}
    for a in attempts:  # an agent the prices do not know: a lane from its attempts
        if a.agent_id not in known:
            known.add(a.agent_id)
            lanes.append(Lane(a.agent_id, a.cluster, a.preemptible, a.instance_type, min(a.start_at, ended_at),
                              ended_at, how.get(a.agent_id), a.agent_id in created))
    lanes.sort(key=lambda lane: (lane.preemptible, lane.created, lane.cluster, lane.start_at, lane.agent_id))
    return tuple(lanes)


def _cost_series(windows: Sequence[Any], started_at: float, ended_at: float, breaks: Sequence[float],
                 extra: Sequence[float]) -> tuple[CostPoint, ...]:
    """The cumulative cost at the windows' ends (where its slope changes: exact between them) and at
    other event times (thinned to MAX_COST_POINTS at most)."""
    def inside(ts: Sequence[float]) -> set[float]:
        return {t for t in ts if started_at <= t <= ended_at}

    must = inside([started_at, ended_at, *breaks])
    more = sorted(inside(extra) - must)
    room = MAX_COST_POINTS - len(must)
    if room <= 0:
        more = []
    elif len(more) > room:
        more = [more[int(i * len(more) / room)] for i in range(room)]
    points = []
    for t in sorted(must | set(more)):
        usd = od = 0.0
        for w in windows:
            a, b = w.cost_until(t)
            usd += a
            od += b
        points.append(CostPoint(t, usd, od))
    return tuple(points)


def _cluster_rows(plan: Plan | None, report: RunReport) -> tuple[ClusterRow, ...]:
    planned = {c.name: c for c in plan.clusters} if plan else {}
    ran = {c.name: c for c in report.clusters}
    rows = []
    for name in [*planned, *(n for n in ran if n not in planned)]:
        p, r = planned.get(name), ran.get(name)
        rows.append(ClusterRow(
            name=name, preemptible=r.preemptible if r else p is not None and str(p.market) == "spot",
            planned_type=p.instance_type if p else None, planned_nodes=p.count if p else 0,
            planned_usd_per_hour=p.usd_per_hour if p else 0.0, ran_type=r.instance_type if r else None,
            ran_agents=r.agents if r else 0, ran_peak=r.peak_nodes if r else 0,
            agent_hours=r.agent_hours if r else 0.0, placements=r.placements if r else 0,
            finished=r.tasks_finished if r else 0, cost_usd=r.cost_usd if r else 0.0,
            on_demand_cost_usd=r.on_demand_cost_usd if r else 0.0))
    return tuple(rows)
