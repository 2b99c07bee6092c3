"""The policies' looks in bench/elastic_sim.py: what the elastic controller and the reactive baseline are
shown of the simulated world at a look, and what they do to it.

- `elastic_look`: the real ElasticController (plastic.core.elastic.controller) is handed what plastic's
  shell would observe (the queue, every node as a NodeView with its running tasks' expected ends, the
  work the DAG forecast says is due within a boot, each step's runtimes) and its decisions are carried
  out: nodes bought, cordoned, uncordoned, terminated;
- `reactive_look`: a baseline modelled on Toil's cluster scaler: the queued work that does not fit the
  free room gets new nodes by Toil's BinPackedFit (bench/baselines.py), and a node idle for
  ``reactive_idle_s`` is released (one reliable node is always kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from bench.baselines import toil_binpacked_fit
from bench.sim_world import SimNode, SimTask
from plastic.core.elastic.forecast import Stage, TaskProgress, due_in_s, earliest_start
from plastic.core.elastic.model import (
    ClusterObserved,
    CordonNode,
    CreateNodes,
    NodesCreated,
    NodeState,
    NodeView,
    TerminateNode,
    UncordonNode,
    WaitingTask,
)
from plastic.core.model import RELIABLE, Resources, TaskSpec

if TYPE_CHECKING:  # for the annotations only: bench/elastic_sim.py imports this module
    from bench.elastic_sim import Simulation


def node_view(n: SimNode) -> NodeView:
    """A simulated node as plastic's shell shows it to the controller (a noticed node: draining)."""
    state = n.state
    if state is NodeState.READY and n.noticed_at is not None:
        state = NodeState.DRAINING
    return NodeView(n.node_id, n.cluster, n.shape.name, n.shape.market, state, n.shape.usable,
                    n.shape.usd_per_hour, n.created_at, Resources(n.used_vcpus, n.used_ram_mib), len(n.tasks),
                    n.idle_since if not n.tasks and state is NodeState.READY else None, n.ended_at, n.released)


def expected_work(sim: Simulation, views: Sequence[NodeView]) -> tuple[WaitingTask, ...]:
    """Waiting tasks due within the controller's lead time, by the forecast of plastic.core.elastic.forecast
    on the estimates the controller is told; queued work starts once one of the nodes (``views``, this
    look's) is up."""
    lead_s = sim.controller.policy.lead_s
    if lead_s <= 0 or not sim.forecast_dag:
        return ()
    progress = {i: TaskProgress(Stage(t.state), t.started_at if t.state == "running" else None)
                for i, t in sim.tasks.items() if t.state != "waiting"}
    start_at = earliest_start(views, sim.now, lead_s)
    due = due_in_s(sim.estimated, progress, sim.now, lead_s=lead_s, start_at=start_at)
    return tuple(waiting_task(sim, sim.tasks[i], d) for i, d in sorted(due.items()) if d <= lead_s)


def estimate_s(sim: Simulation, t: SimTask) -> float:
    """What the elastic controller is told a task runs for (it runs ``t.runtime_s``): the world's
    estimate, or the runtime x the simulation's estimate_factor."""
    estimate = sim.world.estimates_s.get(t.spec.id) if sim.world.estimates_s is not None else None
    return t.runtime_s * sim.estimate_factor if estimate is None else max(estimate, 0.001)


def waiting_task(sim: Simulation, t: SimTask, due_in_s: float = 0.0) -> WaitingTask:
    """A queued task (or one due in ``due_in_s``) as the controller sees it."""
    estimate = estimate_s(sim, t) if sim.controller.policy.lead_s > 0 else None
    return WaitingTask(t.spec.id, t.spec.demand, t.needs_reliable, t.spec.instance_type,
                       sim.now - t.queued_at if t.state == "queued" else 0.0, due_in_s, estimate,
                       sim.world.step(t.spec.id) if sim.spreads else None)


def elastic_look(sim: Simulation) -> None:
    """One look of the elastic controller, its decisions carried out."""
    queued = tuple(waiting_task(sim, t) for t in sim.tasks.values() if t.state == "queued")
    views = tuple(node_view(n) for n in sim.nodes.values())
    if sim.controller.policy.lead_s > 0:
        views = tuple(replace(v, task_ends=tuple(
            (sim.tasks[i].started_at + estimate_s(sim, sim.tasks[i]), sim.tasks[i].spec.demand)
            for i in sorted(sim.nodes[v.node_id].tasks))) for v in views)
    out = sim.controller.handle(ClusterObserved(queued, views, expected_work(sim, views), sim.spreads), sim.now)
    for o in out:
        if isinstance(o, CreateNodes):
            shape = sim.by_name[(o.instance_type, o.market)]
            ids = tuple(sim._buy(shape, o.cluster) for _ in range(o.count))
            sim.controller.handle(NodesCreated(o.request, ids), sim.now)
        elif isinstance(o, CordonNode):
            sim.nodes[o.node_id].cordoned = True
        elif isinstance(o, UncordonNode):
            sim.nodes[o.node_id].cordoned = False
        elif isinstance(o, TerminateNode):
            n = sim.nodes[o.node_id]
            if n.tasks:
                raise AssertionError(f"the controller terminated {o.node_id} with tasks running")
            n.released = True
            sim._end_node(n, NodeState.GONE)


def reactive_look(sim: Simulation) -> None:
    """One look of the reactive baseline (the module docstring)."""
    free = [n for n in sim.nodes.values() if n.ended_at is None and n.noticed_at is None]
    rooms = {n.node_id: [n.shape.usable.vcpus - n.used_vcpus, n.shape.usable.ram_mib - n.used_ram_mib,
                         not n.spot] for n in free}
    waiting = []
    for t in sorted((t for t in sim.tasks.values() if t.state == "queued"),
                    key=lambda t: (not t.needs_reliable, -t.spec.ram_mib, -t.spec.vcpus, t.spec.id)):
        room = next((r for r in rooms.values() if r[0] >= t.spec.vcpus and r[1] >= t.spec.ram_mib
                     and (r[2] or not t.needs_reliable)), None)
        if room is None:
            waiting.append(t)
        else:
            room[0] -= t.spec.vcpus
            room[1] -= t.spec.ram_mib
    if waiting:
        specs = [TaskSpec(t.spec.id, t.spec.vcpus, t.spec.ram_mib, RELIABLE if t.needs_reliable else t.spec.preempt,
                          t.spec.runtime_s) for t in waiting]
        for packed in toil_binpacked_fit(specs, sim.shapes, ensure_on_demand=False):
            sim._buy(packed.shape, "core" if packed.shape.reliable else f"burst-{packed.shape.name}")
    reliable = [n for n in free if not n.spot]
    for n in sorted(free, key=lambda n: n.node_id):
        if (n.state is NodeState.READY and not n.tasks and n.idle_since is not None
                and sim.now - n.idle_since >= sim.reactive_idle_s
                and not (not n.spot and len(reliable) <= 1)):
            n.released = True
            sim._end_node(n, NodeState.GONE)
            if not n.spot:
                reliable.remove(n)
