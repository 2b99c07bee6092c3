"""The elastic controller: keeps the hybrid cloud the size of the work that is queued, pure.

The Karpenter split: this module decides (create, cordon, terminate, with reasons), a provider adapter
(plastic.providers) creates and terminates nodes, plastic.core.elastic.observation turns the nodes the
shell (plastic.framework.provisioner) lists and the JobBook into observations, and
plastic.core.elastic.machine steps both on the inputs the decisions log holds.  `handle(event, now)`
takes an observation (ClusterObserved: the queued tasks and every node) or the provider's answer to a
creation, and returns commands and records (plastic.core.elastic.model).  Inputs are sorted before
use, so the same observation in any order gives the same decisions.

Rules, each observation:

- Capacity: ready and booting nodes, and creations asked for but not yet seen, count; a node being
  released (cordoned) does not.  Queued work is first fitted onto their free room
  (plastic.core.elastic.packing.fit_existing).
- Scale out: the work left over gets new nodes by the planner's packing: spot shapes for preemptible
  work, on-demand ones for reliable work (preempt=false, or preempt=N with N preemptions spent); spot
  shapes are compared at their price raised by their interruption risk (band); a (type, market) the
  provider refused recently, or a spot type interrupted ``max_interruptions`` times within
  ``interruption_window_s``, is not bought: the next-cheapest shape that fits is, else on-demand;
  once ``max_spot_refusals`` spot types were refused recently the spot market counts as short and
  preemptible work gets on-demand nodes (reason ``spot_refused``) until a refusal expires.
  New spot nodes bought while spot nodes were recently lost are recorded as replacements; a spot
  node counts as lost (and as an interruption of its type) from its terminate notice on, once.
- Anticipation: expected tasks (ClusterObserved.expected, forecast by plastic.core.elastic.forecast) due
  within ``lead_s`` (the boot time; 0: off) count as work after the queued tasks: they take the
  room left and the room of tasks expected to end by then (NodeView.ending), the rest gets nodes now
  (reason ``expected_work``) so that they are up when the tasks are queued.  An idle node the
  forecast gives no work within the lead is released once idle for ``unneeded_idle_s`` (0 s: when its
  last task ends, release when done) instead of ``idle_s``, cordoned and terminated in the same look:
  the shell applies the cordon under the lock the observation was taken under, so nothing reaches
  it in between (a task being launched counts as running on it).
- Spread (looking ahead): a group of like tasks of one step whose runtimes spread (ClusterObserved.spreads)
  gets the nodes plastic.core.elastic.spread sizes for it (a node is paid until its longest task ends)
  when they differ from what packing by room would buy; the record's detail says so.
- Always one reliable node: with no on-demand node ready or booting, the cheapest one is created.
- Scale in: a ready node with no task and no queued work that fits it, idle for ``idle_s``, is
  cordoned (it takes no new work), then terminated at the next observation if still without a task;
  never the last reliable node, never a node with a running task.  A cordoned node that queued work
  fits by then is uncordoned instead (work issued just after the node went idle is not left to wait
  for new nodes while it is released).
- Limits: never more than ``max_nodes`` live nodes, never a total price above
  ``budget_usd_per_hour``; with ``budget_usd`` no growth once the projected spend (spent so far plus
  the hourly rate after the growth for ``budget_horizon_s``) reaches it.  A limit that starts to bind
  is recorded once (GrowthStopped).
- No flapping: a shape released is not created again within ``hysteresis_s`` for work that was
  already queued when it was released.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from plastic.core.elastic.forecast import back_to_back, fit_ahead
from plastic.core.elastic.model import (
    ClusterObserved,
    CordonNode,
    CreateNodes,
    CreateRefused,
    CreationRefused,
    ElasticPolicy,
    GrowthStopped,
    NodeCordoned,
    NodeInterrupted,
    NodeReady,
    NodeReleased,
    NodesCreated,
    NodesRequested,
    NodesStarted,
    NodeState,
    NodeUncordoned,
    NodeView,
    TerminateNode,
    UncordonNode,
    WaitingTask,
)
from plastic.core.elastic.packing import (
    PLAN_TASKS_MAX,
    group_tasks,
    plan_groups,
    plan_nodes,
    task_of,
    tasks_of,
    weighted_shapes,
)
from plastic.core.elastic.spread import spread_packed
from plastic.core.model import Market, NodeShape, TaskSpec, type_allowed
from plastic.core.naming import cluster_name
from plastic.core.planning.packing import PackedNode, ShapeMenu

MAX_TASK_IDS = 20  # task ids named in a node_requested record


@dataclass(slots=True)
class _Request:
    request: int
    shape: NodeShape
    count: int
    created_at: float
    node_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Release:
    instance_type: str
    market: Market
    at: float
    queued: frozenset[str]


class ElasticController:
    def __init__(self, shapes: Sequence[NodeShape], policy: ElasticPolicy = ElasticPolicy(), *,
                 cluster_names: dict[tuple[str, Market], str] | None = None):
        self.policy = policy
        self.shapes = tuple(sorted(shapes, key=lambda s: (s.usd_per_hour, s.name, s.market.value)))
        self.by_name = {(s.instance_type.name, s.market): s for s in self.shapes}
        self.cluster_names = dict(cluster_names or {})
        self.next_request = 1
        self.requests: dict[int, _Request] = {}  # asked for, not yet seen in an observation
        self.seen: dict[str, NodeState] = {}
        self.interruptions: list[tuple[str, Market, float]] = []
        self.unreplaced = 0  # spot nodes lost since spot capacity was last bought
        self.spot_lost: set[str] = set()  # spot nodes counted as lost (noticed or gone)
        self.refused: dict[tuple[str, Market], float] = {}  # -> avoided until
        self.releases: list[_Release] = []
        self.cordoned: dict[str, float] = {}
        self.terminated: set[str] = set()
        self.created: set[str] = set()  # nodes this controller asked for
        self.binding: set[str] = set()
        self.expected_ids: frozenset[str] = frozenset()  # expected tasks counted at this observation
        self.spreads: dict[str, tuple[float, ...]] = {}  # this observation's runtime spreads, by step
        self.spread_sized: frozenset[str] = frozenset()  # tasks whose nodes this look sized by spread

    # ------------------------------------------------------------ entry point

    def handle(self, event: ClusterObserved | NodesCreated | CreateRefused, now: float) -> list:
        out: list = []
        match event:
            case ClusterObserved():
                self._observed(event, now, out)
            case NodesCreated():
                req = self.requests.get(event.request)
                if req is not None:
                    req.node_ids = tuple(event.node_ids)
                    self.created.update(req.node_ids)
                    req.count = len(req.node_ids)  # fewer than asked: the provider says why (CreateRefused)
                    if not req.node_ids:
                        del self.requests[event.request]
                    out.append(NodesStarted(event.request, tuple(event.node_ids)))
            case CreateRefused():
                req = self.requests.get(event.request)
                if req is not None and not req.node_ids:
                    del self.requests[event.request]
                self.refused[(event.instance_type, event.market)] = now + self.policy.refused_for_s
                out.append(CreationRefused(event.request, event.instance_type, str(event.market), event.reason))
            case _:
                raise TypeError(f"not an elastic controller event: {event!r}")
        return out

    def cluster_of(self, shape: NodeShape) -> str:
        key = (shape.instance_type.name, shape.market)
        if key not in self.cluster_names:
            self.cluster_names[key] = "core" if shape.reliable else cluster_name("burst", shape.instance_type.name)
        return self.cluster_names[key]

    # ------------------------------------------------------------ one observation

    def _observed(self, obs: ClusterObserved, now: float, out: list) -> None:
        nodes = sorted(obs.nodes, key=lambda n: n.node_id)
        self._transitions(nodes, now, out)
        self._release_cordoned(nodes, obs, now, out)
        capacity = [n for n in nodes if n.state in (NodeState.PENDING, NodeState.READY)
                    and n.node_id not in self.cordoned and n.node_id not in self.terminated]
        capacity += self._requested_nodes(now)
        pol = self.policy  # with no lead, no estimates: neither spreads nor an allowance count
        left_tasks, given, needed = fit_ahead(obs.queued, obs.expected, capacity, now, pol.lead_s,
                                              pol.makespan_allowance)
        self.spreads = dict(obs.spreads) if pol.lead_s > 0 else {}
        left = back_to_back(group_tasks(left_tasks, frozenset(self.spreads)), {t.task_id: t for t in left_tasks},
                            pol.lead_s, pol.makespan_allowance)
        queued_ids = {t.task_id for t in obs.queued}
        self.expected_ids = frozenset(t.task_id for t in left_tasks if t.task_id not in queued_ids)
        self._grow(nodes, capacity, left, now, out)
        self._shrink(capacity, given, needed, frozenset(t.task_id for t in obs.queued), now, out)

    def _spot_lost(self, n: NodeView, now: float) -> None:
        """Count a spot node as lost once: at its terminate notice, or when it goes without one.  What is
        bought for work while it is counted is a replacement, whether the look that buys it comes in the
        notice's window (the node draining, its tasks queued again) or after the node has gone."""
        if n.market is Market.SPOT and n.node_id not in self.spot_lost:
            self.spot_lost.add(n.node_id)
            self.interruptions.append((n.instance_type, n.market, now))
            self.unreplaced += 1

    def _transitions(self, nodes: Sequence[NodeView], now: float, out: list) -> None:
        seen_ids = {n.node_id for n in nodes}
        for req_id in [r for r, req in self.requests.items() if req.node_ids and set(req.node_ids) <= seen_ids]:
            del self.requests[req_id]
        for n in nodes:
            before = self.seen.get(n.node_id)
            if before == n.state:
                continue
            self.seen[n.node_id] = n.state
            came_up = n.state is NodeState.READY or (n.state is NodeState.DRAINING and n.ready_at is not None)
            if came_up and before in (None, NodeState.PENDING):  # (a notice may come before a look sees it up)
                ours = before is not None or n.node_id in self.created  # else: there before the controller
                ready_at = min(n.ready_at, now) if n.ready_at is not None else now
                out.append(NodeReady(n.node_id, n.cluster, n.instance_type, str(n.market),
                                     max(ready_at - n.created_at, 0.0) if ours else 0.0, now - ready_at))
            elif (n.state in (NodeState.INTERRUPTED, NodeState.GONE) and n.node_id not in self.terminated
                  and not n.released and before is not None):
                ended_at = min(n.ended_at, now) if n.ended_at is not None else now
                out.append(NodeInterrupted(n.node_id, n.cluster, n.instance_type, str(n.market), str(n.state),
                                           now - ended_at))
                self._spot_lost(n, now)
            elif (n.state is NodeState.DRAINING and before is not None and n.node_id not in self.cordoned
                  and n.node_id not in self.terminated and not n.released):
                self._spot_lost(n, now)  # a terminate notice: its capacity is as good as gone already
            if n.state in (NodeState.INTERRUPTED, NodeState.GONE):
                self.cordoned.pop(n.node_id, None)
        horizon = now - self.policy.interruption_window_s
        self.interruptions = [i for i in self.interruptions if i[2] >= horizon]
        self.releases = [r for r in self.releases if r.at >= now - self.policy.hysteresis_s]

    def _release_cordoned(self, nodes: Sequence[NodeView], obs: ClusterObserved, now: float, out: list) -> None:
        queued = frozenset(t.task_id for t in obs.queued)
        for n in nodes:
            if n.node_id not in self.cordoned or n.node_id in self.terminated:
                continue
            if n.running:
                continue  # a task got there before the cordon took effect: wait for it to end
            del self.cordoned[n.node_id]
            fits = sum(1 for t in obs.queued if _holds(n, t))
            if fits:  # work came while it was cordoned: keep it for that work
                out.append(UncordonNode(n.node_id, f"{fits} queued task(s) fit it"))
                out.append(NodeUncordoned(n.node_id, fits, n.cluster, n.instance_type, str(n.market)))
                continue
            self._terminate(n, queued, now, out)

    def _terminate(self, n: NodeView, queued: frozenset[str], now: float, out: list) -> None:
        idle_s = now - n.idle_since if n.idle_since is not None else 0.0
        self.terminated.add(n.node_id)
        self.releases.append(_Release(n.instance_type, n.market, now, queued))
        reason = f"idle for {idle_s:.0f} s"
        out.append(TerminateNode(n.node_id, reason))
        out.append(NodeReleased(n.node_id, n.cluster, n.instance_type, str(n.market), reason))

    def _requested_nodes(self, now: float) -> list[NodeView]:
        """Creations asked for and not yet seen, as booting nodes (they count as capacity)."""
        out = []
        for req in sorted(self.requests.values(), key=lambda r: r.request):
            s = req.shape
            for i in range(req.count):
                out.append(NodeView(f"request-{req.request}-{i}", self.cluster_of(s), s.instance_type.name, s.market,
                                    NodeState.PENDING, s.usable, s.usd_per_hour, req.created_at))
        return out

    # ------------------------------------------------------------ growth

    def spot_short(self, now: float) -> bool:
        """The provider refused so many spot types lately that spot counts as unavailable."""
        refusals = sum(1 for (_t, market), until in self.refused.items() if market is Market.SPOT and until > now)
        return refusals >= self.policy.max_spot_refusals

    def _shapes_now(self, now: float) -> list[NodeShape]:
        recent: dict[str, int] = {}
        for itype, _market, _at in self.interruptions:
            recent[itype] = recent.get(itype, 0) + 1
        spot_short = self.spot_short(now)
        out = []
        for s in self.shapes:
            if self.refused.get((s.instance_type.name, s.market), 0.0) > now:
                continue
            if s.market is Market.SPOT and (not self.policy.spot or spot_short
                                            or recent.get(s.instance_type.name, 0) >= self.policy.max_interruptions):
                continue
            out.append(s)
        return out

    def _grow(self, nodes: Sequence[NodeView], capacity: Sequence[NodeView], left: list, now: float,
              out: list) -> None:
        menu = ShapeMenu(weighted_shapes(self._shapes_now(now), self.policy.band_weight))
        held = [g for g in left if menu.holding(task_of(g))]  # the rest no shape holds: the book says so
        spread, held = spread_packed(held, menu, self.spreads, self.policy.lead_s)
        planned = spread + (plan_groups(held, menu.shapes) if sum(len(g.task_ids) for g in held) > PLAN_TASKS_MAX
                            else plan_nodes(tasks_of(held), menu.shapes))
        self.spread_sized = frozenset(t.id for p in spread for t in p.tasks)
        if not any(n.reliable for n in capacity) and not any(p.shape.reliable for p in planned):
            floor = next((s for s in menu.shapes if s.reliable), None)
            if floor is not None:
                planned.insert(0, PackedNode(floor, ()))
        planned = [p for p in planned if not self._recently_released(p, now)]
        planned.sort(key=lambda p: (not p.shape.reliable, -len(p.tasks)))
        live = [n for n in nodes if n.state in (NodeState.PENDING, NodeState.READY, NodeState.DRAINING)
                and n.node_id not in self.terminated]
        live += self._requested_nodes(now)
        count = len(live)
        rate = sum(n.usd_per_hour for n in live)
        spent = self._spent(nodes, now)
        chosen: list[tuple[NodeShape, tuple[str, ...]]] = []
        blocked: dict[str, str] = {}
        for p in planned:
            real = self.by_name[(p.shape.instance_type.name, p.shape.market)]
            limit = self._limit(count, rate, real, spent)
            if limit is not None:
                blocked.setdefault(limit[0], limit[1])
                continue
            count += 1
            rate += real.usd_per_hour
            chosen.append((real, tuple(t.id for t in p.tasks)))
        waiting = sum(len(g.task_ids) for g in left)
        for limit in sorted(blocked):
            if limit not in self.binding:
                out.append(GrowthStopped(limit, blocked[limit], waiting))
        self.binding = set(blocked)
        preemptible = {i for g in left if not g.needs_reliable for i in g.task_ids}
        self._request(chosen, capacity, preemptible, now, out)

    def _recently_released(self, p: PackedNode, now: float) -> bool:
        ids = {t.id for t in p.tasks}
        return any(r.instance_type == p.shape.instance_type.name and r.market is p.shape.market
                   and now - r.at < self.policy.hysteresis_s and ids <= r.queued for r in self.releases)

    def _limit(self, count: int, rate: float, shape: NodeShape, spent: float) -> tuple[str, str] | None:
        pol = self.policy
        if pol.max_nodes is not None and count + 1 > pol.max_nodes:
            return "max_nodes", f"{pol.max_nodes} nodes"
        if pol.budget_usd_per_hour is not None and rate + shape.usd_per_hour > pol.budget_usd_per_hour + 1e-9:
            return ("budget_per_hour", f"{rate:.4f} $/h live, a {shape.name} {shape.market} adds "
                                       f"{shape.usd_per_hour:.4f} $/h over {pol.budget_usd_per_hour:.4f} $/h")
        if pol.budget_usd is not None:
            projected = spent + (rate + shape.usd_per_hour) * pol.budget_horizon_s / 3600.0
            if projected > pol.budget_usd + 1e-9:
                return ("budget_usd", f"projected {projected:.4f} $ (spent {spent:.4f} $ + "
                                      f"{rate + shape.usd_per_hour:.4f} $/h for {pol.budget_horizon_s:.0f} s) "
                                      f"over {pol.budget_usd:.4f} $")
        return None

    @staticmethod
    def _spent(nodes: Sequence[NodeView], now: float) -> float:
        total = 0.0
        for n in nodes:
            end = n.ended_at if n.ended_at is not None else now
            total += n.usd_per_hour * max(end - n.created_at, 0.0) / 3600.0
        return total

    def _request(self, chosen: list[tuple[NodeShape, tuple[str, ...]]], capacity: Sequence[NodeView],
                 preemptible: set[str], now: float, out: list) -> None:
        by_shape: dict[tuple[str, Market], list[tuple[NodeShape, tuple[str, ...]]]] = {}
        for shape, ids in chosen:
            by_shape.setdefault((shape.instance_type.name, shape.market), []).append((shape, ids))
        has_reliable = any(n.reliable for n in capacity)
        spot_short = self.spot_short(now)
        for (_name, market), items in by_shape.items():
            shape = items[0][0]
            ids = tuple(sorted(i for _, task_ids in items for i in task_ids))
            if not ids and has_reliable:
                continue
            if not ids:
                reason, detail = "reliable_floor", "no on-demand node is ready or booting"
            elif market is Market.SPOT and self.unreplaced:
                reason, detail = "replace", f"{self.unreplaced} spot node(s) lost recently; {len(ids)} task(s) wait"
                self.unreplaced = max(self.unreplaced - len(items), 0)
            elif market is Market.ON_DEMAND and spot_short and preemptible.intersection(ids):
                reason, detail = "spot_refused", (f"spot refused for {self.policy.max_spot_refusals}+ types; "
                                                  f"{len(ids)} queued task(s) go on-demand")
            elif self.expected_ids.issuperset(ids):
                reason, detail = "expected_work", (f"{len(ids)} task(s) due within {self.policy.lead_s:.0f} s "
                                                   "fit no node")
            else:
                reason, detail = "queued_work", f"{len(ids)} queued task(s) fit no node"
            if ids and self.spread_sized.issuperset(ids):
                detail += f"; {max(len(t) for _, t in items)} a node, by their runtimes' spread"
            req = _Request(self.next_request, shape, len(items), now)
            self.next_request += 1
            self.requests[req.request] = req
            cluster = self.cluster_of(shape)
            out.append(CreateNodes(req.request, cluster, shape.name, market, len(items), f"{reason}: {detail}"))
            out.append(NodesRequested(req.request, cluster, shape.name, str(market), len(items), shape.usd_per_hour,
                                      reason, detail, ids[:MAX_TASK_IDS]))

    # ------------------------------------------------------------ scale in

    def _shrink(self, capacity: Sequence[NodeView], given: dict[str, int], needed: frozenset[str],
                queued: frozenset[str], now: float, out: list) -> None:
        ready = [n for n in capacity if n.state is NodeState.READY]
        reliable_left = sum(1 for n in ready if n.reliable) + sum(
            1 for n in capacity if n.state is NodeState.PENDING and n.reliable)
        pol = self.policy

        def unneeded(n: NodeView) -> bool:  # looking ahead, a node no work needs within a boot goes sooner
            return pol.lead_s > 0 and n.node_id not in needed

        def idle_for(n: NodeView) -> float:
            return min(pol.idle_s, pol.unneeded_idle_s) if unneeded(n) else pol.idle_s

        idle = [n for n in ready if n.running == 0 and not given.get(n.node_id) and n.idle_since is not None
                and now - n.idle_since >= idle_for(n)]
        for n in sorted(idle, key=lambda n: (-n.usd_per_hour, n.node_id)):
            if n.reliable:
                if reliable_left <= 1:
                    continue  # never the last reliable node
                reliable_left -= 1
            out.append(CordonNode(n.node_id, f"idle for {now - n.idle_since:.0f} s"))
            out.append(NodeCordoned(n.node_id, now - n.idle_since, n.cluster, n.instance_type, str(n.market)))
            if unneeded(n):  # release when done: no work within a boot, nothing to uncordon it for
                self._terminate(n, queued, now, out)
            else:
                self.cordoned[n.node_id] = now



def reliable_floor(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape]) -> NodeShape | None:
    """The cheapest on-demand shape a run cannot do without: one that holds its largest task that needs
    or may come to need a reliable node (preempt=false or N); the cheapest on-demand one when none does."""
    reliable = [t for t in tasks if t.preempt.max_preemptions is not None]
    od = sorted((s for s in shapes if s.reliable), key=lambda s: (s.usd_per_hour, s.name))
    for shape in od:
        if all(shape.usable.holds(t.demand) and type_allowed(t.instance_type, shape.name) for t in reliable):
            return shape
    return od[0] if od and not reliable else None


def _holds(node: NodeView, task: WaitingTask) -> bool:
    """The idle node could run the task: room, market and pinned type."""
    return (node.capacity.holds(task.demand) and (node.reliable or not task.needs_reliable)
            and type_allowed(task.instance_type, node.instance_type))
