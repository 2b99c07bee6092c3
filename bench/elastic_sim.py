"""A discrete-event simulation of a workflow on a hybrid cloud, for bench/elastic.py.

A WfCommons trace's DAG runs on nodes that a *policy* buys and releases:

- ``static``: the plan of `plastic plan` (waves mode), every node bought at the start and kept to the
  end; a lost spot node is not replaced (plastic before the elastic cluster);
- ``elastic``: the real ElasticController (plastic.core.elastic.controller) looking every ``look_s`` seconds (5, as
  plastic run looks), and ``wake_s`` (1 s) after a task ends, as plastic run's provisioner looks soon
  after a task ends or Toil issues work (its BATCH_IDLE_S), starting from the plan's on-demand and first-wave nodes
  (plastic.core.elastic.controller.starting_nodes); its runtime estimates are the trace's runtimes, or those x
  ``estimate_factor`` (below 1, the tasks overrun them, as on a host slower than the trace's);
- ``reactive``: a baseline modelled on Toil's cluster scaler: every ``look_s`` seconds (5, as plastic
  run looks), the queued work that does not fit the free room gets new nodes by Toil's BinPackedFit
  (shapes smallest first, spot before on-demand, price ignored: bench/baselines.py), and a node idle
  for ``reactive_idle_s`` (600 s) is released; it starts like the elastic policy, from the plan's
  first nodes;
- ``reactive-cold``: the same scaler started as Toil's is (no worker nodes, minNodes 0): from the plan's
  reliable node alone, as every policy here keeps one.

What the elastic and reactive policies see and do at a look is in bench/sim_policies.py.

The world: a task is queued when its parents have finished; queued tasks are placed (reliable first,
larger first, preemptible work on spot nodes first, the tightest node that fits: the JobBook's rules)
whenever something changes; a task runs for its trace runtime.  Nodes are paid for per second from
their creation (booting ``boot_s`` included, at least 60 s, as EC2 bills) to their release or loss.
Spot interruptions: a Poisson process per spot node with a rate that follows its interruption band
(``rate_per_hour`` x the band's middle / 15%: with the default 1.0, a node of the 10-15% band is
interrupted about once an hour, one of the <5% band once in six hours, one of the >20% band 1.7 times
an hour), AWS's 120 s notice: at the notice the node takes nothing new and a task that cannot end 30 s
before the end is stopped and queued again; at the end the node dies and what still runs on it is
queued again (a preemption; preempt=N tasks go to reliable nodes after N of them).  Those are the
defaults of the world's rules (``world``: bench/sim_world.SimWorld); bench/elastic_twin.py sets them to
what a local replay measured.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Sequence
from dataclasses import replace

from bench.sim_policies import elastic_look, reactive_look
from bench.sim_world import (
    MIN_BILLED_S,
    NOTICE_MARGIN_S,
    NOTICE_S,
    REFERENCE_RISK,
    SimNode,
    SimResult,
    SimTask,
    SimWorld,
    trace_step,
)
from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.first_wave import sized_by_controller, starting_nodes
from plastic.core.elastic.model import (
    ElasticPolicy,
    NodeState,
)
from plastic.core.elastic.packing import BAND_RISK, UNKNOWN_BAND_RISK
from plastic.core.elastic.spread import plan_spreads
from plastic.core.model import Market, NodeShape, TaskSpec
from plastic.core.planning.plan import Plan

__all__ = ["MIN_BILLED_S", "NOTICE_MARGIN_S", "NOTICE_S", "REFERENCE_RISK", "SimNode", "SimResult", "SimTask",
           "SimWorld", "Simulation", "simulate", "trace_step"]

class Simulation:
    def __init__(self, tasks: Sequence[TaskSpec], plan: Plan, shapes: Sequence[NodeShape], policy: str, *,
                 seed: int = 1, rate_per_hour: float = 0.0, boot_s: float = 60.0, look_s: float = 5.0,
                 reactive_idle_s: float = 600.0, elastic_policy: ElasticPolicy | None = None,
                 horizon_s: float = 7 * 86400.0, estimate_factor: float = 1.0,
                 forecast_dag: bool = True, wake_s: float = 1.0, spreads: bool = True,
                 world: SimWorld | None = None):
        self.policy = policy
        self.world = world = world or SimWorld()
        self.shapes = list(shapes)
        self.by_name = {(s.instance_type.name, s.market): s for s in self.shapes}
        self.rng = random.Random(seed)
        self.rate_per_hour = rate_per_hour
        self.boot_s, self.look_s, self.reactive_idle_s, self.horizon_s = boot_s, look_s, reactive_idle_s, horizon_s
        self.wake_s = wake_s  # elastic: a look this long after a task ends (0: only every look_s)
        self.wake_at: float | None = None
        self.now = 0.0
        self.events: list[tuple[float, int, str, tuple]] = []
        self.seq = itertools.count()
        self.tasks = {t.id: SimTask(t, len(t.parents)) for t in tasks}
        # the elastic controller's estimates: the trace's runtimes x estimate_factor (< 1: tasks overrun them)
        self.estimate_factor = estimate_factor
        self.forecast_dag = forecast_dag  # False: no waves forecast from the DAG, as a run through Toil sees it
        self.estimated = [replace(t, runtime_s=self._estimate_of(t)) for t in tasks]
        for t in tasks:
            for p in t.parents:
                self.tasks[p].children.append(t.id)
        self.nodes: dict[str, SimNode] = {}
        self.node_ids = itertools.count(1)
        self.done = 0
        self.interruptions = 0
        self.preemptions = 0
        self.last_end = 0.0
        self.peak = 0
        held_back = False  # first-wave nodes the elastic controller buys itself
        if policy == "static":
            planned = tuple(plan.nodes)
        elif policy == "reactive-cold":  # Toil's scaler as users start it: no workers, the reliable node only
            planned = tuple(n for n in plan.nodes if n.market is Market.ON_DEMAND)[:1]
        else:  # the plan's first wave, but for the nodes of steps whose runtimes spread (the controller's)
            later = (sized_by_controller(self.estimated, shapes, elastic_policy or ElasticPolicy(), world.step)
                     if spreads else frozenset())
            planned = starting_nodes(plan.nodes, plan.tasks, later)
            held_back = len(planned) < len(starting_nodes(plan.nodes, plan.tasks))
        if world.first_nodes is not None:
            planned = tuple(world.first_nodes)
        # each step's runtimes as the shell knows them before the run has its own: the plan's (the trace's)
        self.spreads = plan_spreads(self.estimated, world.step) if spreads else ()
        for n in planned:
            self._buy(self.by_name[(n.instance_type, n.market)], n.cluster, world.first_boot_s)
        names = {(n.instance_type, n.market): n.cluster for n in plan.nodes}
        self.controller = ElasticController(self.shapes, elastic_policy or ElasticPolicy(), cluster_names=names)
        for t in self.tasks.values():
            if t.waiting_parents == 0:
                self._issue(t)
        if policy != "static":
            self._at(world.policy_starts_s + self.look_s, "look", ())
            if policy == "elastic" and held_back and 0 < self.wake_s < self.look_s:
                # the provisioner looks a second after Toil issues work
                self._at(world.policy_starts_s + self.wake_s, "look", ())

    # ------------------------------------------------------------ the world

    def _at(self, t: float, kind: str, args: tuple) -> None:
        heapq.heappush(self.events, (t, next(self.seq), kind, args))

    def _estimate_of(self, t: TaskSpec) -> float | None:
        """What the elastic controller is told a task runs for: the world's estimate, or its runtime x
        estimate_factor (below 1, the tasks overrun them)."""
        if self.world.estimates_s is not None:
            return self.world.estimates_s.get(t.id)
        return None if t.runtime_s is None else t.runtime_s * self.estimate_factor

    def _buy(self, shape: NodeShape, cluster: str, boot_s: float | None = None) -> str:
        node_id = f"n{next(self.node_ids)}"
        ready_at = self.now + (self.boot_s if boot_s is None else boot_s)
        self.nodes[node_id] = SimNode(node_id, shape, cluster, self.now, ready_at)
        self._at(ready_at, "ready", (node_id,))
        self.peak = max(self.peak, sum(1 for n in self.nodes.values() if n.ended_at is None))
        return node_id

    def _queue(self, t: SimTask) -> None:
        t.state, t.node, t.queued_at = "queued", None, self.now

    def _issue(self, t: SimTask) -> None:
        """Its parents have ended: queued now, or after the world's issue lag (the engine's)."""
        lag = self.world.issue_lag_s.get(t.spec.id, 0.0)
        if lag > 0:
            self._at(self.now + lag, "issue", (t.spec.id,))
        else:
            self._queue(t)

    def _account(self, n: SimNode) -> None:
        """Bring the node's time tally to now (before any change of what runs on it)."""
        if n.tasks:
            n.occupied_s += self.now - n.mark
        n.mark = self.now

    def _drop(self, n: SimNode, t: SimTask, finished: bool) -> None:
        """Take a task off a node: its vCPU-seconds there are work done, or work lost."""
        self._account(n)
        ran = t.spec.vcpus * (self.now - t.started_at)
        if finished:
            n.done_vcpu_s += ran
        else:
            n.lost_vcpu_s += ran
        n.tasks.discard(t.spec.id)
        n.used_vcpus -= t.spec.vcpus
        n.used_ram_mib -= t.spec.ram_mib

    def _end_node(self, n: SimNode, state: NodeState) -> None:
        self._account(n)
        n.state, n.ended_at = state, self.now
        for task_id in sorted(n.tasks):
            t = self.tasks[task_id]
            n.lost_vcpu_s += t.spec.vcpus * (self.now - t.started_at)
            t.attempt += 1
            t.preemptions += 1
            self.preemptions += 1
            self._queue(t)
        n.tasks.clear()
        n.used_vcpus = n.used_ram_mib = 0

    def _place(self) -> None:
        queued = sorted((t for t in self.tasks.values() if t.state == "queued"),
                        key=lambda t: (not t.needs_reliable, -t.spec.vcpus, -t.spec.ram_mib, t.spec.id))
        open_nodes = [n for n in self.nodes.values() if n.takes_work]
        for t in queued:
            best: tuple[tuple, SimNode] | None = None
            for n in open_nodes:
                if t.needs_reliable and n.spot:
                    continue
                free_v = n.shape.usable.vcpus - n.used_vcpus - t.spec.vcpus
                free_r = n.shape.usable.ram_mib - n.used_ram_mib - t.spec.ram_mib
                if free_v < 0 or free_r < 0:
                    continue
                key = (not n.spot if not t.needs_reliable else False,
                       free_v / n.shape.usable.vcpus + free_r / n.shape.usable.ram_mib, n.node_id)
                if best is None or key < best[0]:
                    best = (key, n)
            if best is None:
                continue
            n = best[1]
            self._account(n)
            n.tasks.add(t.spec.id)
            n.used_vcpus += t.spec.vcpus
            n.used_ram_mib += t.spec.ram_mib
            n.idle_since = None
            t.state, t.node, t.started_at = "running", n.node_id, self.now
            self._at(self.now + t.runtime_s, "end", (t.spec.id, t.attempt))

    def _risk_rate_per_s(self, shape: NodeShape) -> float:
        if not self.world.by_band:
            return self.rate_per_hour / 3600.0
        band = shape.instance_type.spot_interruption_band
        return self.rate_per_hour * BAND_RISK.get(band or "", UNKNOWN_BAND_RISK) / REFERENCE_RISK / 3600.0

    # ------------------------------------------------------------ events

    def _on_ready(self, node_id: str) -> None:
        n = self.nodes[node_id]
        if n.ended_at is not None:
            return
        n.state, n.idle_since = NodeState.READY, self.now
        if n.spot and self.world.notices is not None:  # the world's own interruptions (a replay's)
            heard = self.world.notices.get(int(node_id.removeprefix("n")) - 1)
            if heard is not None:
                n.notice_window_s = heard[1]
                self._at(self.now + heard[0], "notice", (node_id,))
        elif n.spot and self.rate_per_hour > 0:
            self._at(self.now + self.rng.expovariate(self._risk_rate_per_s(n.shape)), "notice", (node_id,))

    def _on_end(self, task_id: str, attempt: int) -> None:
        t = self.tasks[task_id]
        if t.state != "running" or t.attempt != attempt:
            return
        n = self.nodes[t.node or ""]
        self._drop(n, t, finished=True)
        if not n.tasks:
            n.idle_since = self.now
        t.state, t.node = "done", None
        self._wake_soon()
        self.done += 1
        self.last_end = self.now
        for c in t.children:
            child = self.tasks[c]
            child.waiting_parents -= 1
            if child.waiting_parents == 0:
                self._issue(child)

    def _on_issue(self, task_id: str) -> None:
        """A task the engine issues a lag after its parents ended: queued, and looked at soon, as the
        provisioner looks once Toil's issues stop coming."""
        self._queue(self.tasks[task_id])
        self._wake_soon()

    def _wake_soon(self) -> None:
        """Elastic: a look ``wake_s`` from now, unless one is due already (the provisioner's look after a
        task's end or Toil's issues: plastic.framework.provisioner)."""
        if (self.policy == "elastic" and self.wake_s > 0 and self.wake_at is None
                and self.now >= self.world.policy_starts_s):
            self.wake_at = self.now + self.wake_s
            self._at(self.wake_at, "wake", ())

    def _on_notice(self, node_id: str) -> None:
        n = self.nodes[node_id]
        if n.ended_at is not None or n.noticed_at is not None:
            return
        self.interruptions += 1
        n.noticed_at = self.now
        n.state = NodeState.DRAINING
        window_s = self.world.notice_s if n.notice_window_s is None else n.notice_window_s
        for task_id in sorted(n.tasks):  # those that cannot end before the margin are stopped now
            t = self.tasks[task_id]
            if t.started_at + t.runtime_s > self.now + window_s - self.world.margin_s:
                self._drop(n, t, finished=False)
                t.attempt += 1
                t.preemptions += 1
                self.preemptions += 1
                self._queue(t)
        self._at(self.now + window_s, "death", (node_id,))

    def _on_death(self, node_id: str) -> None:
        n = self.nodes[node_id]
        if n.ended_at is None:
            self._end_node(n, NodeState.INTERRUPTED)

    # ------------------------------------------------------------ policies

    def _look(self) -> None:
        if self.policy == "elastic":
            elastic_look(self)
        elif self.policy in ("reactive", "reactive-cold"):
            reactive_look(self)
        if self.done < len(self.tasks) or self.world.end_lag_s > 0:  # the policy looks till the run's end
            self._at(self.now + self.look_s, "look", ())

    def _wake(self) -> None:
        """A look soon after a task ended (no new periodic look: those go on every look_s)."""
        self.wake_at = None
        if self.done < len(self.tasks) or self.world.end_lag_s > 0:
            elastic_look(self)

    # ------------------------------------------------------------ run

    def run(self) -> SimResult:
        handlers = {"ready": self._on_ready, "end": self._on_end, "notice": self._on_notice,
                    "death": self._on_death, "look": self._look, "wake": self._wake,
                    "issue": self._on_issue}
        # the run goes on till its last task ends, and the world's end lag after it (its policy still looking)
        while self.events and (self.done < len(self.tasks)
                               or self.events[0][0] <= self.last_end + self.world.end_lag_s):
            t = self.events[0][0]
            if t > self.horizon_s:
                break
            self.now = t
            while self.events and self.events[0][0] == t:
                _, _, kind, args = heapq.heappop(self.events)
                handlers[kind](*args)
            self._place()
        end = self.last_end + self.world.end_lag_s if self.done == len(self.tasks) else self.now
        spend: dict[str, float] = {}
        for n in self.nodes.values():
            if n.ended_at is None:
                self.now = max(end, n.created_at)
                self._account(n)
                n.ended_at = self.now
            for part, usd in n.spend_usd(self.world.min_billed_s).items():
                key = f"{'spot' if n.spot else 'reliable'} {part}"
                spend[key] = spend.get(key, 0.0) + usd
        usd = sum(n.cost_usd(end, self.world.min_billed_s) for n in self.nodes.values())
        hours = sum(max((n.ended_at or end) - n.created_at, 0.0) for n in self.nodes.values()) / 3600.0
        return SimResult(self.policy, self.rate_per_hour > 0, usd, end, hours, self.done / max(len(self.tasks), 1),
                         self.interruptions, self.preemptions, self.peak, len(self.nodes), spend)


def simulate(tasks: Sequence[TaskSpec], plan: Plan, shapes: Sequence[NodeShape], policy: str, **kw) -> SimResult:
    return Simulation(tasks, plan, shapes, policy, **kw).run()

