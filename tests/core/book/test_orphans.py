"""Orphans of a previous leader incarnation (plastic.core.book.orphans, JobBook Resumed), with explicit `now`."""

from __future__ import annotations

from plastic.core.book.commands import (
    Acknowledge,
    CheckJobStore,
    KillTask,
    LoadRuntimeHistory,
    Reconcile,
)
from plastic.core.book.events import (
    JobIssued,
    JobStoreChecked,
    NoticeReceived,
    PriorTask,
    Resumed,
    RuntimeHistoryLoaded,
    StatusReceived,
    Tick,
)
from plastic.core.book.jobbook import JobBook
from plastic.core.book.lifecycle import TaskState
from plastic.core.book.orphans import Orphans
from plastic.core.book.records import Record, TaskStateChanged
from plastic.core.model import Preempt, Resources


def step(book, event, now):
    """What the book decided, its records then its commands, in one list."""
    decided = book.handle(event, now)
    return [*decided.records, *decided.commands]


def recs(cmds, kind):
    return [c for c in cmds if isinstance(c, Record) and c.kind == kind]


def prior(task_id, agent_id=None, *, tool=None, running_s=None, job_store_id=None, state=None):
    """The run's record of a previous leader's live task (RUNNING for running_s, else LAUNCHING)."""
    state = state or ("RUNNING" if running_s is not None else "LAUNCHING")
    return PriorTask(task_id.split(".")[0], state, task_id, agent_id, tool, job_store_id, running_s)


def book_with(estimates=None, **kw):
    book = JobBook(**kw)
    for tool, seconds in (estimates or {}).items():
        step(book, RuntimeHistoryLoaded(tool, (seconds,)), 0.0)
    return book


def test_resumed_reconciles_known_and_implicitly():
    book = JobBook()
    cmds = step(book, Resumed((prior("3.1", "a1"), prior("4.2", None))), 0.0)
    reconciles = [c for c in cmds if isinstance(c, Reconcile)]
    assert reconciles == [Reconcile((("3.1", "a1"), ("4.2", None))), Reconcile(())]
    assert book.orphans_left() == 2 and recs(cmds, "resumed")


def test_running_orphan_is_killed_once_then_forgotten_without_an_adopt_window():
    book = JobBook(kill_retry_s=30.0)  # adopt_s = 0: nothing is adopted
    step(book, Resumed((prior("3.1", "a1"),)), 0.0)
    cmds = step(book, StatusReceived("3.1", "TASK_RUNNING", agent_id="a1"), 1.0)
    assert [c for c in cmds if isinstance(c, KillTask)] == [KillTask("3.1", "a1")]
    assert recs(cmds, "orphan_kill")
    again = step(book, StatusReceived("3.1", "TASK_RUNNING", agent_id="a1"), 2.0)
    assert not [c for c in again if isinstance(c, KillTask)]
    assert [c for c in step(book, Tick(), 31.5) if isinstance(c, KillTask)] == [KillTask("3.1", "a1")]
    cmds = step(book, StatusReceived("3.1", "TASK_KILLED", agent_id="a1", uuid="u1"), 32.0)
    assert recs(cmds, "orphan_ended")[0].fields["state"] == "TASK_KILLED"
    assert [c for c in cmds if isinstance(c, Acknowledge)]
    assert book.orphans_left() == 0
    book.validate()


def test_orphan_finished_while_leader_was_down_is_only_acknowledged():
    book = JobBook()
    step(book, Resumed((prior("3.1", "a1"),)), 0.0)
    cmds = step(book, StatusReceived("3.1", "TASK_FINISHED", agent_id="a1", uuid="u"), 0.5)
    assert not [c for c in cmds if isinstance(c, KillTask)]
    assert [c for c in cmds if isinstance(c, Acknowledge)] and recs(cmds, "orphan_ended")
    assert book.orphans_left() == 0


def test_unknown_task_after_resume_is_an_orphan_and_silent_orphans_are_given_up():
    book = JobBook()
    step(book, Resumed((prior("3.1", "a1"),)), 0.0)
    cmds = step(book, StatusReceived("9.1", "TASK_RUNNING", agent_id="a2"), 1.0)  # learnt from the implicit answer
    assert [c for c in cmds if isinstance(c, KillTask)] == [KillTask("9.1", "a2")]
    cmds = step(book, Tick(), 30.0)
    assert [r.fields["task"] for r in recs(cmds, "orphan_unknown")] == ["3.1"]
    assert book.orphans_left() == 1  # 9.1 still being killed


