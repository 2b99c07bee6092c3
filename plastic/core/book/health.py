"""Provisioning health of the JobBook (plastic.core.book.jobbook): a small state object checked on every
Tick, pure.

Two signals for whoever sizes the cluster (the elastic controller, Toil's scaler, a human):

- AgentIdled (agent_id, idle_s, cluster, instance_type): a burst (preemptible) agent, not gone and
  not under a terminate notice, has had no task for ``idle_agent_s`` seconds: a candidate for
  release.  Once per idle period (a new period starts when a task leaves the agent).
- JobStarved (job_id, vcpus, ram_mib, waited_s, reason): a job has waited ``starving_s`` seconds in
  the queue for a shape no live agent can hold (placement.why_unplaceable against the agents that
  take new work).  Once per wait (a new wait starts at a requeue).

Both are also kept (``idle_agents``, ``starving``) until they stop being true, for the scheduling
status (`status_lines`).  Times are the book's (``now`` of the Tick).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from plastic.core.book import placement as pl
from plastic.core.book.jobs import Job
from plastic.core.book.records import AgentIdled, JobStarved, Record

DEFAULT_IDLE_AGENT_S = 300.0  # an agent with nothing placed on it this long is reported idle
DEFAULT_STARVING_S = 300.0  # a job queued this long with no agent that could take it is reported starving


class ProvisioningHealth:
    def __init__(self, *, idle_agent_s: float | None = DEFAULT_IDLE_AGENT_S,
                 starving_s: float | None = DEFAULT_STARVING_S):
        self.idle_agent_s = idle_agent_s  # None: no idle-agent records
        self.starving_s = starving_s  # None: no starving records
        self.agent_since: dict[str, float] = {}  # when each agent was first seen (or came back)
        self.last_busy: dict[str, float] = {}  # when a task last was placed on it or left it
        self.idle_agents: dict[str, float] = {}  # reported idle agent -> start of its idle period
        self.starving: dict[str, str] = {}  # reported starving job -> why no live agent can take it
        self.reported_wait: dict[str, float] = {}  # job -> the queued_at of the wait reported starving

    def agent_arrived(self, agent_id: str, now: float) -> None:
        self.agent_since[agent_id] = now
        self.last_busy.pop(agent_id, None)

    def agent_busy(self, agent_id: str, now: float) -> None:
        self.last_busy[agent_id] = now

    def job_left_queue(self, job_id: str) -> None:
        """Launched or ended: what was reported about its wait no longer holds."""
        self.starving.pop(job_id, None)
        self.reported_wait.pop(job_id, None)

    def check(self, now: float, agents: Mapping[str, pl.AgentInfo], busy: Collection[str],
              closed: Collection[str], queued: Sequence[Job], cluster: Sequence[pl.AgentInfo]) -> list[Record]:
        """``busy``: agents with live tasks; ``closed``: gone or under a terminate notice; ``cluster``:
        the agents that take new work."""
        out: list[Record] = []
        if self.idle_agent_s is not None:
            self._idle_agents(now, agents, busy, closed, out)
        if self.starving_s is not None:
            self._starving(now, queued, cluster, out)
        return out

    def _idle_agents(self, now: float, agents: Mapping[str, pl.AgentInfo], busy: Collection[str],
                     closed: Collection[str], out: list[Record]) -> None:
        assert self.idle_agent_s is not None
        for agent_id, info in agents.items():
            if not info.preemptible or agent_id in busy or agent_id in closed or agent_id not in self.agent_since:
                self.idle_agents.pop(agent_id, None)
                continue
            since = max(self.agent_since[agent_id], self.last_busy.get(agent_id, self.agent_since[agent_id]))
            idle_s = now - since
            if idle_s < self.idle_agent_s:
                self.idle_agents.pop(agent_id, None)
            elif self.idle_agents.get(agent_id) != since:
                self.idle_agents[agent_id] = since
                out.append(AgentIdled(agent_id, idle_s, info.cluster, info.instance_type))

    def _starving(self, now: float, queued: Sequence[Job], cluster: Sequence[pl.AgentInfo],
                  out: list[Record]) -> None:
        assert self.starving_s is not None
        late = [j for j in queued if self.reported_wait.get(j.job_id) != j.queued_at
                and now - j.queued_at >= self.starving_s]
        if not late and not self.starving:
            return
        waiting = {j.job_id: j for j in queued}
        for job_id in list(self.starving):  # reported: kept while still queued and still unplaceable
            job = waiting.get(job_id)
            if job is None or pl.why_unplaceable(job.pending(), cluster) is None:
                del self.starving[job_id]
        for job in late:
            reason = pl.why_unplaceable(job.pending(), cluster)
            if reason is None:
                continue  # some live agent can hold it: it waits for room, not for a shape
            self.reported_wait[job.job_id] = job.queued_at
            self.starving[job.job_id] = reason
            out.append(JobStarved(job.job_id, job.demand.vcpus, job.demand.ram_mib, now - job.queued_at, reason))

    def status_lines(self, now: float, jobs: Mapping[str, Job], agents: Mapping[str, pl.AgentInfo]) -> list[str]:
        """What is reported and still true, one line each (for Toil's getSchedulingStatusMessage)."""
        lines = []
        for job_id, reason in sorted(self.starving.items()):
            job = jobs.get(job_id)
            waited = f" for {now - job.queued_at:.0f} s" if job is not None else ""
            lines.append(f"job {job_id} starving{waited}: {reason}")
        for agent_id, since in sorted(self.idle_agents.items()):
            info = agents.get(agent_id)
            where = f" ({info.cluster})" if info is not None and info.cluster else ""
            lines.append(f"agent {agent_id}{where} idle for {now - since:.0f} s: candidate for release")
        return lines
