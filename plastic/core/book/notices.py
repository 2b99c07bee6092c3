"""Spot notices as the JobBook (plastic.core.book.jobbook) sees them: a small state object, pure.

A terminate notice drains the agent at once: nothing new is placed there, and each task running on
it either stays (LeftToFinish) when its tool's runtime estimate, less the time it has run, ends a
margin before the termination time, or is killed now (KilledForNotice) so that its job is requeued,
counted as a preemption.  The margin is ``margin_s`` (30 s), or a quarter of the window the notice
leaves when that is less (AWS's 120 s notice keeps the whole 30 s; a 10 s notice of the local
cluster keeps 2.5 s, so that a task about to end is not killed for a margin longer than the window).
A task kept for the notice that stops fitting (it outlived its estimate) is killed on the next Tick.
Without an estimate a task is killed: there is nothing to promise a finish on.

A rebalance recommendation touches no running task; ``rebalance`` says what new work avoids the
agent: nothing (ignore), jobs longer than ``long_task_s`` or of unknown length (avoid-long), or
every job (drain), unless only such agents could ever hold the job.

`SpotNotices` keeps which agents are under a notice and answers the book's questions; the book
applies what it decides (state moves, kills) and emits the records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from plastic.core.book import placement as pl
from plastic.core.book.jobs import Job

# What a rebalance recommendation does to an agent: nothing but a record (ignore), no new long or
# unknown-length tasks there (avoid-long), or no new tasks at all (drain).  Running tasks are never
# touched: a rebalance recommendation has no deadline; a terminate notice, if one follows, has.
RebalanceMode = Literal["ignore", "avoid-long", "drain"]
REBALANCE_MODES: tuple[str, ...] = get_args(RebalanceMode)

Estimate = Callable[[str | None], float | None]

MARGIN_SHARE = 0.25  # at most this share of a notice's window is kept as the margin (30 s of AWS's 120 s)


@dataclass(frozen=True, slots=True)
class AgentNotice:
    """A notice the book holds for an agent: terminate (deadline) or rebalance (when it was made)."""

    terminate_at: float
    received_at: float


class SpotNotices:
    def __init__(self, *, margin_s: float = 30.0, rebalance: RebalanceMode = "avoid-long",
                 long_task_s: float = 600.0):
        if rebalance not in REBALANCE_MODES:
            raise ValueError(f"rebalance must be one of {', '.join(REBALANCE_MODES)}, not {rebalance!r}")
        self.margin_s = margin_s
        self.rebalance = rebalance
        self.long_task_s = long_task_s
        self.draining: dict[str, AgentNotice] = {}  # terminate notices
        self.rebalancing: dict[str, AgentNotice] = {}  # rebalance recommendations

    def received(self, agent_id: str, kind: str, terminate_at: float, now: float) -> bool:
        """Hold a notice; False when the agent already has one of that kind (a repeat)."""
        table = self.draining if kind == "terminate" else self.rebalancing
        if agent_id in table:
            return False
        table[agent_id] = AgentNotice(terminate_at, now)
        return True

    def _margin(self, notice: AgentNotice) -> float:
        """``margin_s``, or less for a short window: MARGIN_SHARE of the time from the notice's receipt
        to the termination."""
        return min(self.margin_s, MARGIN_SHARE * max(notice.terminate_at - notice.received_at, 0.0))

    def margin_for(self, agent_id: str | None) -> float:
        """The margin kept before this agent's termination time (``margin_s`` without a notice)."""
        notice = self.draining.get(agent_id or "")
        return self.margin_s if notice is None else self._margin(notice)

    def deadline(self, agent_id: str | None) -> float | None:
        """When a task on this agent must have ended (its terminate notice less the margin), if any."""
        notice = self.draining.get(agent_id or "")
        return None if notice is None else notice.terminate_at - self._margin(notice)

    def notice_age_s(self, agent_id: str | None, now: float) -> float | None:
        notice = self.draining.get(agent_id or "")
        return None if notice is None else now - notice.received_at

    def past_deadline(self, agent_id: str | None, now: float) -> bool:
        """The agent's termination time has come: it is gone, whatever the master says later."""
        notice = self.draining.get(agent_id or "")
        return notice is not None and now >= notice.terminate_at

    def fits_window(self, job: Job, now: float, estimate: Estimate) -> bool:
        """The job's expected end, plus the margin, comes before its agent's termination time."""
        notice = self.draining.get(job.agent_id or "")
        est = estimate(job.tool)
        if notice is None or est is None:
            return False
        cur = job.current
        start = cur.began_at if cur else now
        remaining = max(est - (now - start), 0.0)
        return now + remaining + self._margin(notice) <= notice.terminate_at

    def is_long(self, job: Job, estimate: Estimate) -> bool:
        est = estimate(job.tool)
        return est is None or est > self.long_task_s

    def kept_off_rebalancing(self, queue: Sequence[Job], cluster: dict[str, pl.AgentInfo],
                             estimate: Estimate) -> set[str]:
        """Task ids of queued jobs that must not start on an agent with a rebalance recommendation.

        A job that only such agents could ever hold is not kept off them: waiting for them to go away
        could be forever (a recommendation need not end in an interruption)."""
        if self.rebalance == "ignore" or not self.rebalancing:
            return set()
        steady = [a for a_id, a in cluster.items() if a_id not in self.rebalancing]
        if not steady:
            return set()
        return {j.mesos_task_id for j in queue
                if (self.rebalance == "drain" or self.is_long(j, estimate))
                and pl.why_unplaceable(j.pending(), steady) is None}

    def closed(self) -> Iterable[str]:
        """Agents that take no new work because of a terminate notice."""
        return self.draining.keys()