def test_orphans_alone():
    o = Orphans(confirm_s=5.0, kill_retry_s=10.0)
    o.expect(prior("1.1", "a"), 0.0)
    assert o.status("1.1", "TASK_KILLING", "a", 1.0).action == "none"
    assert [s.action for s in o.tick(11.0)] == ["kill"]
    assert o.status("1.1", "TASK_LOST", "a", 12.0).action == "ended"
    assert o.status("1.1", "TASK_RUNNING", "a", 13.0).action == "none"  # a late duplicate
    o.expect(prior("1.1", "a"), 14.0)  # already accounted for
    assert len(o) == 0


def test_before_resume_unknown_tasks_are_only_recorded():
    book = JobBook()
    cmds = step(book, StatusReceived("9.1", "TASK_RUNNING", agent_id="a2"), 1.0)
    assert recs(cmds, "unknown_task") and not [c for c in cmds if isinstance(c, KillTask)]


# ---------------------------------------------------------------- adoption


def kills(cmds):
    return [c for c in cmds if isinstance(c, KillTask)]


def test_running_orphan_that_fits_the_window_is_adopted_and_its_end_recorded():
    estimates = {"align": 100.0}
    book = book_with(estimates, adopt_s=300.0)
    step(book, Resumed((prior("3.1", "a1", tool="align", running_s=60.0),)), 0.0)
    cmds = step(book, StatusReceived("3.1", "TASK_RUNNING", agent_id="a1"), 1.0)
    assert not kills(cmds)
    adopted = recs(cmds, "orphan_adopted")
    assert adopted and adopted[0].fields["remaining_estimate_s"] == 39.0  # 100 - (60 + 1)
    assert not kills(step(book, Tick(), 200.0))  # still inside the window
    cmds = step(book, StatusReceived("3.1", "TASK_FINISHED", agent_id="a1", uuid="u"), 210.0)
    ended = recs(cmds, "orphan_ended")[0].fields
    assert ended["state"] == "TASK_FINISHED" and ended["adopted"] is True
    assert book.orphans_left() == 0


def test_running_orphan_expected_to_outlast_the_window_is_killed_at_once():
    book = book_with({"long": 3600.0}, adopt_s=300.0)
    step(book, Resumed((prior("3.1", "a1", tool="long", running_s=10.0),)), 0.0)
    cmds = step(book, StatusReceived("3.1", "TASK_RUNNING", agent_id="a1"), 1.0)
    assert kills(cmds) == [KillTask("3.1", "a1")]
    assert recs(cmds, "orphan_kill")[0].fields["reason"] == "no_fit"
    ended = recs(step(book, StatusReceived("3.1", "TASK_KILLED", agent_id="a1"), 2.0), "orphan_ended")[0]
    assert ended.fields["adopted"] is False


def test_adopted_orphan_still_running_when_the_window_closes_is_killed():
    book = JobBook(adopt_s=120.0)  # no estimate: adopted for the whole window
    step(book, Resumed((prior("3.1", "a1", tool="mystery"),)), 0.0)
    assert recs(step(book, StatusReceived("3.1", "TASK_RUNNING", agent_id="a1"), 1.0), "orphan_adopted")
    assert not kills(step(book, Tick(), 119.0))
    cmds = step(book, Tick(), 120.0)
    assert kills(cmds) == [KillTask("3.1", "a1")]
    assert recs(cmds, "orphan_kill")[0].fields["reason"] == "adopt_window"
    assert book.orphans_left() == 1  # until the master confirms the kill


def test_window_runs_from_the_resume_not_from_each_answer():
    book = book_with({"t": 50.0}, adopt_s=100.0)
    step(book, Resumed((prior("3.1", "a1", tool="t", running_s=0.0),)), 0.0)
    # the answer comes late: 80 s into the window, 50 - 80 < 0 s left by the estimate -> fits
    assert recs(step(book, StatusReceived("3.1", "TASK_RUNNING", agent_id="a1"), 80.0), "orphan_adopted")
    # a task learnt from the implicit answer after the window closed is killed
    assert kills(step(book, StatusReceived("9.1", "TASK_RUNNING", agent_id="a2"), 101.0)) == [KillTask("9.1", "a2")]


def test_estimate_uses_time_already_run():
    o = Orphans(adopt_s=100.0, runtime_estimate={"t": 150.0}.get)
    o.begin(0.0)
    o.expect(prior("1.1", "a", tool="t", running_s=70.0), 0.0)
    o.expect(prior("2.1", "a", tool="t", running_s=10.0), 0.0)
    assert o.status("1.1", "TASK_RUNNING", "a", 0.0).action == "adopt"  # 80 s left <= 100
    assert o.status("2.1", "TASK_RUNNING", "a", 0.0).action == "kill"  # 140 s left > 100
    assert o.adopted() == 1


