"""Orphans: the Mesos tasks a previous incarnation of the Toil leader left behind, pure.

When `plastic run --resume` restarts Toil on the same job store, the new leader's batch system
subscribes with the run's framework id (a failover) and sends the JobBook `Resumed` with the tasks
the run's records show live.  Toil's restarted leader re-issues every unfinished job under new
batch job ids, so none of the old tasks belongs to a job of the new book: each is an orphan.

A running orphan is adopted when it can finish inside the adopt window (``adopt_s`` from the
resume): its tool's runtime estimate, less the time it has already run, fits in what is left of
the window, or there is no estimate.  An adopted orphan runs to its end and its work is kept; it
is killed when the window closes first, or at a terminate notice for its agent when it is not
expected to end before the agent does.  One that cannot fit is killed at once.

    unconfirmed --running, fits--> adopted --terminal status--> gone (record orphan_ended, adopted)
        |                             `-- window closed: KillTask --> killing
        |--running, does not fit (or adopt_s = 0)--> killing --terminal status--> gone
        |                                              `-- no terminal status for kill_retry_s: KillTask again
        |--terminal status--> gone (finished while the leader was down: its work is in the job store)
        `--no status for confirm_s--> gone (record orphan_unknown: the master does not know it)

An end that does not say whether the work was done (the master no longer knows the task: it
finished and the dead leader acknowledged it, but the record of it was lost with the leader; or
it was lost) is checked against Toil's job store first (CheckJobStore "committed", answered by the
shell with JobStoreChecked): when the job's work is there, the orphan ended as finished (reason
``job_store``).  Every end moves the orphan's task record (the previous leader's job id) to
FINISHED, FAILED or KILLED (TaskStateChanged, from whatever the record said).

When the master had removed the framework (the resume came after its failover timeout), it killed
all its tasks: the new leader subscribes anew and every orphan ends at once as killed.

A task the records did not know (launched just before the crash, its record not written yet) is
learnt from the implicit reconciliation's answer and treated the same way, without an estimate.  So a
record the previous leader left QUEUED is not taken as never launched at once (its LAUNCHING may have
been lost with the leader): it ends KILLED (the job is issued again) only once Toil issues, or no
orphan is left after confirm_s, and no task of its job turned up; one that did is that orphan's record.

Why adoption happens before Toil reads its job store and not after: on `--restart` Toil cleans the
job store (rewrites job descriptions, deletes jobs it cannot reach from the root), which would
race with a live worker committing its job.  So the new leader's batch system waits, bounded by
the window plus the kill time, until no orphan is left: an old task never finishes after the new
leader has decided what to run again, and no job completes twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from plastic.core.book.commands import CheckJobStore, KillTask
from plastic.core.book.events import PriorTask
from plastic.core.book.jobs import split_task_id
from plastic.core.book.lifecycle import TaskState
from plastic.core.book.records import (
    OrphanAdopted,
    OrphanCheckAsked,
    OrphanEnded,
    OrphanKilled,
    OrphanUnknown,
    TaskStateChanged,
)

TERMINAL = frozenset({"TASK_FINISHED", "TASK_FAILED", "TASK_ERROR", "TASK_KILLED", "TASK_LOST",
                      "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_DROPPED", "TASK_UNKNOWN"})
# Ends that do not say whether the task's work was done: the master no longer knows the task (it
# finished and was acknowledged by the dead leader, whose record of it was lost), or lost it.
INCONCLUSIVE = frozenset({"TASK_LOST", "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_DROPPED",
                          "TASK_UNKNOWN", "unknown"})
# Record states that a new leader finds live (an orphan to account for) or queued (never launched).
LIVE_RECORDS = ("LAUNCHING", "STARTING", "RUNNING", "KILLING")
_ORPHAN_END_STATE = {"TASK_FINISHED": TaskState.FINISHED, "TASK_FAILED": TaskState.FAILED,
                     "TASK_ERROR": TaskState.FAILED}


@dataclass(slots=True)
class Orphan:
    task_id: str
    agent_id: str | None
    since: float  # when it became an orphan (Resumed) or was first reported
    tool: str | None = None
    running_s: float | None = None  # how long it had run when the resume began, from the records
    killing: bool = False
    kill_sent_at: float | None = None
    last_state: str | None = None
    job_store_id: str | None = None
    adopted: bool = False  # left to finish: killed if still running when the window closes
    checking: tuple[str, str | None] | None = None  # an inconclusive end (state, reason) awaiting the job store


@dataclass(frozen=True, slots=True)
class OrphanStep:
    """What one status or tick means for an orphan: adopt it, kill it (again), it ended, or it is
    given up."""

    task_id: str
    agent_id: str | None
    action: str  # "adopt" | "kill" | "check" | "ended" | "unknown" | "none"
    state: str | None = None
    # of a kill: "no_fit" | "adopt_window" | "notice" | "retry"; of an end: "framework_removed" | "job_store"
    reason: str | None = None
    estimate_s: float | None = None  # of an adoption: the expected time left (None: no estimate)
    adopted: bool = False  # of an end: the task had been adopted
    job_store_id: str | None = None  # of a check

    def commands(self) -> list:
        """The JobBook commands and records of this step."""
        if self.action == "adopt":
            return [OrphanAdopted(self.task_id, self.agent_id, self.state, self.estimate_s)]
        if self.action == "kill":
            return [KillTask(self.task_id, self.agent_id),
                    OrphanKilled(self.task_id, self.agent_id, self.state, self.reason or "")]
        if self.action == "check":
            return [OrphanCheckAsked(self.task_id, self.agent_id, self.state, self.reason, self.job_store_id),
                    CheckJobStore(self.task_id, self.job_store_id or "", "committed")]
        if self.action == "ended":
            why = "adopted" if self.adopted else "orphan"
            suffix = f" ({self.reason})" if self.reason else ""
            return [OrphanEnded(self.task_id, self.agent_id, self.state, self.adopted, self.reason),
                    *self._record_moves(_ORPHAN_END_STATE.get(str(self.state), TaskState.KILLED),
                                        f"{why} {str(self.state).lower()}{suffix}")]
        if self.action == "unknown":
            return [OrphanUnknown(self.task_id, self.agent_id),
                    *self._record_moves(TaskState.KILLED, "orphan unknown to the master")]
        return []

    def _record_moves(self, state: TaskState, why: str) -> list[TaskStateChanged]:
        """The previous leader's task record (its job id) ends as ``state``, whatever it said before."""
        parsed = split_task_id(self.task_id)
        if parsed is None:
            return []
        return [TaskStateChanged(parsed[0], None, state, f"previous leader: {why}", {"outcome": why})]


