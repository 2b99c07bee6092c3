"""Live progress of a run, folded from its decision events (pure; no clock, no I/O).

`Progress.apply(event)` takes the events in stream order and reads their records (the JobBook's:
JobQueued, TaskPlaced, JobEnded, JobRequeued, the notices, AgentGone, ...; the elastic controller's:
NodesRequested, NodesStarted, NodeReady, NodeReleased, NodeInterrupted, CreationRefused) and keeps, per cluster,
how many tasks run there and how many finished there, how many nodes it has and how many are being
created, the queue (issued, not placed), and the last few spot and node events as short sentences
for a display.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from plastic.core.account.report import RunEvent
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
    RebalanceNoticed,
    Record,
    TaskPlaced,
    TerminateNoticed,
)
from plastic.core.elastic.model import (
    CreationRefused,
    GrowthStopped,
    NodeInterrupted,
    NodeReady,
    NodeReleased,
    NodesRequested,
    NodesStarted,
)


@dataclass(slots=True)
class ClusterProgress:
    running: int = 0
    finished: int = 0
    failed: int = 0
    nodes: int = 0  # alive now
    booting: int = 0  # asked for, not ready yet


class Progress:
    def __init__(self, agent_clusters: Mapping[str, str] | None = None, *, recent: int = 5):
        self.agent_clusters: dict[str, str] = dict(agent_clusters or {})
        self.clusters: dict[str, ClusterProgress] = {c: ClusterProgress() for c in
                                                     dict.fromkeys(self.agent_clusters.values())}
        self.where: dict[str, str] = {}  # job -> cluster it runs on now
        self.queued: set[str] = set()
        self.finished = 0
        self.failed = 0
        self.requeues = 0
        self.notices = 0
        self.recent: deque[str] = deque(maxlen=recent)
        self.alive: dict[str, str] = {}  # node (agent) id -> its cluster
        self.requests: dict[str, tuple[str, int]] = {}  # request -> (cluster, nodes not ready yet)
        self.booting: dict[str, str] = {}  # node id created, not ready -> its request
        for agent_id, cluster in self.agent_clusters.items():
            self._node_up(agent_id, cluster)

    def _node_up(self, node_id: str, cluster: str) -> None:
        if node_id not in self.alive:
            self.alive[node_id] = cluster
            self._bucket(cluster).nodes += 1
        request = self.booting.pop(node_id, None)
        if request is not None and request in self.requests:
            name, left = self.requests[request]
            self._bucket(name).booting -= 1
            self.requests[request] = (name, left - 1)

    def _node_down(self, node_id: str) -> None:
        cluster = self.alive.pop(node_id, None)
        if cluster is not None:
            self._bucket(cluster).nodes -= 1

    def _cluster(self, agent_id: object) -> str:
        return self.agent_clusters.get(str(agent_id), "?")

    def _bucket(self, name: str) -> ClusterProgress:
        return self.clusters.setdefault(name, ClusterProgress())

    def _leave(self, job: str) -> str | None:
        cluster = self.where.pop(job, None)
        if cluster is not None:
            self._bucket(cluster).running -= 1
        return cluster

    def apply(self, ev: RunEvent) -> None:
        rec = ev.record
        match rec:
            case AgentUpdated(agent_id=agent_id, cluster=cluster):
                if agent_id is not None and cluster:
                    self.agent_clusters.setdefault(str(agent_id), str(cluster))
                    self._node_up(str(agent_id), str(cluster))
            case JobQueued(job_id=job_id) if job_id is not None:
                self.queued.add(str(job_id))
            case TaskPlaced(job_id=job_id, agent_id=agent_id) if job_id is not None:
                job = str(job_id)
                self.queued.discard(job)
                self._leave(job)
                cluster = self._cluster(agent_id)
                self.where[job] = cluster
                self._bucket(cluster).running += 1
            case JobEnded(job_id=job_id, agent_id=agent_id, outcome=outcome) if job_id is not None:
                self._ended(str(job_id), agent_id, outcome)
            case JobRequeued(job_id=job_id, counted_as=counted_as, cause=cause) if job_id is not None:
                cluster = self._leave(str(job_id))
                self.queued.add(str(job_id))
                self.requeues += 1
                self.recent.append(f"task {job_id} requeued from {cluster or '?'} "
                                   f"({counted_as if counted_as is not None else cause})")
            case TerminateNoticed(agent_id=agent_id) | RebalanceNoticed(agent_id=agent_id):
                self.notices += 1
                what = "termination notice" if isinstance(rec, TerminateNoticed) else "rebalance recommendation"
                self.recent.append(f"{what} for {self._cluster(agent_id)} agent {agent_id}")
            case KilledForNotice(job_id=job_id, agent_id=agent_id) if job_id is not None:
                self.recent.append(f"task {job_id} killed on a doomed {self._cluster(agent_id)} agent")
            case LeftToFinish(job_id=job_id, agent_id=agent_id) if job_id is not None:
                self.recent.append(f"task {job_id} left to finish before the {self._cluster(agent_id)} agent goes")
            case JobEscalated(job_id=job_id, preemptions=preemptions) if job_id is not None:
                self.recent.append(f"task {job_id} moves to reliable nodes after {preemptions} preemptions")
            case AgentGone(agent_id=agent_id):
                if str(agent_id) in self.alive:
                    self.recent.append(f"{self._cluster(agent_id)} agent {agent_id} lost")
                self._node_down(str(agent_id))
            case JobUnplaceable(job_id=job_id, reason=reason) if job_id is not None:
                self.recent.append(f"task {job_id} fits no agent: {reason}")
            case _:
                self._node_event(rec)

    def _ended(self, job: str, agent_id: str | None, outcome: str | None) -> None:
        self.queued.discard(job)
        cluster = self._leave(job) or self._cluster(agent_id)
        if outcome == "finished":
            self.finished += 1
            self._bucket(cluster).finished += 1
        elif outcome in ("failed", "lost_for_good"):
            self.failed += 1
            self._bucket(cluster).failed += 1

    def _node_event(self, rec: Record) -> None:
        match rec:
            case NodesRequested(request=request, cluster=cluster, count=count):
                count = int(count or 0)
                self.requests[str(request)] = (str(cluster or "?"), count)
                self._bucket(str(cluster or "?")).booting += count
                self.recent.append(f"{count} {rec.instance_type} {rec.market} node(s) asked for {cluster or '?'}: "
                                   f"{rec.reason}")
            case NodesStarted(request=request, node_ids=node_ids) if str(request) in self.requests:
                name, count = self.requests[str(request)]
                ids = node_ids or ()
                for nid in ids:
                    self.booting[nid] = str(request)
                self._bucket(name).booting -= count - len(ids)
                self.requests[str(request)] = (name, len(ids))
            case CreationRefused(request=request) if str(request) in self.requests:
                name, count = self.requests[str(request)]
                if not any(r == str(request) for r in self.booting.values()):
                    self._bucket(name).booting -= count
                    self.requests[str(request)] = (name, 0)
                self.recent.append(f"{rec.instance_type} {rec.market} refused: {rec.reason}")
            case NodeReady(node_id=node_id, cluster=cluster):
                self.agent_clusters.setdefault(str(node_id), str(cluster or "?"))
                self._node_up(str(node_id), str(cluster or "?"))
            case NodeReleased(node_id=node_id, cluster=cluster, reason=reason):
                self._node_down(str(node_id))
                self.recent.append(f"{cluster or '?'} node {node_id} released" + (f" ({reason})" if reason else ""))
            case NodeInterrupted(node_id=node_id, cluster=cluster):
                self._node_down(str(node_id))
                self.recent.append(f"{cluster or '?'} node {node_id} lost")
            case GrowthStopped(limit=limit, detail=detail):
                self.recent.append(f"growth stopped: {limit} ({detail})")

    @property
    def running(self) -> int:
        return len(self.where)

