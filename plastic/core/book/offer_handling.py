"""Offers in the JobBook (plastic.core.book.jobbook), pure: the offering agents seen, the queue placed
on the offers (plastic.core.book.placement), each placed job LAUNCHING under a new attempt, one
LaunchTasks per offer, the rest declined, the jobs no offer could take checked for placeability."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book import placement as pl
from plastic.core.book import records as rec
from plastic.core.book.agent_handling import agent_seen
from plastic.core.book.decisions import Output
from plastic.core.book.endings import move
from plastic.core.book.jobs import Attempt, Job
from plastic.core.book.lifecycle import TaskState
from plastic.core.book.state import BookState
from plastic.core.book.unplaceable import unplaceable


def offers_received(book: BookState, ev: evt.OffersReceived, now: float, out: list[Output]) -> None:
    for o in ev.offers:
        known = book.agents.get(o.agent.agent_id)
        cap = o.agent.capacity if known is None else pl.Resources(
            max(known.capacity.vcpus, o.agent.capacity.vcpus), max(known.capacity.ram_mib, o.agent.capacity.ram_mib))
        address = o.agent.address or (known.address if known else "")
        agent_seen(book, dataclasses.replace(o.agent, capacity=cap, address=address, draining=False), now, out,
                   quiet=True)
    offers = [dataclasses.replace(o, agent=book.agents[o.agent.agent_id]) for o in ev.offers]
    queued = book.queued()
    queue = [j for j in queued if not j.awaiting_job_store]
    cluster = book.cluster()
    kept_off = book.notices.kept_off_rebalancing(queue, cluster, book.estimate)
    placement = pl.place(offers, [j.pending(avoid_rebalancing=j.mesos_task_id in kept_off) for j in queue],
                         cluster, refuse_seconds=book.refuse_seconds, draining=book.notices.draining.keys(),
                         rebalancing=book.notices.rebalancing.keys(), ignored=book.ignored,
                         work_held=len(queue) < len(queued))
    by_task = {j.mesos_task_id: j for j in queue}
    _launch(book, placement.launches, by_task, now, out)
    _decline(book, placement, out)
    for u in placement.unplaceable:
        unplaceable(book, by_task[u.task_id], u.reason, now, out)


def _launch(book: BookState, launches: Iterable[pl.TaskPlacement], by_task: dict[str, Job], now: float,
            out: list[Output]) -> None:
    """Each placed job LAUNCHING under a new attempt, recorded; one LaunchTasks per offer."""
    per_offer: dict[str, list[cmd.TaskLaunch]] = {}
    agent_of: dict[str, str] = {}
    for lt in launches:
        job = by_task[lt.task_id]
        agent = book.agents[lt.agent_id]
        move(job, TaskState.LAUNCHING, "placed", out,
             details={"agent": lt.agent_id, "cluster": agent.cluster, "preemptible": agent.preemptible,
                      "mesos_task": lt.task_id})
        job.agent_id = lt.agent_id
        job.launched_reliable_only = job.needs_reliable
        job.unplaceable_reason = None
        book.health.job_left_queue(job.job_id)
        book.health.agent_busy(lt.agent_id, now)
        job.attempts.append(Attempt(job.attempt, lt.agent_id, now))
        per_offer.setdefault(lt.offer_id, []).append(
            cmd.TaskLaunch(lt.task_id, job.job_id, job.attempt, lt.agent_id, lt.demand, lt.reason))
        agent_of[lt.offer_id] = lt.agent_id
        out.append(rec.TaskPlaced(job.job_id, lt.task_id, lt.agent_id, agent.cluster, agent.preemptible,
                                  agent.instance_type, lt.offer_id, lt.reason, job.preemptions))
    for offer_id, tasks in per_offer.items():
        out.append(cmd.LaunchTasks(offer_id, agent_of[offer_id], tuple(tasks)))


def _decline(book: BookState, placement: pl.Placement, out: list[Output]) -> None:
    """Offers of agents the leader ignores, with the book's refusal; the other unused offers, with theirs."""
    ignored = set(placement.ignored)
    if ignored:
        out.append(cmd.DeclineOffers(placement.ignored, book.refuse_seconds))
        out.append(rec.IgnoredOffersDeclined(placement.ignored))
    declined = tuple(d.offer_id for d in placement.declines if d.offer_id not in ignored)
    if declined:
        refuse = next(d.refuse_seconds for d in placement.declines if d.offer_id not in ignored)
        out.append(cmd.DeclineOffers(declined, refuse))
        out.append(rec.OffersDeclined(declined, refuse))
