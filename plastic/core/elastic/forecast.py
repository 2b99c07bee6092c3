"""Forecasts for the elastic controller from the DAG and runtime estimates, pure.

1. When will waiting tasks be queued? (`due_in_s`)

The elastic controller buys nodes for queued work; a node then boots for a while, so a wave that
starts when its parents end waits one boot for its nodes.  With runtime estimates the wave can be
seen coming: a waiting task is queued when its last parent ends, a parent ends ``runtime_s`` after
it starts, a running task started when it was placed and a queued one starts now, or, while no node
is up, when the first booting node is (`earliest_start`: the forecast is of the work, not of the
cluster's room, but a wave cannot start before any node can run it).  `due_in_s` gives, for each
waiting task whose ancestors all have an estimate, the seconds from ``now`` until it is queued
(a parent past its estimate is given one lead of grace, as its room is below; after that its end,
and so its children's, is unknown); a task below one without an estimate has no forecast.

The plan's tasks that the Toil leader has not issued yet are dated the same way (`plan_ahead`).

2. Which work will the nodes there are start in time? (`fit_ahead`)  The queued tasks and the
expected ones due within ``lead_s`` (the nodes' boot time) are placed, in the book's order, on the
nodes' room as it will be: the free room now, booting nodes once they are up (``lead_s`` after they
were asked for), the room of running tasks once their estimates end (a task without an estimate
keeps its room; one past its estimate gets one lead of grace, `room_back_at`), the room of tasks
placed in the forecast once theirs end.  A task that does not start within ``lead_s`` of being
queued would not start sooner on a node bought now: it is left over for new nodes; the others are
served by the nodes there are.  Only the work a node takes now keeps it from release (kept for work
forecast later, nodes stayed idle longer than they saved).  With ``lead_s`` 0 this is the free room
now and nothing else.

3. A makespan allowance (``ElasticPolicy.makespan_allowance``, `plastic run --makespan-allowance`): a
task may start up to `slack_s` later than a node bought now would start it before it is left for new
nodes (a preemptible task waits that long for spot room only: on-demand room costs more than the spot
node it would save), and the new nodes run a group's short tasks back to back within it
(`back_to_back`).

Why the grace: estimates run short (the first runs of a tool, a slow host), and a late task is
usually about to end; a node bought for the work behind it arrives a boot later, by which time the
late task has most often ended and the node stays idle.  A task still running a lead past its
estimate is taken to hold its room, so a stuck task delays new nodes by one lead at most.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import NamedTuple

from plastic.core.elastic.model import NodeState, NodeView, WaitingTask
from plastic.core.elastic.packing import Group, Room, fit_into, group_tasks, rooms_of
from plastic.core.model import TaskSpec, type_allowed
from plastic.core.planning.plan import step_of


class Stage(StrEnum):
    """Where a task of the DAG stands, as the forecasts see it (not the run's live progress:
    plastic.core.account.progress)."""

    WAITING = "waiting"  # some parent has not finished
    QUEUED = "queued"  # ready, not placed
    RUNNING = "running"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class TaskProgress:
    state: Stage
    started_at: float | None = None  # RUNNING: when it was placed
    ended_at: float | None = None  # DONE: when it ended (plan_ahead; None: long ago)


def earliest_start(nodes: Iterable[NodeView], now: float, lead_s: float) -> float:
    """When queued work can start at the soonest: now if a node is up (ready, or draining but still
    running), else when the first booting node is (``lead_s`` after it was asked for, or its known
    ready time), else a boot from now (nothing is there: new nodes must come first)."""
    booting = []
    for n in nodes:
        if n.state is NodeState.READY:
            return now
        if n.state is NodeState.PENDING:
            booting.append(n.ready_at if n.ready_at is not None else n.created_at + lead_s)
    return max(min(booting, default=now + lead_s), now)


def due_in_s(tasks: Sequence[TaskSpec], progress: Mapping[str, TaskProgress], now: float, *,
             lead_s: float, start_at: float | None = None) -> dict[str, float]:
    """Seconds from ``now`` until each forecastable waiting task is queued (see the module's text).
    A task missing from ``progress`` is waiting; a queued one starts at ``start_at`` (`earliest_start`;
    None: now).  A running task past its estimate is expected to end as `room_back_at` says (by its
    estimate plus ``lead_s``; past that, its end is unknown)."""
    by_id = {t.id: t for t in tasks}
    return _due_in_order(_topological(tasks, by_id), by_id, progress, now, lead_s, start_at)


def _due_in_order(order: Sequence[TaskSpec], by_id: Mapping[str, TaskSpec], progress: Mapping[str, TaskProgress],
                  now: float, lead_s: float, start_at: float | None = None) -> dict[str, float]:
    """`due_in_s` on tasks already in topological order (plan_ahead has it)."""
    end_at: dict[str, float | None] = {}  # when a task is expected to end (None: unknown)
    due: dict[str, float] = {}
    for task in order:
        p = progress.get(task.id, _WAITING)
        if p.state is Stage.DONE:
            end_at[task.id] = now
            continue
        runtime = task.runtime_s
        if p.state is Stage.RUNNING:
            start: float | None = p.started_at if p.started_at is not None else now
        elif p.state is Stage.QUEUED:
            start = now
        else:
            ends = [end_at.get(parent) for parent in task.parents if parent in by_id]
            start = None if any(e is None for e in ends) else max(ends, default=now)
            if start is not None:
                due[task.id] = max(start - now, 0.0)
        if start is not None and start_at is not None and p.state is not Stage.RUNNING:
            start = max(start, start_at)  # queued (or due) before any node is up: it starts when one is
        if start is None or runtime is None:
            end_at[task.id] = None
        elif p.state is Stage.RUNNING:
            end_at[task.id] = room_back_at(start + runtime, now, lead_s)
        else:
            end_at[task.id] = start + runtime
    return due


_WAITING = TaskProgress(Stage.WAITING)


class PlanOutlook(NamedTuple):
    expected: tuple[WaitingTask, ...]  # the plan's tasks not issued yet that a forecast can date
    settled: bool  # every plan task is issued or given up: nothing more will be expected


def issued_by_step(issued: Iterable[tuple[str, str | None, TaskProgress]]) -> dict[str, list[TaskProgress]]:
    """`plan_ahead`'s ``jobs_by_step`` from the run's jobs in issue order, each as (step, Toil job
    store id, progress): a job Toil issues again for a failed one (the same job store id) takes its
    first issue's place, so it does not stand for one more of the plan's tasks of its step."""
    by_step: dict[str, list[TaskProgress]] = {}
    slot: dict[tuple[str, str], int] = {}
    for step, job_store_id, progress in issued:
        jobs = by_step.setdefault(step, [])
        if job_store_id is not None and (step, job_store_id) in slot:
            jobs[slot[step, job_store_id]] = progress
            continue
        if job_store_id is not None:
            slot[step, job_store_id] = len(jobs)
        jobs.append(progress)
    return by_step


def plan_ahead(tasks: Sequence[TaskSpec], jobs_by_step: Mapping[str, Sequence[TaskProgress]], now: float,
               started_at: float, hold_s: float, *, lead_s: float, start_at: float | None = None) -> PlanOutlook:
    """The plan's tasks that the Toil leader has not issued yet, as expected work with their due times.

    A run through Toil learns its jobs only as they become ready; the plan knows the DAG.  The run's
    jobs of each CWL step, in the order they were issued (``jobs_by_step``), stand for the plan's
    tasks of that step in the plan's order ("sort[0]", "sort[1]", ...); the plan's other tasks are
    not issued, and `due_in_s` dates them from their parents' progress and the estimates the tasks
    carry.  A task not issued whose parents have all ended (a first-wave task: since ``started_at``,
    which the observation sets to the leader's first issue) is due now, but only for ``hold_s``: the leader issues ready work within seconds, so a
    task still missing after that never comes (the scatter was narrower than planned, or the jobs
    carry other step names), and neither do the tasks below it.  This keeps the nodes the run
    started for the first wave through a slow start, and buys a later wave's nodes while its
    parents run, as the simulation's controller does (bench/elastic.py)."""
    by_step: dict[str, list[TaskSpec]] = {}
    for t in tasks:
        by_step.setdefault(step_of(t.id), []).append(t)
    progress: dict[str, TaskProgress] = {}
    for step, planned in by_step.items():
        for t, p in zip(planned, jobs_by_step.get(step, ())):
            progress[t.id] = p
    by_id = {t.id: t for t in tasks}
    given_up: set[str] = set()
    order = _topological(tasks, by_id)
    for t in order:
        if t.id in progress:
            continue
        parents = [p for p in t.parents if p in by_id]
        if any(p in given_up for p in parents):
            given_up.add(t.id)
            continue
        ended = [_ended_at(progress.get(p)) for p in parents]
        if all(e is not None for e in ended) and now - max(ended, default=started_at) >= hold_s:
            given_up.add(t.id)
    due = _due_in_order(order, by_id, progress, now, lead_s, start_at)
    expected = tuple(WaitingTask(t.id, t.demand, t.preempt.max_preemptions == 0, t.instance_type, 0.0, due[t.id],
                                 t.runtime_s, step_of(t.id))
                     for t in tasks if t.id in due and t.id not in given_up)
    return PlanOutlook(expected, len(progress) + len(given_up) >= len(by_id))


def _ended_at(p: TaskProgress | None) -> float | None:
    """When a task ended (-inf: ended, time unknown), None while it has not."""
    if p is None or p.state is not Stage.DONE:
        return None
    return p.ended_at if p.ended_at is not None else -math.inf


def _topological(tasks: Sequence[TaskSpec], by_id: Mapping[str, TaskSpec]) -> list[TaskSpec]:
    """Parents before children (Kahn's order, ties by id); a task in a cycle is left out."""
    children: dict[str, list[str]] = {t.id: [] for t in tasks}
    missing = {t.id: 0 for t in tasks}
    for t in tasks:
        for parent in t.parents:
            if parent in by_id:
                children[parent].append(t.id)
                missing[t.id] += 1
    ready = sorted(i for i, n in missing.items() if n == 0)
    out: list[TaskSpec] = []
    while ready:
        nxt: list[str] = []
        for i in ready:
            out.append(by_id[i])
            for c in children[i]:
                missing[c] -= 1
                if missing[c] == 0:
                    nxt.append(c)
        ready = sorted(nxt)
    return out


STEPS_PER_LEAD = 60  # the forecast advances on a grid of lead_s / this (1 s for a 60 s boot)


class Fit(NamedTuple):
    left: list[WaitingTask]  # not started within lead_s of being queued: for new nodes
    given: dict[str, int]  # node -> tasks it takes now (a node given work is not idle)
    needed: frozenset[str]  # nodes the forecast places work on within the lead


def fit_ahead(queued: Sequence[WaitingTask], expected: Sequence[WaitingTask], nodes: Sequence[NodeView],
              now: float, lead_s: float, allowance: float = 0.0) -> Fit:
    """The tasks the nodes will not start within ``lead_s`` of their being queued, plus the slack a
    makespan ``allowance`` gives them (`slack_s`), left over for new nodes; per node how many tasks it
    takes now, and which nodes the forecast gives work at all."""
    if lead_s <= 0:  # the free room now
        left, placed = fit_into(group_tasks(queued), rooms_of(nodes))
        by_id = {t.task_id: t for t in queued}
        return Fit([by_id[i] for g in left for i in g.task_ids], {n: len(ids) for n, ids in placed.items()},
                   frozenset(placed))
    return _Ahead(queued, expected, nodes, now, lead_s, allowance).run()


def slack_s(allowance: float, lead_s: float, runtime_s: float | None) -> float:
    """How much later a task of ``runtime_s`` may start on the room there is than a node bought now would
    start it, under a makespan ``allowance`` (a fraction): that fraction of the time the task takes on a
    new node, its boot and its run (0 without an allowance)."""
    return allowance * (lead_s + (runtime_s or 0.0)) if allowance > 0 else 0.0


def per_slot(allowance: float, lead_s: float, runtime_s: float) -> int:
    """How many tasks of ``runtime_s`` (> 0) one vCPU of a new node runs back to back, each starting within
    the slack (`slack_s`) of when a node bought now would start it: 1 + slack // runtime."""
    return 1 + math.floor(slack_s(allowance, lead_s, runtime_s) / runtime_s + 1e-9)


def room_back_at(end: float, now: float, lead_s: float) -> float | None:
    """When a running task's room is expected back: at the end its estimate gives; a task past that
    end is given one lead of grace (back by its end plus ``lead_s``); past the grace, never (it keeps
    its room, and work waiting for it is left for new nodes)."""
    if end >= now:
        return end
    return end + lead_s if end + lead_s > now else None


class _Ahead:
    """`fit_ahead` with a lead: the groups of identical tasks, each in order of due time, are placed on
    the rooms as time goes by on a grid (a lead and the longest wait, lead and slack, in steps of
    lead_s / STEPS_PER_LEAD)."""

    def __init__(self, queued, expected, nodes, now: float, lead_s: float, allowance: float = 0.0):
        self.now, self.lead_s, self.step_s = now, lead_s, lead_s / STEPS_PER_LEAD
        self.tasks = {t.task_id: t for t in queued}
        self.due_at = dict.fromkeys(self.tasks, now)
        for t in expected:
            if t.task_id not in self.tasks and t.due_in_s <= lead_s:
                self.tasks[t.task_id] = t
                self.due_at[t.task_id] = now + t.due_in_s
        # each group: its tasks in order of due time, and how late they may start (lead + slack)
        self.groups = [[g, sorted(g.task_ids, key=lambda i: (self.due_at[i], i)),
                        lead_s + slack_s(allowance, lead_s, longest_estimate(self.tasks[i] for i in g.task_ids))]
                       for g in group_tasks(self.tasks.values())]
        self.wait_s = max((w for _, _, w in self.groups), default=lead_s)
        self.rooms = {r.node_id: r for r in rooms_of(nodes)}
        self.events: list[tuple[float, int, str, int, int]] = []  # (when, 0 ready / 1 room back, node, vcpus, ram)
        self.open: dict[str, Room] = {}  # ready rooms with some room free
        for n in nodes:
            at = now if n.state is not NodeState.PENDING else max(n.created_at + lead_s, now)
            self.events.append((at, 0, n.node_id, 0, 0))
            for end, d in n.task_ends:
                back_at = room_back_at(end, now, lead_s)
                if back_at is not None:
                    self.events.append((back_at, 1, n.node_id, d.vcpus, d.ram_mib))
        heapq.heapify(self.events)
        self.up: set[str] = set()
        self.given: dict[str, int] = {}
        self.needed: set[str] = set()  # nodes the forecast places work on within the lead
        self.left: list[str] = []

    def run(self) -> Fit:
        t, last = self.now, self.now + self.lead_s + self.wait_s
        while any(ids for _, ids, _ in self.groups):
            self._events_until(t)
            self._place(t)
            nxt = min([self.events[0][0]] if self.events else [], default=None)
            heads = [self.due_at[ids[0]] for _, ids, _ in self.groups if ids and self.due_at[ids[0]] > t]
            nxt = min([x for x in (nxt, min(heads, default=None)) if x is not None], default=None)
            if nxt is None or nxt > last:
                break
            t = max(self.now + math.ceil((nxt - self.now) / self.step_s - 1e-9) * self.step_s, t + self.step_s)
        self.left += [i for _, ids, _ in self.groups for i in ids]
        return Fit([self.tasks[i] for i in sorted(self.left)], self.given, frozenset(self.needed))

    def _events_until(self, t: float) -> None:
        while self.events and self.events[0][0] <= t:
            _, kind, node_id, vcpus, ram_mib = heapq.heappop(self.events)
            room = self.rooms[node_id]
            if kind == 0:
                self.up.add(node_id)
            else:
                room.vcpus += vcpus
                room.ram_mib += ram_mib
            if node_id in self.up and room.vcpus > 0 and room.ram_mib > 0:
                self.open[node_id] = room

    def _place(self, t: float) -> None:
        if not self.open:
            return
        # the most any open room has: a group larger than that fits none (rooms only shrink in here)
        most_vcpus = max(r.vcpus for r in self.open.values())
        most_ram_mib = max(r.ram_mib for r in self.open.values())
        due_at = self.due_at
        # the groups in order of their longest-due task (then as grouped): work queued now is served
        # before work only expected, or a larger group expected later would take the room it waits for
        for entry in sorted(self.groups, key=lambda e: due_at[e[1][0]] if e[1] else math.inf):
            g, ids, wait_s = entry
            if not ids:
                continue
            if due_at[ids[0]] + wait_s < t:  # not started within a boot (and slack) of being queued: new nodes
                k = bisect.bisect_left(ids, t, key=lambda i: due_at[i] + wait_s)
                self.left += ids[:k]
                entry[1] = ids = ids[k:]
            if not ids or due_at[ids[0]] > t or g.vcpus > most_vcpus or g.ram_mib > most_ram_mib or not self.open:
                continue
            due = len(ids) if due_at[ids[-1]] <= t else bisect.bisect_right(ids, t, key=due_at.__getitem__)
            eligible = [r for r in self.open.values() if r.vcpus >= g.vcpus and r.ram_mib >= g.ram_mib
                        and (r.reliable or not g.needs_reliable)
                        and type_allowed(g.instance_type, r.instance_type)]
            eligible.sort(key=lambda r: (r.reliable and not g.needs_reliable, r.vcpus, r.ram_mib, r.node_id))
            # preemptible tasks past a boot since they were queued wait (within the slack) for spot room only:
            # on-demand room costs more than the spot node that would otherwise be bought for them
            late = (bisect.bisect_left(ids, t, key=lambda i: due_at[i] + self.lead_s)
                    if wait_s > self.lead_s and not g.needs_reliable else 0)
            at, kept = 0, []
            for r in eligible:
                if r.reliable and at < late:
                    kept, at = ids[at:late], late
                n = min(r.vcpus // max(g.vcpus, 1), r.ram_mib // max(g.ram_mib, 1), due - at)
                if n <= 0:
                    continue
                r.vcpus -= n * g.vcpus
                r.ram_mib -= n * g.ram_mib
                if r.vcpus <= 0 or r.ram_mib <= 0:
                    del self.open[r.node_id]
                if t == self.now:  # only work placed now keeps a node from release (bench/elastic.py)
                    self.given[r.node_id] = self.given.get(r.node_id, 0) + n
                self.needed.add(r.node_id)
                for i in ids[at:at + n]:
                    runtime = self.tasks[i].runtime_s
                    if runtime is not None:
                        heapq.heappush(self.events, (t + runtime, 1, r.node_id, g.vcpus, g.ram_mib))
                at += n
                if at == due:
                    break
            entry[1] = kept + ids[at:]


def longest_estimate(tasks: Iterable[WaitingTask]) -> float | None:
    """The longest runtime estimate among the tasks (None: none has one)."""
    return max((t.runtime_s for t in tasks if t.runtime_s is not None), default=None)


def back_to_back(groups: Sequence[Group], tasks: Mapping[str, WaitingTask], lead_s: float,
                 allowance: float) -> list[Group]:
    """The groups left for new nodes, cut to the tasks that need a vCPU slot of their own: under a
    makespan ``allowance`` a slot of a new node runs its group's tasks back to back as long as each starts
    within the slack (`slack_s`) of when a new node would start it, so ``1 + slack // runtime`` of them
    share one (by the group's longest estimate; all of them without an estimate or an allowance)."""
    out = []
    for g in groups:
        runtime = longest_estimate(tasks[i] for i in g.task_ids if i in tasks)
        if allowance <= 0 or not runtime or runtime <= 0:
            out.append(g)
            continue
        slots = math.ceil(len(g.task_ids) / per_slot(allowance, lead_s, runtime))
        out.append(replace(g, task_ids=g.task_ids[:slots]))
    return out
