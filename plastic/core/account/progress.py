"""Live progress of a run, folded from its decision events (pure; no clock, no I/O).

`Progress.apply(event)` takes the events in stream order (the JobBook's records: issued,
placed, running, ended, requeue, notice, agent_lost, ...; the elastic controller's: node_requested,
node_created, node_ready, node_released, node_interrupted, create_refused) and keeps, per cluster,
how many tasks run there and how many finished there, how many nodes it has and how many are being
created, the queue (issued, not placed), and the last few spot and node events as short sentences
for a display.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from plastic.core.account.report import RunEvent, list_field

SPOT_KINDS = frozenset({"notice", "drain_kill", "let_finish", "requeue", "escalation", "agent_lost", "unplaceable"})


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
        f = ev.fields
        job = None if f.get("job_id") is None else str(f["job_id"])
        kind = ev.kind
        if kind == "agent":
            if f.get("agent_id") is not None and f.get("cluster"):
                self.agent_clusters.setdefault(str(f["agent_id"]), str(f["cluster"]))
                self._node_up(str(f["agent_id"]), str(f["cluster"]))
        elif kind == "issued" and job is not None:
            self.queued.add(job)
        elif kind == "placed" and job is not None:
            self.queued.discard(job)
            self._leave(job)
            cluster = self._cluster(f.get("agent_id"))
            self.where[job] = cluster
            self._bucket(cluster).running += 1
        elif kind == "ended" and job is not None:
            self.queued.discard(job)
            cluster = self._leave(job) or self._cluster(f.get("agent_id"))
            if f.get("outcome") == "finished":
                self.finished += 1
                self._bucket(cluster).finished += 1
            elif f.get("outcome") in ("failed", "lost_for_good"):
                self.failed += 1
                self._bucket(cluster).failed += 1
        elif kind == "requeue" and job is not None:
            cluster = self._leave(job)
            self.queued.add(job)
            self.requeues += 1
            self.recent.append(f"task {job} requeued from {cluster or '?'} ({f.get('counted_as', f.get('cause'))})")
        elif kind == "notice":
            self.notices += 1
            what = "termination notice" if f.get("notice_kind", "terminate") == "terminate" else "rebalance recommendation"
            self.recent.append(f"{what} for {self._cluster(f.get('agent_id'))} agent {f.get('agent_id')}")
        elif kind == "drain_kill" and job is not None:
            self.recent.append(f"task {job} killed on a doomed {self._cluster(f.get('agent_id'))} agent")
        elif kind == "let_finish" and job is not None:
            self.recent.append(f"task {job} left to finish before the {self._cluster(f.get('agent_id'))} agent goes")
        elif kind == "escalation" and job is not None:
            self.recent.append(f"task {job} moves to reliable nodes after {f.get('preemptions')} preemptions")
        elif kind == "agent_lost":
            if str(f.get("agent_id")) in self.alive:
                self.recent.append(f"{self._cluster(f.get('agent_id'))} agent {f.get('agent_id')} lost")
            self._node_down(str(f.get("agent_id")))
        elif kind == "unplaceable" and job is not None:
            self.recent.append(f"task {job} fits no agent: {f.get('reason')}")
        else:
            self._node_event(kind, f)

    def _node_event(self, kind: str, f: Mapping[str, object]) -> None:
        request, node_id, cluster = str(f.get("request")), str(f.get("node_id")), str(f.get("cluster") or "?")
        if kind == "node_requested":
            count = int(str(f.get("count") or 0))
            self.requests[request] = (cluster, count)
            self._bucket(cluster).booting += count
            self.recent.append(f"{count} {f.get('instance_type')} {f.get('market')} node(s) asked for {cluster}: "
                               f"{f.get('reason')}")
        elif kind == "node_created" and request in self.requests:
            name, count = self.requests[request]
            ids = list_field(f.get("node_ids"))
            for nid in ids:
                self.booting[nid] = request
            self._bucket(name).booting -= count - len(ids)
            self.requests[request] = (name, len(ids))
        elif kind == "create_refused" and request in self.requests:
            name, count = self.requests[request]
            if not any(r == request for r in self.booting.values()):
                self._bucket(name).booting -= count
                self.requests[request] = (name, 0)
            self.recent.append(f"{f.get('instance_type')} {f.get('market')} refused: {f.get('reason')}")
        elif kind == "node_ready":
            self.agent_clusters.setdefault(node_id, cluster)
            self._node_up(node_id, cluster)
        elif kind in ("node_released", "node_interrupted"):
            self._node_down(node_id)
            what = "released" if kind == "node_released" else "lost"
            self.recent.append(f"{cluster} node {node_id} {what}" + (f" ({f['reason']})" if f.get("reason") else ""))
        elif kind == "growth_stopped":
            self.recent.append(f"growth stopped: {f.get('limit')} ({f.get('detail')})")

    @property
    def running(self) -> int:
        return len(self.where)

