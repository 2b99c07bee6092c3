"""Provisioner: the elastic controller's shell in the batch system (decides nothing itself).

Every ``interval_s``, and sooner when the Toil leader issues work (once it has been quiet for
``BATCH_IDLE_S``: a burst of jobs is looked at together, as Karpenter batches pending pods) or a task
ends (``BATCH_IDLE_S`` after the first end since the last look, however many more end meanwhile: a node
whose last task ended is released within about that, not a whole interval later), it
lists the provider's nodes (off the Framework's lock), moves their times onto the book's clock (the
controller's) and, under the lock, hands them (NodesListed) with the book to the ElasticMachine
(plastic.core.elastic.machine), whose observation (plastic.core.elastic.observation) joins them with
what the book knows of their agents and its queue, and whose controller (plastic.core.elastic.controller)
decides.  It carries out what the controller decides:

    CordonNode    -> the Framework gives the node's agent no new work (AgentsIgnored), at once, under
                     the lock, so no launch can reach it after the controller saw it idle
    UncordonNode  -> the agent takes work again (AgentsIgnored, not ignored)
    TerminateNode -> provider.terminate
    CreateNodes   -> provider.create; the answer goes back to the controller (NodesCreated, and
                     CreateRefused for each capacity error)

Every input of the machine goes to the Framework's recorders with what it decided, its configuration
first (ElasticStarted, when the provisioner starts): the decisions log (marked ``"m": "elastic"``,
replayed by plastic.core.elastic.replay) and the run's Redis stream (the records: node_requested,
node_ready, node_released, node_interrupted, ...).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from plastic.core.book import events as evt
from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.machine import ElasticMachine
from plastic.core.elastic.model import (
    CordonNode,
    CreateNodes,
    CreateRefused,
    NodesCreated,
    TerminateNode,
    UncordonNode,
)
from plastic.core.elastic.observation import NodeFact, NodesListed, PlanAhead, agents_of
from plastic.core.model import Market, NodeShape, TaskSpec
from plastic.framework.adapter import Framework
from plastic.providers import NodeRequest, Provider, ProviderError, ProviderNode

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 5.0
BATCH_IDLE_S = 1.0  # after a job is issued, the look waits until no other came for this long; after a task
# ends, the look comes this long after (other tasks ending meanwhile do not put it off)


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
        self._nudged = threading.Event()  # set when Toil issues a job or a task ends, and by stop()
        self._issued = threading.Event()  # Toil issued a job since the loop last heard
        self._end_look_at: float | None = None  # monotonic: the look a task's end asks for (first end + quiet)
        self._thread: threading.Thread | None = None
        self._provider_down = False
        # the controller and the plan-ahead state of its observation: the plan's tasks are expected until
        # Toil issues them (plastic.core.elastic.forecast.plan_ahead)
        self.machine = ElasticMachine(controller, PlanAhead(tuple(plan_tasks)))
        self._begun = False

    def start(self) -> Provisioner:
        with self.framework.lock:
            self._begin(self.framework.clock())
        self.framework.on_issued.append(self._on_issued)
        self.framework.on_attempt_ended.append(self._on_attempt_ended)
        self._thread = threading.Thread(target=self._loop, name="plastic-provisioner", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._nudged.set()
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

    def _on_issued(self) -> None:
        self._issued.set()
        self._nudged.set()

    def _on_attempt_ended(self) -> None:
        if self._end_look_at is None:
            self._end_look_at = time.monotonic() + BATCH_IDLE_S
        self._nudged.set()

    def _wait_for_look(self) -> None:
        """Until the next look: ``interval_s`` from the last one, or sooner: ``BATCH_IDLE_S`` after the
        first task's end since the last look, or once Toil has issued work and then nothing more for
        ``BATCH_IDLE_S``.  What the callbacks set is read at every wake, so a nudge missed between a wake
        and the next wait is not lost."""
        deadline = time.monotonic() + self.interval_s
        quiet_until: float | None = None
        while not self._stop.is_set():
            if self._issued.is_set():
                self._issued.clear()
                quiet_until = time.monotonic() + BATCH_IDLE_S
            due = min(t for t in (deadline, self._end_look_at, quiet_until) if t is not None)
            left = due - time.monotonic()
            if left <= 0:
                break
            self._nudged.wait(left)
            self._nudged.clear()
        self._end_look_at = None  # this look sees every end so far

    def _begin(self, started_at: float | None) -> None:
        """Record the machine's configuration, once, before its first step (under the Framework's lock)."""
        if not self._begun:
            self._begun = True
            fw = self.framework
            fw.record_elastic(self.machine.started(started_at), fw.clock(), [])

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
            self._begin(None)
            now = fw.clock()
            listed = self.listed(nodes)
            outputs = self.machine.handle(listed, fw.book, now)
            fw.record_elastic(listed, now, outputs)
            for kind, ignored in ((CordonNode, True), (UncordonNode, False)):
                agents = agents_of(fw.book, listed, [o.node_id for o in outputs if isinstance(o, kind)])
                if agents:
                    fw.apply(evt.AgentsIgnored(agents, ignored))
        for out in outputs:
            if isinstance(out, TerminateNode):
                self._terminate(out)
            elif isinstance(out, CreateNodes):
                self._create(out)
        return outputs

    def listed(self, nodes: Sequence[ProviderNode]) -> NodesListed:
        """The provider's nodes as the machine takes them: their times on the book's clock."""
        to_book = self.framework.book_time
        return NodesListed(tuple(NodeFact(n.node_id, n.cluster, n.instance_type, n.market, n.state,
                                          to_book(n.created_at), to_book(n.state_since), n.agent_id, n.instance_id)
                                 for n in nodes))

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
            answers += [CreateRefused(cmd.request, r.instance_type, Market(r.market), r.reason) for r in result.refused]
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
                fw.record_elastic(answer, now, self.machine.handle(answer, fw.book, now))
