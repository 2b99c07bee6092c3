"""Provisioning health of the JobBook (plastic.core.jobbook), checked on every Tick; pure.

Two signals for whoever sizes the cluster (an autoscaler, Toil's scaler, a human):

- ``idle_agent`` (agent_id, idle_s, cluster, instance_type): a burst (preemptible) agent, not gone
  and not under a terminate notice, has had no task for ``book.idle_agent_s`` seconds: a candidate
  for release.  Once per idle period (a new period starts when a task leaves the agent).
- ``starving`` (job_id, vcpus, ram_mib, waited_s, reason): a job has waited ``book.starving_s``
  seconds in the queue for a shape no live agent can hold (placement.why_unplaceable against the
  agents that take new work).  Once per wait (a new wait starts at a requeue).

Both are also kept (``book.idle_agents``, ``book.starving``) until they stop being true, for the
scheduling status (`status_lines`).  Times are the book's (``now`` of the Tick).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plastic.core import placement as pl
from plastic.core.jobbook_messages import Command, Record

if TYPE_CHECKING:
    from plastic.core.jobbook import JobBook


def check(book: JobBook, now: float, out: list[Command]) -> None:
    if book.idle_agent_s is not None:
        _idle_agents(book, now, out)
    if book.starving_s is not None:
        _starving(book, now, out)


def _idle_agents(book: JobBook, now: float, out: list[Command]) -> None:
    assert book.idle_agent_s is not None
    busy = {j.agent_id for j in book.live()}
    for agent_id, info in book.agents.items():
        if (not info.preemptible or agent_id in busy or agent_id in book.gone or agent_id in book.draining
                or agent_id not in book.agent_since):
            book.idle_agents.pop(agent_id, None)
            continue
        since = max(book.agent_since[agent_id], book.last_busy.get(agent_id, book.agent_since[agent_id]))
        idle_s = now - since
        if idle_s < book.idle_agent_s:
            book.idle_agents.pop(agent_id, None)
        elif book.idle_agents.get(agent_id) != since:
            book.idle_agents[agent_id] = since
            out.append(Record("idle_agent", {"agent_id": agent_id, "idle_s": idle_s, "cluster": info.cluster,
                                             "instance_type": info.instance_type}))


def _starving(book: JobBook, now: float, out: list[Command]) -> None:
    assert book.starving_s is not None
    queued = book.queued()
    late = [j for j in queued if not j.starving_reported and now - j.queued_at >= book.starving_s]
    if not late and not book.starving:
        return
    live = list(book.cluster().values())
    waiting = {j.job_id: j for j in queued}
    for job_id in list(book.starving):  # reported: kept while still queued and still unplaceable
        job = waiting.get(job_id)
        if job is None or pl.why_unplaceable(job.pending(), live) is None:
            del book.starving[job_id]
    for job in late:
        reason = pl.why_unplaceable(job.pending(), live)
        if reason is None:
            continue  # some live agent can hold it: it waits for room, not for a shape
        job.starving_reported = True
        book.starving[job.job_id] = reason
        out.append(Record("starving", {"job_id": job.job_id, "vcpus": job.demand.vcpus,
                                       "ram_mib": job.demand.ram_mib, "waited_s": now - job.queued_at,
                                       "reason": reason}))


def status_lines(book: JobBook, now: float) -> list[str]:
    """What is reported and still true, one line each (for Toil's getSchedulingStatusMessage)."""
    lines = []
    for job_id, reason in sorted(book.starving.items()):
        job = book.jobs.get(job_id)
        waited = f" for {now - job.queued_at:.0f} s" if job is not None else ""
        lines.append(f"job {job_id} starving{waited}: {reason}")
    for agent_id, since in sorted(book.idle_agents.items()):
        info = book.agents.get(agent_id)
        where = f" ({info.cluster})" if info is not None and info.cluster else ""
        lines.append(f"agent {agent_id}{where} idle for {now - since:.0f} s: candidate for release")
    return lines
