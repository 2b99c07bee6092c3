"""Orphans: the Mesos tasks a previous incarnation of the Toil leader left behind, pure.

When `plastic run --resume` restarts Toil on the same job store, the new leader's batch system
subscribes with the run's framework id (a failover) and sends the JobBook `Resumed` with the tasks
the run's records show live.  Toil's restarted leader re-issues every unfinished job under new
batch job ids, so none of the old tasks belongs to a job of the new book: each is an orphan.

    unconfirmed --status, not terminal--> killing --terminal status--> gone (record orphan_ended)
        |                                    `-- no terminal status for kill_retry_s: KillTask again
        |--terminal status--> gone (finished while the leader was down: its work is in the job store)
        `--no status for confirm_s--> gone (record orphan_unknown: the master does not know it)

A task the records did not know (launched just before the crash, its record not written yet) is
learnt from the implicit reconciliation's answer and treated the same way.  The new leader's
batch system waits (bounded) until no orphan is left before Toil reads its job store, so an old
task can never finish after the new leader has decided what to run again: work is redone, but no
job completes twice.
"""

from __future__ import annotations

from dataclasses import dataclass

TERMINAL = frozenset({"TASK_FINISHED", "TASK_FAILED", "TASK_ERROR", "TASK_KILLED", "TASK_LOST",
                      "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_DROPPED", "TASK_UNKNOWN"})


@dataclass(slots=True)
class Orphan:
    task_id: str
    agent_id: str | None
    since: float  # when it became an orphan (Resumed) or was first reported
    killing: bool = False
    kill_sent_at: float | None = None
    last_state: str | None = None


@dataclass(frozen=True, slots=True)
class OrphanStep:
    """What one status or tick means for an orphan: kill it (again), it ended, or it is given up."""

    task_id: str
    agent_id: str | None
    action: str  # "kill" | "ended" | "unknown" | "none"
    state: str | None = None


class Orphans:
    """The previous incarnation's tasks still to be accounted for (see the module docstring)."""

    def __init__(self, *, confirm_s: float = 30.0, kill_retry_s: float = 30.0):
        self.confirm_s = confirm_s
        self.kill_retry_s = kill_retry_s
        self.tasks: dict[str, Orphan] = {}
        self.ended: dict[str, str] = {}  # task id -> its terminal state (or "unknown")

    def __len__(self) -> int:
        return len(self.tasks)

    def expect(self, task_id: str, agent_id: str | None, now: float) -> None:
        if task_id not in self.tasks and task_id not in self.ended:
            self.tasks[task_id] = Orphan(task_id, agent_id, now)

    def status(self, task_id: str, state: str, agent_id: str | None, now: float) -> OrphanStep:
        """A status of a task no job of the book owns."""
        if task_id in self.ended and task_id not in self.tasks:
            return OrphanStep(task_id, agent_id, "none", state)
        orphan = self.tasks.get(task_id)
        if orphan is None:
            orphan = self.tasks[task_id] = Orphan(task_id, agent_id, now)
        orphan.last_state = state
        orphan.agent_id = agent_id or orphan.agent_id
        if state in TERMINAL:
            del self.tasks[task_id]
            self.ended[task_id] = state
            return OrphanStep(task_id, orphan.agent_id, "ended", state)
        if state == "TASK_KILLING":
            orphan.killing = True
            orphan.kill_sent_at = orphan.kill_sent_at if orphan.kill_sent_at is not None else now
            return OrphanStep(task_id, orphan.agent_id, "none", state)
        if not orphan.killing:
            orphan.killing = True
            orphan.kill_sent_at = now
            return OrphanStep(task_id, orphan.agent_id, "kill", state)
        return OrphanStep(task_id, orphan.agent_id, "none", state)

    def tick(self, now: float) -> list[OrphanStep]:
        steps: list[OrphanStep] = []
        for orphan in list(self.tasks.values()):
            if orphan.killing:
                if orphan.kill_sent_at is not None and now - orphan.kill_sent_at >= self.kill_retry_s:
                    orphan.kill_sent_at = now
                    steps.append(OrphanStep(orphan.task_id, orphan.agent_id, "kill", orphan.last_state))
            elif now - orphan.since >= self.confirm_s:
                del self.tasks[orphan.task_id]
                self.ended[orphan.task_id] = "unknown"
                steps.append(OrphanStep(orphan.task_id, orphan.agent_id, "unknown"))
        return steps