def test_framework_removed_before_the_resume_ends_every_orphan_at_once():
    book = JobBook(adopt_s=300.0)
    cmds = step(book, Resumed((prior("3.1", "a1"), prior("4.1", "a2")), framework_removed=True), 0.0)
    ended = recs(cmds, "orphan_ended")
    assert [(r.fields["task"], r.fields["state"], r.fields["reason"]) for r in ended] == [
        ("3.1", "TASK_KILLED", "framework_removed"), ("4.1", "TASK_KILLED", "framework_removed")]
    assert not [c for c in cmds if isinstance(c, Reconcile)] and book.orphans_left() == 0


def test_an_end_the_master_cannot_tell_is_checked_against_the_job_store():
    book = JobBook(adopt_s=300.0)
    step(book, Resumed((prior("3.1", "a1", job_store_id="js-3"), prior("4.1", "a1", job_store_id="js-4"),
                         prior("5.1", "a1"))), 0.0)
    cmds = step(book, StatusReceived("3.1", "TASK_GONE", agent_id="a1"), 1.0)
    assert [r.fields["job_store_id"] for r in recs(cmds, "orphan_check")] == ["js-3"] and not recs(cmds, "orphan_ended")
    assert book.orphans_left() == 3  # still waiting for the answer
    assert [c for c in cmds if isinstance(c, CheckJobStore)] == [CheckJobStore("3.1", "js-3", "committed")]
    cmds = step(book, JobStoreChecked("3.1", "committed", True), 1.5)
    ended = recs(cmds, "orphan_ended")[0].fields
    assert (ended["state"], ended["reason"]) == ("TASK_FINISHED", "job_store")
    (moved,) = [c for c in cmds if isinstance(c, TaskStateChanged)]  # the old leader's record of job 3
    assert (moved.job_id, moved.from_state, moved.to_state) == ("3", None, TaskState.FINISHED)
    assert moved.details == {"outcome": "orphan task_finished (job_store)"}
    step(book, StatusReceived("4.1", "TASK_GONE", agent_id="a1"), 2.0)
    ended = recs(step(book, JobStoreChecked("4.1", "committed", False), 2.5), "orphan_ended")[0].fields
    assert ended["state"] == "TASK_GONE"
    # no job store id: nothing to check
    assert recs(step(book, StatusReceived("5.1", "TASK_GONE", agent_id="a1"), 3.0), "orphan_ended")
    assert book.orphans_left() == 0
    assert not step(book, JobStoreChecked("3.1", "committed", True), 4.0)  # a late answer changes nothing


def test_silent_and_removed_orphans_are_checked_too():
    book = JobBook()
    step(book, Resumed((prior("3.1", "a1", job_store_id="js-3"),)), 0.0)
    cmds = step(book, Tick(), 30.0)  # no answer for confirm_s
    assert recs(cmds, "orphan_check") and not recs(cmds, "orphan_unknown")
    assert recs(step(book, JobStoreChecked("3.1", "committed", False), 30.5), "orphan_unknown")
    removed = JobBook()
    cmds = step(removed, Resumed((prior("3.1", "a1", job_store_id="js-3"),), framework_removed=True), 0.0)
    assert recs(cmds, "orphan_check")[0].fields["reason"] == "framework_removed"
    ended = recs(step(removed, JobStoreChecked("3.1", "committed", False), 0.5), "orphan_ended")[0].fields
    assert (ended["state"], ended["reason"]) == ("TASK_KILLED", "framework_removed")


def test_a_terminate_notice_kills_adopted_orphans_that_would_not_end_in_time():
    book = book_with({"short": 20.0, "long": 200.0}, adopt_s=300.0, notice_margin_s=30.0)
    step(book, Resumed((prior("3.1", "a1", tool="short", running_s=0.0),
                         prior("4.1", "a1", tool="long", running_s=0.0),
                         prior("5.1", "a2", tool="long", running_s=0.0))), 0.0)
    for task, agent in (("3.1", "a1"), ("4.1", "a1"), ("5.1", "a2")):
        assert recs(step(book, StatusReceived(task, "TASK_RUNNING", agent_id=agent), 1.0), "orphan_adopted")
    cmds = step(book, NoticeReceived("a1", terminate_at=121.0), 1.0)  # a 120 s window on a1
    kills_ = recs(cmds, "orphan_kill")
    assert [(r.fields["task"], r.fields["reason"]) for r in kills_] == [("4.1", "notice")]  # 200 s > window
    assert KillTask("4.1", "a1") in cmds and KillTask("3.1", "a1") not in cmds


