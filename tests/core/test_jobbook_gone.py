"""JobGone: a requeued job whose killed attempt had already committed its work ends as finished."""

from __future__ import annotations

from plastic.core.jobbook import AgentLost, JobEnded, JobGone
from plastic.core.lifecycle import TaskState
from tests.core.test_jobbook import BURST, BURST2, Harness, of, records


def test_requeued_job_whose_work_is_in_the_store_ends_finished_once():
    h = Harness()
    h.run(agent=BURST)
    h(AgentLost("burst"))
    assert h.book.jobs["j"].state is TaskState.QUEUED
    cmds = h(JobGone("j"))
    (ended,) = of(cmds, JobEnded)
    assert (ended.outcome, ended.exit_code, ended.reason) == ("finished", 0, "done_by_earlier_attempt")
    assert h.book.jobs["j"].state is TaskState.FINISHED
    assert h.launched(h.offer(BURST2)) == []  # never launched again
    again = h(JobGone("j"))
    assert not of(again, JobEnded) and records(again, "job_gone_ignored")


def test_job_gone_is_ignored_for_first_attempts_and_running_jobs():
    h = Harness()
    h.issue("q")
    cmds = h(JobGone("q"))  # never ran: nothing can have committed it
    assert not of(cmds, JobEnded) and h.book.jobs["q"].state is TaskState.QUEUED
    h2 = Harness()
    h2.run("r", agent=BURST)
    cmds = h2(JobGone("r"))
    assert not of(cmds, JobEnded) and h2.book.jobs["r"].state is TaskState.RUNNING
    assert not of(h(JobGone("unknown")), JobEnded)
