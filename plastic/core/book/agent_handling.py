"""Agents and spot notices in the JobBook (plastic.core.book.jobbook), pure: an agent seen (or back), an
agent's recorded state, an agent lost (its jobs requeued), a notice received (the agent drained; each
task on it left to finish or killed now, plastic.core.book.notices)."""

from __future__ import annotations

import dataclasses
from typing import Any

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book import placement as pl
from plastic.core.book import records as rec
from plastic.core.book.decisions import Output
from plastic.core.book.endings import move, requeue_job
from plastic.core.book.jobs import Job
from plastic.core.book.lifecycle import AgentState, TaskState, allowed
from plastic.core.book.state import BookState
from plastic.core.book.unplaceable import check_unplaceable


def agent_seen(book: BookState, agent: pl.AgentInfo, now: float, out: list[Output], quiet: bool = False) -> None:
    known = book.agents.get(agent.agent_id)
    back = agent.agent_id in book.gone
    book.agents[agent.agent_id] = dataclasses.replace(agent, draining=False)
    book.gone.discard(agent.agent_id)
    book.agent_states.setdefault(agent.agent_id, AgentState.ACTIVE)
    if known is None or back:
        book.health.agent_arrived(agent.agent_id, now)
    if known is None or back or known != book.agents[agent.agent_id]:
        if not quiet or known is None or back:
            out.append(rec.AgentUpdated(agent.agent_id, agent.preemptible, agent.cluster, agent.instance_type,
                                        agent.capacity.vcpus, agent.capacity.ram_mib, back, agent.address or None))
        if not quiet:
            check_unplaceable(book, book.queued(), now, out)


def agent_state(book: BookState, agent_id: str, wanted: AgentState, reason: str, out: list[Output],
                **kw: Any) -> None:
    state = book.agent_states.get(agent_id)
    if state is None or state == wanted or not allowed("agent", state, wanted):
        return  # unknown to the records, or already there; GONE is final
    book.agent_states[agent_id] = wanted
    out.append(rec.AgentStateChanged(agent_id, state, wanted, reason, **kw))


def agent_lost(book: BookState, ev: evt.AgentLost, now: float, out: list[Output]) -> None:
    first = ev.agent_id not in book.gone
    book.gone.add(ev.agent_id)
    jobs = book.on_agent(ev.agent_id)
    out.append(rec.AgentGone(ev.agent_id, tuple(j.job_id for j in jobs), not first))
    if first:
        agent_state(book, ev.agent_id, AgentState.GONE, "agent lost", out)
    for job in jobs:
        requeue_job(book, job, "agent_lost", now, out)
    check_unplaceable(book, book.queued(), now, out)


def notice_received(book: BookState, ev: evt.NoticeReceived, now: float, out: list[Output]) -> None:
    if not book.notices.received(ev.agent_id, ev.kind, ev.terminate_at, now):
        out.append(rec.NoticeRepeated(ev.agent_id, ev.kind))
        return
    jobs = book.on_agent(ev.agent_id)
    ids = tuple(j.job_id for j in jobs)
    if ev.kind != "terminate":
        out.append(rec.RebalanceNoticed(ev.agent_id, ev.kind, book.notices.rebalance, ids))
        return
    window_s = ev.terminate_at - now
    out.append(rec.TerminateNoticed(ev.agent_id, ev.kind, ev.terminate_at, window_s, ids))
    agent_state(book, ev.agent_id, AgentState.DRAINING, "notice", out, window_s=window_s)
    for job in jobs:
        if job.state is TaskState.KILLING:
            continue  # already on its way out; its end decides
        if book.notices.fits_window(job, now, book.estimate):
            job.kept_for_notice = True
            out.append(rec.LeftToFinish(job.job_id, ev.agent_id, book.estimate(job.tool)))
        else:
            kill_for_notice(book, job, now, out)
    if book.orphans is not None:  # a resume: the previous leader's adopted tasks there
        margin_s = book.notices.margin_for(ev.agent_id)
        for step in book.orphans.on_notice(ev.agent_id, ev.terminate_at, margin_s, now):
            out.extend(step.commands())
    check_unplaceable(book, book.queued(), now, out)


def kill_for_notice(book: BookState, job: Job, now: float, out: list[Output]) -> None:
    move(job, TaskState.KILLING, "kill (notice)", out, details={"kill_cause": "notice"})
    job.kill_cause = "notice"
    job.kept_for_notice = False
    job.kill_sent_at = now
    out.append(cmd.KillTask(job.mesos_task_id, job.agent_id))
    out.append(rec.KilledForNotice(job.job_id, job.mesos_task_id, job.agent_id, book.estimate(job.tool)))
