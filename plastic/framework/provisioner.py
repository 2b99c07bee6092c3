"""Provisioner: the elastic controller's shell in the batch system (decides nothing itself).

Every ``interval_s``, and sooner when the Toil leader issues work (once it has been quiet for
``BATCH_IDLE_S``: a burst of jobs is looked at together, as Karpenter batches pending pods), it
lists the provider's nodes (off the Framework's lock), turns them and the JobBook's queue into one
observation (under the lock: the book is read, never changed), hands it to
the ElasticController (plastic.core.elastic.controller) and carries out what it decides:

    CordonNode    -> the Framework gives the node's agent no new work (AgentsIgnored), at once, under
                     the lock, so no launch can reach it after the controller saw it idle
    UncordonNode  -> the agent takes work again (AgentsIgnored, not ignored)
    TerminateNode -> provider.terminate
    CreateNodes   -> provider.create; the answer goes back to the controller (NodesCreated, and
                     CreateRefused for each capacity error)

The controller's records (node_requested, node_ready, node_released, node_interrupted, ...) go to the
Framework's recorders: the decisions log (marked ``"m": "elastic"``) and the run's Redis stream.
A node's view joins what the provider says (state, type, market, times) with what the book knows of
its agent (tasks on it, when it was last busy, a terminate notice, lost); times are moved onto the
book's clock, which is the controller's.  Looking a boot ahead, the observation also carries the
plan's tasks that the Toil leader has not issued yet, dated from the progress of the jobs it has
issued (``plan_tasks``; plastic.core.elastic.forecast.plan_ahead), with the book's runtime estimates.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from plastic.core.book import events as evt
from plastic.core.book.jobs import ENDED, LIVE, Job
from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.forecast import Stage, TaskProgress, issued_by_step, plan_ahead
from plastic.core.elastic.model import (
    ClusterObserved,
    CordonNode,
    CreateNodes,
    CreateRefused,
    NodesCreated,
    NodeState,
    NodeView,
    TerminateNode,
    UncordonNode,
    WaitingTask,
)
from plastic.core.model import Market, NodeShape, Resources, TaskSpec
from plastic.core.planning.plan import step_of
from plastic.framework.adapter import Framework
from plastic.providers import NodeRequest, Provider, ProviderError, ProviderNode

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 5.0
BATCH_IDLE_S = 1.0  # after a job is issued, the look waits until no other came for this long


class Provisioner:
    def __init__(self, framework: Framework, controller: ElasticController, provider: Provider,
                 shapes: Sequence[NodeShape], *, interval_s: float = DEFAULT_INTERVAL_S,
                 tags: Mapping[str, str] | None = None, wall_clock: Callable[[], float] = time.time,
                 plan_tasks: Sequence[TaskSpec] = ()):
        self.framework = framework
        self.controller = controller
        self.provider = provider
        self.shapes = {(s.instance_type.name, s.market): s for s in shapes}
        self.interval_s = interval_s
        self.tags = dict(tags or {})
        self.wall_clock = wall_clock
        self._stop = threading.Event()
        self._issued = threading.Event()  # set by the Framework when Toil issues a job, and by stop()
        self._thread: threading.Thread | None = None
        self._provider_down = False
        self.plan_tasks = tuple(plan_tasks)  # expected until Toil issues them (plan_ahead)
        self._started_at: float | None = None

    def start(self) -> Provisioner:
        with self.framework.lock:
            self._started_at = self.framework.clock()
        self.framework.on_issued.append(self._issued.set)
        self._thread = threading.Thread(target=self._loop, name="plastic-provisioner", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._issued.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        while True:
            self._wait_for_look()
            if self._stop.is_set():
                return
            try:
                self.tick()
            except Exception:  # the provisioner must survive anything; the run goes on with what it has
                log.exception("elastic provisioning step failed")

    def _wait_for_look(self) -> None:
        """Until the next look: ``interval_s`` from the last one, or sooner once Toil has issued work and
        then nothing more for ``BATCH_IDLE_S`` (never later than ``interval_s``)."""
        deadline = time.monotonic() + self.interval_s
        if not self._issued.wait(self.interval_s):
            return
        while not self._stop.is_set():
            self._issued.clear()
            left = deadline - time.monotonic()
            if left <= 0 or not self._issued.wait(min(BATCH_IDLE_S, left)):
                return

    # ------------------------------------------------------------ one step

    def tick(self) -> list[Any]:
        try:
            nodes = self.provider.list_nodes()
        except ProviderError as error:
            if not self._provider_down:
                log.warning("provider %s unreachable (%s); the cluster stays as it is until it answers",
                            self.provider.name, error)
            self._provider_down = True
            return []
        if self._provider_down:
            log.info("provider %s reachable again", self.provider.name)
            self._provider_down = False
        fw = self.framework
        with fw.lock:
            now = fw.clock()
            observation = self.observe(nodes, now)
            outputs = self.controller.handle(observation, now)
            fw.record_elastic(observation, now, outputs)
            for kind, ignored in ((CordonNode, True), (UncordonNode, False)):
                agents = [self._agent_of(o.node_id, nodes) for o in outputs if isinstance(o, kind)]
                if any(agents):
                    fw.apply(evt.AgentsIgnored(tuple(a for a in agents if a), ignored))
        for out in outputs:
            if isinstance(out, TerminateNode):
                self._terminate(out)
            elif isinstance(out, CreateNodes):
                self._create(out)
        return outputs

    def _terminate(self, cmd: TerminateNode) -> None:
        try:
            self.provider.terminate([cmd.node_id])
            log.info("node %s released: %s", cmd.node_id, cmd.reason)
        except ProviderError as error:
            log.warning("could not terminate node %s: %s (tried again next time it is idle)", cmd.node_id, error)

    def _create(self, cmd: CreateNodes) -> None:
        shape = self.shapes[(cmd.instance_type, cmd.market)]
        request = NodeRequest(cmd.cluster, cmd.instance_type, cmd.market, cmd.count, shape.usable.vcpus,
                              shape.usable.ram_mib, {**self.tags, "plastic:cluster": cmd.cluster,
                                                     "plastic:market": str(cmd.market)})
        answers: list[Any] = []
        try:
            result = self.provider.create(request)
            answers.append(NodesCreated(cmd.request, result.node_ids))
            answers += [CreateRefused(cmd.request, r.instance_type, r.market, r.reason) for r in result.refused]
            log.info("asked %s for %d %s %s node(s) (%s): created %s%s", self.provider.name, cmd.count,
                     cmd.instance_type, cmd.market, cmd.reason, ", ".join(result.node_ids) or "none",
                     "".join(f"; refused: {r.reason}" for r in result.refused))
        except ProviderError as error:
            log.warning("could not create %d %s %s node(s): %s", cmd.count, cmd.instance_type, cmd.market, error)
            answers.append(CreateRefused(cmd.request, cmd.instance_type, cmd.market, f"provider error: {error}"))
        fw = self.framework
        with fw.lock:
            now = fw.clock()
            for answer in answers:
                fw.record_elastic(answer, now, self.controller.handle(answer, now))

    # ------------------------------------------------------------ the observation

    def _agent_of(self, node_id: str, nodes: Sequence[ProviderNode]) -> str | None:
        node = next((n for n in nodes if n.node_id == node_id), None)
        if node is None:
            return None
        return self._agent_on(node)

    def _agent_on(self, node: ProviderNode) -> str | None:
        """The Mesos agent of a provider's node: the one it names, else the book's agent of its instance."""
        if node.agent_id:
            return node.agent_id
        return self.framework.book.agent_of_instance(node.instance_id) if node.instance_id else None

    def observe(self, nodes: Sequence[ProviderNode], now: float) -> ClusterObserved:
        """The book's queue and the nodes, on the book's clock (call under the Framework's lock)."""
        book = self.framework.book
        ahead = self.controller.policy.lead_s > 0  # runtime estimates let the controller look a boot ahead
        queued = tuple(WaitingTask(j.job_id, j.demand, j.needs_reliable, j.instance_type, max(now - j.queued_at, 0.0),
                                   runtime_s=book.estimate(j.tool) if ahead else None)
                       for j in book.queued())
        on_agent: dict[str, list[Any]] = {}
        for job in book.live():
            on_agent.setdefault(job.agent_id or "", []).append(job)
        views = []
        for node in nodes:
            agent_id = self._agent_on(node)
            views.append(self._view(node, agent_id, on_agent.get(agent_id or "", []), now, ahead=ahead))
        return ClusterObserved(queued, tuple(views), self._plan_ahead(now) if ahead else ())

    def _plan_ahead(self, now: float) -> tuple[WaitingTask, ...]:
        """The plan's tasks not issued yet, as expected work (plastic.core.elastic.forecast.plan_ahead): the
        book's jobs of each step in issue order (one per Toil job: a re-issue takes its place) stand
        for the plan's tasks of that step, and a step's tool's estimate, once the book has one,
        replaces the plan's runtimes."""
        if self._started_at is None:
            self._started_at = now
        if not self.plan_tasks:
            return ()
        book = self.framework.book
        issued = [job for job in sorted(book.jobs.values(), key=lambda j: j.issued_at) if job.step is not None]
        by_step = issued_by_step((job.step, job.job_store_id, _progress(job)) for job in issued)
        estimates: dict[str, float] = {}
        for job in issued:
            if job.step not in estimates and (estimate := book.estimate(job.tool)) is not None:
                estimates[job.step] = estimate
        tasks = [t if (e := estimates.get(step_of(t.id))) is None or e == t.runtime_s else replace(t, runtime_s=e)
                 for t in self.plan_tasks]
        policy = self.controller.policy
        outlook = plan_ahead(tasks, by_step, now, self._started_at, policy.idle_s, lead_s=policy.lead_s)
        if outlook.settled:  # for good: issued jobs and the time since their parents ended only grow
            self.plan_tasks = ()
        return outlook.expected

    def _view(self, node: ProviderNode, agent_id: str | None, jobs: list[Any], now: float, *,
              ahead: bool = False) -> NodeView:
        book = self.framework.book
        shape = self.shapes.get((node.instance_type, node.market))
        state = node.state
        if agent_id is not None and state in (NodeState.READY, NodeState.PENDING):
            if agent_id in book.gone:
                state = NodeState.GONE
            elif agent_id in book.notices.draining:
                state = NodeState.DRAINING
            elif state is NodeState.PENDING and agent_id in book.agents:
                state = NodeState.READY  # the framework already met its agent
        agent = book.agents.get(agent_id or "")
        capacity = agent.capacity if agent is not None else (shape.usable if shape else Resources(0, 0))
        used = Resources(sum(j.demand.vcpus for j in jobs), sum(j.demand.ram_mib for j in jobs))
        to_book = self.framework.book_time
        idle_since = None
        if state is NodeState.READY and not jobs:
            health = book.health
            idle_since = to_book(node.state_since)
            if agent_id in health.agent_since:
                idle_since = max(health.agent_since[agent_id], health.last_busy.get(agent_id, 0.0))
        ready_at = None  # when its agent met the framework (else when the provider says it became ready)
        if state in (NodeState.READY, NodeState.DRAINING):
            ready_at = book.health.agent_since.get(agent_id or "",
                                                   to_book(node.state_since) if state is NodeState.READY else None)
        ended = to_book(node.state_since) if state in (NodeState.GONE, NodeState.INTERRUPTED) else None
        if ended is not None and node.state not in (NodeState.GONE, NodeState.INTERRUPTED):
            ended = now  # lost as far as the framework knows; the provider has not said so yet
        price = shape.usd_per_hour if shape is not None else 0.0
        ends: list[tuple[float, Resources]] = []
        for job in jobs if ahead else ():  # when the running tasks should end, by their tools' estimates
            attempt, estimate = job.current, book.estimate(job.tool)
            if attempt is not None and estimate is not None:
                ends.append((attempt.began_at + estimate, job.demand))
        return NodeView(node.node_id, node.cluster, node.instance_type, Market(node.market), state, capacity, price,
                        to_book(node.created_at), used, len(jobs), idle_since, ended,
                        task_ends=tuple(sorted(ends, key=lambda e: e[0])), ready_at=ready_at)


def _progress(job: Job) -> TaskProgress:
    """A book job as the forecast's progress of the plan task it stands for (book clock)."""
    attempt = job.attempts[-1] if job.attempts else None
    if job.state in ENDED:
        return TaskProgress(Stage.DONE, ended_at=attempt.ended_at if attempt else None)
    if job.state in LIVE and attempt is not None:
        return TaskProgress(Stage.RUNNING, started_at=attempt.began_at)
    return TaskProgress(Stage.QUEUED)