class Orphans:
    """The previous incarnation's tasks still to be accounted for (see the module docstring)."""

    def __init__(self, *, confirm_s: float = 30.0, kill_retry_s: float = 30.0, adopt_s: float = 0.0,
                 runtime_estimate: Callable[[str | None], float | None] = lambda tool: None):
        self.confirm_s = confirm_s
        self.kill_retry_s = kill_retry_s
        self.adopt_s = max(adopt_s, 0.0)
        self.runtime_estimate = runtime_estimate
        self.tasks: dict[str, Orphan] = {}
        self.ended: dict[str, str] = {}  # task id -> its terminal state (or "unknown")
        self.window_end: float | None = None  # the resume's start (begin) + adopt_s
        self.begun_at: float | None = None
        # the previous leader's records still QUEUED: launched or not (see defer_restart)
        self.queued_records: dict[str, PriorTask] = {}

    def __len__(self) -> int:
        return len(self.tasks)

    def adopted(self) -> int:
        return sum(1 for o in self.tasks.values() if o.adopted and not o.killing)

    def begin(self, now: float) -> None:
        """The resume began: the adopt window runs from now."""
        if self.window_end is None:
            self.window_end = now + self.adopt_s
            self.begun_at = now

    def defer_restart(self, prior: PriorTask) -> None:
        """A record the previous leader left QUEUED.  Its launch may have happened and only its record
        been lost with the leader (the store's writes are asynchronous): if the master's reconciliation
        then names a task of that job, the task is an orphan like any other and its end moves the
        record; the others end as never launched (``restarts_never_launched``)."""
        self.queued_records[prior.record_id] = prior

    def restarts_never_launched(self, now: float, *, settled: bool = False) -> list[TaskStateChanged]:
        """The deferred QUEUED records no task turned up for, KILLED (the new leader issues their jobs
        again): once Toil issues (``settled``: the orphans are accounted for) or when no orphan is left
        and the confirm time has passed."""
        if not self.queued_records or not (settled or (not self.tasks and self.begun_at is not None
                                                         and now - self.begun_at >= self.confirm_s)):
            return []
        moves = [TaskStateChanged(p.record_id, TaskState.QUEUED, TaskState.KILLED, "leader_restarted",
                                  {"outcome": "leader_restarted"}, tool=p.tool) for p in self.queued_records.values()]
        self.queued_records.clear()
        return moves

    def expect(self, prior: PriorTask, now: float) -> None:
        """A live task of the previous leader's records (state in LIVE_RECORDS, with a Mesos task id)."""
        task_id = prior.mesos_task_id
        if task_id and task_id not in self.tasks and task_id not in self.ended:
            running_s = prior.state_age_s if prior.state == "RUNNING" else None
            self._add(task_id, prior.agent_id, now, prior.tool, running_s, prior.job_store_id)

    def _add(self, task_id: str, agent_id: str | None, now: float, tool: str | None = None,
             running_s: float | None = None, job_store_id: str | None = None) -> Orphan:
        self.begin(now)
        parsed = split_task_id(task_id)
        queued = self.queued_records.pop(parsed[0], None) if parsed else None  # its launch was not recorded
        if queued is not None:
            tool, job_store_id = tool or queued.tool, job_store_id or queued.job_store_id
        orphan = self.tasks[task_id] = Orphan(task_id, agent_id, now, tool, running_s, job_store_id=job_store_id)
        return orphan

    def _outlasts(self, orphan: Orphan, now: float, deadline: float) -> bool:
        """Not expected to end by ``deadline`` (or no estimate to say it will)."""
        remaining = self.remaining_estimate(orphan, now)
        return remaining is None or now + remaining > deadline

    def remaining_estimate(self, orphan: Orphan, now: float) -> float | None:
        """Expected seconds left to run (None without an estimate for its tool)."""
        estimate = self.runtime_estimate(orphan.tool) if orphan.tool else None
        if estimate is None:
            return None
        ran = (orphan.running_s or 0.0) + (now - orphan.since)
        return max(estimate - ran, 0.0)

    def status(self, task_id: str, state: str, agent_id: str | None, now: float,
               agent_deadline: float | None = None) -> OrphanStep:
        """A status of a task no job of the book owns; ``agent_deadline``: by when a task on that agent
        must end (its terminate notice less the margin), if it is under one."""
        if task_id in self.ended and task_id not in self.tasks:
            return OrphanStep(task_id, agent_id, "none", state)
        orphan = self.tasks.get(task_id) or self._add(task_id, agent_id, now)
        orphan.last_state = state
        orphan.agent_id = agent_id or orphan.agent_id
        if orphan.checking is not None:
            return OrphanStep(task_id, orphan.agent_id, "none", state)
        if state in TERMINAL:
            return self._end(orphan, state)
        if state == "TASK_KILLING":
            orphan.killing = True
            orphan.kill_sent_at = orphan.kill_sent_at if orphan.kill_sent_at is not None else now
            return OrphanStep(task_id, orphan.agent_id, "none", state)
        if orphan.killing or orphan.adopted:
            return OrphanStep(task_id, orphan.agent_id, "none", state)
        window_end = self.window_end if self.window_end is not None else now
        if agent_deadline is not None and self._outlasts(orphan, now, agent_deadline):
            return self._kill(orphan, now, "notice")
        remaining = self.remaining_estimate(orphan, now)
        if now < window_end and (remaining is None or now + remaining <= window_end):
            orphan.adopted = True
            return OrphanStep(task_id, orphan.agent_id, "adopt", state, estimate_s=remaining)
        return self._kill(orphan, now, "no_fit")

    def _end(self, orphan: Orphan, state: str, reason: str | None = None, *, check: bool = False) -> OrphanStep:
        """An end; an inconclusive one (or ``check``) of an orphan whose job is known is checked first."""
        if (check or state in INCONCLUSIVE) and orphan.job_store_id and orphan.checking is None:
            orphan.checking = (state, reason)
            return OrphanStep(orphan.task_id, orphan.agent_id, "check", state, reason=reason,
                              job_store_id=orphan.job_store_id)
        del self.tasks[orphan.task_id]
        self.ended[orphan.task_id] = state
        if state == "unknown":
            return OrphanStep(orphan.task_id, orphan.agent_id, "unknown")
        adopted = orphan.adopted and not orphan.killing
        return OrphanStep(orphan.task_id, orphan.agent_id, "ended", state, reason=reason, adopted=adopted)

    def checked(self, task_id: str, committed: bool) -> OrphanStep:
        """The job store's answer for an orphan being checked: committed means its work was done."""
        orphan = self.tasks.get(task_id)
        if orphan is None or orphan.checking is None:
            return OrphanStep(task_id, None, "none")
        state, reason = orphan.checking
        if committed:
            return self._end(orphan, "TASK_FINISHED", "job_store")
        return self._end(orphan, state, reason)

    def _kill(self, orphan: Orphan, now: float, reason: str) -> OrphanStep:
        orphan.killing = True
        orphan.kill_sent_at = now
        return OrphanStep(orphan.task_id, orphan.agent_id, "kill", orphan.last_state, reason=reason)

    def on_notice(self, agent_id: str, terminate_at: float, margin_s: float, now: float) -> list[OrphanStep]:
        """A terminate notice for an agent: an adopted orphan there that is not expected to end
        ``margin_s`` before ``terminate_at`` (or has no estimate) is killed now, to run again
        elsewhere, instead of being lost with the agent at the end of the window."""
        steps = []
        for orphan in list(self.tasks.values()):
            if orphan.agent_id != agent_id or orphan.killing or orphan.checking is not None:
                continue
            if not orphan.adopted:
                continue  # not confirmed running yet: its status decides (and finds the agent draining)
            if self._outlasts(orphan, now, terminate_at - margin_s):
                steps.append(self._kill(orphan, now, "notice"))
        return steps

    def removed(self) -> list[OrphanStep]:
        """The master removed the framework (failover timeout expired) and killed every task it had:
        each orphan ended as killed."""
        return [self._end(orphan, "TASK_KILLED", "framework_removed", check=True)
                for orphan in list(self.tasks.values())]

    def tick(self, now: float) -> list[OrphanStep]:
        steps: list[OrphanStep] = []
        for orphan in list(self.tasks.values()):
            if orphan.killing:
                if orphan.kill_sent_at is not None and now - orphan.kill_sent_at >= self.kill_retry_s:
                    steps.append(self._kill(orphan, now, "retry"))
            elif orphan.adopted:
                if self.window_end is not None and now >= self.window_end:
                    steps.append(self._kill(orphan, now, "adopt_window"))
            elif orphan.checking is None and now - orphan.since >= self.confirm_s:
                steps.append(self._end(orphan, "unknown"))
        return steps
