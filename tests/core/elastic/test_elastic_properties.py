"""The elastic controller against a simulated world, under random interleavings (hypothesis).

The world: queued tasks (some reliable), nodes that boot, run tasks, get interrupted, are created
and terminated as the controller decides; tasks may carry runtime estimates and more work may be
expected (due in some seconds), which a controller with a lead looks ahead at
(plastic.core.elastic.forecast).  After every observation:
- never over the hourly budget (when it grows), never more live nodes than max_nodes;
- never fewer than one reliable node (ready, booting, or being created);
- never a cordon or a termination of a node with a running task;
- reliable work never gets spot capacity;
- no shape released is created again, inside the hysteresis window, for work queued at the release;
- a second controller fed the same observations with their tasks and nodes in another order decides
  exactly the same.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.model import (
    ClusterObserved,
    CordonNode,
    CreateNodes,
    CreateRefused,
    ElasticPolicy,
    NodesCreated,
    NodesRequested,
    NodeState,
    NodeView,
    TerminateNode,
    UncordonNode,
    WaitingTask,
)
from plastic.core.model import Market, Resources
from tests.fakes.catalogs import ELASTIC_SHAPES

SHAPES_BY = {(s.name, s.market): s for s in ELASTIC_SHAPES}
TASK_SHAPES = [(1, 1024), (2, 2048), (2, 4096), (4, 8192), (1, 512)]


class World(RuleBasedStateMachine):
    @initialize(budget=st.sampled_from([None, 0.3, 0.6]), max_nodes=st.sampled_from([None, 4, 8]),
                seed=st.integers(0, 1000), lead_s=st.sampled_from([0.0, 0.0, 30.0, 60.0]))
    def start(self, budget, max_nodes, seed, lead_s):
        self.policy = ElasticPolicy(max_nodes=max_nodes, budget_usd_per_hour=budget, idle_s=30, hysteresis_s=60,
                                    lead_s=lead_s)
        self.ctl = ElasticController(ELASTIC_SHAPES, self.policy)
        self.twin = ElasticController(ELASTIC_SHAPES, self.policy)
        self.rng = random.Random(seed)
        self.now = 0.0
        self.ids = itertools.count()
        core = SHAPES_BY[("c5.large", Market.ON_DEMAND)]
        self.nodes: dict[str, dict] = {"core-0": dict(shape=core, state=NodeState.READY, created=0.0, tasks={},
                                                      idle_since=0.0, ended=None, released=False)}
        self.queue: dict[str, WaitingTask] = {}
        self.expected: dict[str, tuple[float, WaitingTask]] = {}  # -> (when it is queued, the task)
        self.started: dict[str, float] = {}
        self.estimates: dict[str, float | None] = {}
        self.reliable_tasks: set[str] = set()
        self.releases: list[tuple[str, Market, float, frozenset[str]]] = []
        self.cordoned: set[str] = set()

    # ------------------------------------------------------------ the world

    def view(self) -> tuple[NodeView, ...]:
        out = []
        for nid, n in self.nodes.items():
            s = n["shape"]
            used = Resources(sum(d.vcpus for d in n["tasks"].values()), sum(d.ram_mib for d in n["tasks"].values()))
            ends = tuple(sorted(((self.started[t] + self.estimates[t], d) for t, d in n["tasks"].items()
                                 if self.estimates.get(t) is not None and t in self.started), key=lambda e: e[0]))
            out.append(NodeView(nid, "c", s.name, s.market, n["state"], s.usable, s.usd_per_hour, n["created"], used,
                                len(n["tasks"]), None if n["tasks"] else n["idle_since"], n["ended"], n["released"],
                                task_ends=ends))
        return tuple(out)

    @rule(n=st.integers(1, 6), shape=st.sampled_from(TASK_SHAPES), reliable=st.booleans(),
          runtime=st.sampled_from([None, 5.0, 30.0, 200.0]), due_in=st.sampled_from([0.0, 0.0, 10.0, 45.0, 100.0]))
    def work_arrives(self, n, shape, reliable, runtime, due_in):
        """Work queued now, or expected in ``due_in`` seconds (its parents run)."""
        for _ in range(n):
            tid = f"t{next(self.ids)}"
            task = WaitingTask(tid, Resources(*shape), reliable, runtime_s=runtime)
            self.estimates[tid] = runtime
            if due_in:
                self.expected[tid] = (self.now + due_in, task)
            else:
                self.queue[tid] = task
            if reliable:
                self.reliable_tasks.add(tid)

    @rule()
    def tasks_start(self):
        """Queued tasks go where they fit (what the JobBook's placement would do, roughly)."""
        for tid, t in sorted(self.queue.items()):
            for nid, n in sorted(self.nodes.items()):
                s = n["shape"]
                if n["state"] is not NodeState.READY or nid in self.cordoned or (t.needs_reliable and not s.reliable):
                    continue
                used = Resources(sum(d.vcpus for d in n["tasks"].values()), sum(d.ram_mib for d in n["tasks"].values()))
                if (s.usable - used - t.demand).nonnegative:
                    n["tasks"][tid] = t.demand
                    self.started[tid] = self.now
                    del self.queue[tid]
                    break

    @rule()
    def a_launch_races_the_cordon(self):
        """A task arrives and is launched onto a node just before its cordon took effect."""
        for nid in sorted(self.cordoned):
            n = self.nodes[nid]
            if n["state"] is NodeState.READY and not n["tasks"]:
                n["tasks"][f"t{next(self.ids)}"] = Resources(1, 512)
                return

    @rule(data=st.data())
    def a_task_ends(self, data):
        busy = sorted(nid for nid, n in self.nodes.items() if n["tasks"])
        if busy:
            nid = data.draw(st.sampled_from(busy))
            tid = sorted(self.nodes[nid]["tasks"])[0]
            del self.nodes[nid]["tasks"][tid]
            if not self.nodes[nid]["tasks"]:
                self.nodes[nid]["idle_since"] = self.now

    @rule()
    def a_wave_ends(self):
        """Every running task finishes (the end of a scatter): nodes go idle together."""
        for n in self.nodes.values():
            if n["tasks"]:
                n["tasks"] = {}
                n["idle_since"] = self.now

    @rule()
    def nodes_boot(self):
        for n in self.nodes.values():
            if n["state"] is NodeState.PENDING:
                n["state"] = NodeState.READY
                n["idle_since"] = self.now

    @rule(data=st.data())
    def spot_interruption(self, data):
        spot = sorted(nid for nid, n in self.nodes.items()
                      if n["shape"].market is Market.SPOT and n["state"] in (NodeState.READY, NodeState.PENDING))
        if spot:
            nid = data.draw(st.sampled_from(spot))
            n = self.nodes[nid]
            for tid, demand in n["tasks"].items():  # back to the queue
                self.queue[tid] = WaitingTask(tid, demand, tid in self.reliable_tasks,
                                              runtime_s=self.estimates.get(tid))
            n.update(state=NodeState.INTERRUPTED, tasks={}, ended=self.now)

    @rule(dt=st.sampled_from([1.0, 5.0, 40.0, 40.0, 120.0]), refuse=st.booleans())
    def observe(self, dt, refuse):
        self.now += dt
        for tid, (at, task) in sorted(self.expected.items()):
            if at <= self.now:
                self.queue[tid] = task
                del self.expected[tid]
        self.tasks_start()  # the framework places what fits before the controller looks
        view = self.view()
        queued = tuple(sorted(self.queue.values(), key=lambda t: t.task_id))
        expected = tuple(replace(task, due_in_s=at - self.now) for _, (at, task) in sorted(self.expected.items()))
        out = self.ctl.handle(ClusterObserved(queued, view, expected), self.now)
        shuffled_q, shuffled_n, shuffled_e = list(queued), list(view), list(expected)
        self.rng.shuffle(shuffled_q)
        self.rng.shuffle(shuffled_n)
        self.rng.shuffle(shuffled_e)
        assert self.twin.handle(ClusterObserved(tuple(shuffled_q), tuple(shuffled_n), tuple(shuffled_e)),
                                self.now) == out
        self.check(out, view)
        for o in out:
            if isinstance(o, CordonNode):
                self.cordoned.add(o.node_id)
            elif isinstance(o, UncordonNode):
                assert o.node_id in self.cordoned, o
                self.cordoned.discard(o.node_id)
            elif isinstance(o, TerminateNode):
                n = self.nodes[o.node_id]
                self.releases.append((n["shape"].name, n["shape"].market, self.now, frozenset(self.queue)))
                n.update(state=NodeState.GONE, ended=self.now, released=True)
                self.cordoned.discard(o.node_id)
            elif isinstance(o, CreateNodes):
                if refuse and o.market is Market.SPOT:
                    answer = CreateRefused(o.request, o.instance_type, o.market, "no capacity")
                else:
                    ids = tuple(f"n{next(self.ids)}" for _ in range(o.count))
                    for nid in ids:
                        self.nodes[nid] = dict(shape=SHAPES_BY[(o.instance_type, o.market)], state=NodeState.PENDING,
                                               created=self.now, tasks={}, idle_since=None, ended=None, released=False)
                    answer = NodesCreated(o.request, ids)
                assert self.twin.handle(answer, self.now) == self.ctl.handle(answer, self.now)

    @rule(refuse=st.booleans())
    def observe_a_minute_later(self, refuse):
        """Time passes with no other change (nodes go idle long enough to be released)."""
        self.observe(60.0, refuse)

    # ------------------------------------------------------------ the properties

    def check(self, out, view):
        by_id = {n.node_id: n for n in view}
        live = [n for n in view if n.state in (NodeState.PENDING, NodeState.READY, NodeState.DRAINING)]
        creates = [o for o in out if isinstance(o, CreateNodes)]
        added = sum(SHAPES_BY[(c.instance_type, c.market)].usd_per_hour * c.count for c in creates)
        budget = self.policy.budget_usd_per_hour
        if creates and budget is not None:
            terminated = {o.node_id for o in out if isinstance(o, TerminateNode)}
            rate = sum(n.usd_per_hour for n in live if n.node_id not in terminated)
            assert rate + added <= budget + 1e-9, (rate, added, budget)
        if creates and self.policy.max_nodes is not None:
            assert len(live) + sum(c.count for c in creates) <= self.policy.max_nodes + len(
                [o for o in out if isinstance(o, TerminateNode)])
        for o in out:
            if isinstance(o, (CordonNode, TerminateNode)):
                assert by_id[o.node_id].running == 0, o
            if isinstance(o, NodesRequested) and o.market == "spot":
                assert not set(o.tasks) & self.reliable_tasks, o
            if isinstance(o, CreateNodes):
                for name, market, at, queued in self.releases:
                    if (name, market) == (o.instance_type, o.market) and self.now - at < self.policy.hysteresis_s:
                        req = next(r for r in out if isinstance(r, NodesRequested) and r.request == o.request)
                        assert not (set(req.tasks) and set(req.tasks) <= queued), (o, req)
        uncordoned = {o.node_id for o in out if isinstance(o, UncordonNode)}
        gone = {o.node_id for o in out if isinstance(o, (CordonNode, TerminateNode))} | (self.cordoned - uncordoned)
        reliable = [n for n in live if n.market is Market.ON_DEMAND and n.node_id not in gone
                    and n.state is not NodeState.DRAINING]
        asked = any(c.market is Market.ON_DEMAND for c in creates) or any(
            r.shape.reliable for r in self.ctl.requests.values())
        assert reliable or asked, "no reliable node left and none asked for"


def test_a_reliable_node_uncordoned_in_the_same_look_counts_as_reliable():
    """Found by the world above (CI, 2026-11-27): the on-demand node bought for reliable work is
    cordoned when idle, given back for new work in the look that cordons the first core node; the
    check counted it as still cordoned (the controller kept a reliable node, the check did not see it)."""
    state = World()
    state.start(budget=None, max_nodes=None, seed=0, lead_s=0.0)
    state.work_arrives(due_in=0.0, n=1, reliable=True, runtime=None, shape=(4, 8192))
    state.observe_a_minute_later(refuse=False)
    state.nodes_boot()
    state.tasks_start()
    state.a_wave_ends()
    state.observe_a_minute_later(refuse=False)
    state.work_arrives(due_in=0.0, n=1, reliable=False, runtime=None, shape=(4, 8192))
    state.observe_a_minute_later(refuse=False)
    assert not state.cordoned - {"core-0"}
    state.teardown()


World.TestCase.settings = settings(max_examples=200, stateful_step_count=50, deadline=None,
                                   suppress_health_check=[HealthCheck.too_slow])
TestElasticWorld = World.TestCase
TestElasticWorld.pytestmark = [pytest.mark.slow]  # make test-fast leaves it out
