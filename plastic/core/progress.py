"""Live progress of a run, folded from its decision events (pure; no clock, no I/O).

`Progress.apply(event)` takes the events in stream order (the JobBook's records: issued,
placed, running, ended, requeue, notice, agent_lost, ...) and keeps, per cluster, how many
tasks run there and how many finished there, the queue (issued, not placed), and the last few
spot events as short sentences for a display.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from plastic.core.report import RunEvent

SPOT_KINDS = frozenset({"notice", "drain_kill", "let_finish", "requeue", "escalation", "agent_lost", "unplaceable"})


@dataclass(slots=True)
class ClusterProgress:
    running: int = 0
    finished: int = 0
    failed: int = 0


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
                self._bucket(str(f["cluster"]))
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
            self.recent.append(f"{self._cluster(f.get('agent_id'))} agent {f.get('agent_id')} lost")
        elif kind == "unplaceable" and job is not None:
            self.recent.append(f"task {job} fits no agent: {f.get('reason')}")

    @property
    def running(self) -> int:
        return len(self.where)
