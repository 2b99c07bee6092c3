"""A requeued job is checked against the job store before it runs again: when its killed attempt had
already committed its work, it ends as finished (JobStoreChecked "gone")."""

from __future__ import annotations

from plastic.core.book.commands import CheckJobStore, DeclineOffers, ReportJobEnd
from plastic.core.book.events import AgentLost, JobStoreChecked
from plastic.core.book.lifecycle import TaskState
from tests.fakes.jobbook import BURST, BURST2, Harness
from tests.fakes.records import of, records


def test_requeued_job_whose_work_is_in_the_store_ends_finished_once():
    h = Harness()
    h.run(agent=BURST, job_store_id="kind/job-1")
    cmds = h(AgentLost("burst"))
    assert of(cmds, CheckJobStore) == [CheckJobStore("j", "kind/job-1", "gone")]
    assert h.book.jobs["j"].state is TaskState.QUEUED
    assert h.launched(h.offer(BURST2)) == []  # held until the job store answers
    cmds = h(JobStoreChecked("j", "gone", True))
    (ended,) = of(cmds, ReportJobEnd)
    assert (ended.outcome, ended.exit_code, ended.reason) == ("finished", 0, "done_by_earlier_attempt")
    assert h.book.jobs["j"].state is TaskState.FINISHED
    assert h.launched(h.offer(BURST2)) == []  # never launched again
    again = h(JobStoreChecked("j", "gone", True))
    assert not of(again, ReportJobEnd) and records(again, "job_gone_ignored")


def test_job_gone_is_ignored_for_first_attempts_and_running_jobs():
    h = Harness()
    h.issue("q")
    cmds = h(JobStoreChecked("q", "gone", True))  # never ran: nothing can have committed it
    assert not of(cmds, ReportJobEnd) and h.book.jobs["q"].state is TaskState.QUEUED
    h2 = Harness()
    h2.run("r", agent=BURST)
    cmds = h2(JobStoreChecked("r", "gone", True))
    assert not of(cmds, ReportJobEnd) and h2.book.jobs["r"].state is TaskState.RUNNING
    assert not of(h(JobStoreChecked("unknown", "gone", True)), ReportJobEnd)


def test_requeued_job_runs_again_once_the_job_store_says_its_work_is_not_there():
    h = Harness()
    h.run(agent=BURST, job_store_id="kind/job-1")
    h(AgentLost("burst"))
    cmds = h.offer(BURST2)
    assert h.launched(cmds) == [] and of(cmds, DeclineOffers)[0].refuse_seconds == 1.0  # briefly: work is held
    assert not of(h(JobStoreChecked("j", "gone", False)), ReportJobEnd)
    assert h.launched(h.offer(BURST2)) == [("j.2", "burst2")]


def test_a_job_without_a_job_store_id_is_not_held():
    h = Harness()
    h.run(agent=BURST)
    assert not of(h(AgentLost("burst")), CheckJobStore)
    assert h.launched(h.offer(BURST2)) == [("j.2", "burst2")]