def test_a_short_notice_lets_an_adopted_orphan_that_ends_in_it_finish():
    """A 20 s window keeps a 5 s margin (a quarter), not 30 s: an orphan with 10 s left stays."""
    book = book_with({"short": 11.0, "long": 200.0}, adopt_s=300.0, notice_margin_s=30.0)
    step(book, Resumed((prior("3.1", "a1", tool="short", running_s=0.0),
                         prior("4.1", "a1", tool="long", running_s=0.0))), 0.0)
    for task in ("3.1", "4.1"):
        assert recs(step(book, StatusReceived(task, "TASK_RUNNING", agent_id="a1"), 1.0), "orphan_adopted")
    cmds = step(book, NoticeReceived("a1", terminate_at=21.0), 1.0)
    assert [r.fields["task"] for r in recs(cmds, "orphan_kill")] == ["4.1"]
    assert KillTask("3.1", "a1") not in cmds


def test_an_orphan_first_seen_running_on_a_doomed_agent_is_not_adopted_past_the_notice():
    book = JobBook(adopt_s=300.0)  # no estimates
    step(book, Resumed((prior("3.1", "a1"),)), 0.0)
    step(book, NoticeReceived("a1", terminate_at=120.0), 0.5)
    cmds = step(book, StatusReceived("3.1", "TASK_RUNNING", agent_id="a1"), 1.0)
    assert recs(cmds, "orphan_kill")[0].fields["reason"] == "notice" and not recs(cmds, "orphan_adopted")


def test_the_previous_leaders_queued_records_end_killed_and_live_ones_become_orphans():
    book = JobBook(adopt_s=300.0)
    cmds = step(book, Resumed((PriorTask("7", "QUEUED", tool="sort"), prior("8.1", "a1", tool="sort", running_s=5.0),
                                PriorTask("9", "LAUNCHING"))), 0.0)  # never got a Mesos task id
    assert not [c for c in cmds if isinstance(c, TaskStateChanged)]  # QUEUED: launched or not, not known yet
    assert recs(cmds, "resumed")[0].fields["known"] == ["8.1"] and book.orphans_left() == 1
    assert [c for c in cmds if isinstance(c, LoadRuntimeHistory)] == [LoadRuntimeHistory("sort")]
    cmds = step(book, StatusReceived("8.1", "TASK_FINISHED", agent_id="a1", uuid="u"), 1.0)
    (moved,) = [c for c in cmds if isinstance(c, TaskStateChanged)]
    assert (moved.job_id, moved.to_state, moved.details) == ("8", TaskState.FINISHED,
                                                            {"outcome": "orphan task_finished"})
    # Toil issues again (the orphans are accounted for): the QUEUED record no task turned up for ends
    cmds = step(book, JobIssued("20", Resources(1, 256), Preempt(None), tool="sort"), 2.0)
    moves = [c for c in cmds if isinstance(c, TaskStateChanged)]
    assert [(m.job_id, m.from_state, m.to_state, m.details) for m in moves][0] == (
        "7", TaskState.QUEUED, TaskState.KILLED, {"outcome": "leader_restarted"})


def test_a_queued_record_whose_launch_was_lost_with_the_leader_ends_as_its_task_did():
    """The previous leader launched job 5 but was killed before the store wrote LAUNCHING: the record
    says QUEUED; the implicit reconciliation names task 5.1, finished; the record ends FINISHED."""
    book = JobBook(adopt_s=300.0)
    cmds = step(book, Resumed((PriorTask("5", "QUEUED", tool="sort", job_store_id="js-5"),)), 0.0)
    assert not [c for c in cmds if isinstance(c, TaskStateChanged)]
    cmds = step(book, StatusReceived("5.1", "TASK_FINISHED", agent_id="a1", uuid="u1"), 0.5)
    (moved,) = [c for c in cmds if isinstance(c, TaskStateChanged)]
    assert (moved.job_id, moved.to_state) == ("5", TaskState.FINISHED)
    cmds = step(book, JobIssued("30", Resources(1, 256), Preempt(None), tool="sort"), 3.0)
    assert not [c for c in cmds if isinstance(c, TaskStateChanged) and c.job_id == "5"]


def test_queued_records_end_killed_after_the_confirm_time_when_toil_issues_nothing():
    book = JobBook(adopt_s=300.0)
    step(book, Resumed((PriorTask("6", "QUEUED"),)), 0.0)
    assert not [c for c in step(book, Tick(), 10.0) if isinstance(c, TaskStateChanged)]
    moves = [c for c in step(book, Tick(), 31.0) if isinstance(c, TaskStateChanged)]
    assert [(m.job_id, m.to_state) for m in moves] == [("6", TaskState.KILLED)]
