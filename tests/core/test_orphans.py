"""Orphans of a previous leader incarnation (plastic.core.orphans, JobBook Resumed), with explicit `now`."""

from __future__ import annotations

from plastic.core.jobbook import (
    Acknowledge,
    JobBook,
    KillTask,
    Reconcile,
    Record,
    Resumed,
    StatusReceived,
    Tick,
)
from plastic.core.orphans import Orphans


def recs(cmds, kind):
    return [c for c in cmds if isinstance(c, Record) and c.kind == kind]


def test_resumed_reconciles_known_and_implicitly():
    book = JobBook()
    cmds = book.handle(Resumed((("3.1", "a1"), ("4.2", None))), 0.0)
    reconciles = [c for c in cmds if isinstance(c, Reconcile)]
    assert reconciles == [Reconcile((("3.1", "a1"), ("4.2", None))), Reconcile(())]
    assert book.orphans_left() == 2 and recs(cmds, "resumed")


def test_running_orphan_is_killed_once_then_forgotten():
    book = JobBook(kill_retry_s=30.0)
    book.handle(Resumed((("3.1", "a1"),)), 0.0)
    cmds = book.handle(StatusReceived("3.1", "TASK_RUNNING", agent_id="a1"), 1.0)
    assert [c for c in cmds if isinstance(c, KillTask)] == [KillTask("3.1", "a1")]
    assert recs(cmds, "orphan_kill")
    again = book.handle(StatusReceived("3.1", "TASK_RUNNING", agent_id="a1"), 2.0)
    assert not [c for c in again if isinstance(c, KillTask)]
    assert [c for c in book.handle(Tick(), 31.5) if isinstance(c, KillTask)] == [KillTask("3.1", "a1")]
    cmds = book.handle(StatusReceived("3.1", "TASK_KILLED", agent_id="a1", uuid="u1"), 32.0)
    assert recs(cmds, "orphan_ended")[0].fields["state"] == "TASK_KILLED"
    assert [c for c in cmds if isinstance(c, Acknowledge)]
    assert book.orphans_left() == 0
    book.validate()


def test_orphan_finished_while_leader_was_down_is_only_acknowledged():
    book = JobBook()
    book.handle(Resumed((("3.1", "a1"),)), 0.0)
    cmds = book.handle(StatusReceived("3.1", "TASK_FINISHED", agent_id="a1", uuid="u"), 0.5)
    assert not [c for c in cmds if isinstance(c, KillTask)]
    assert [c for c in cmds if isinstance(c, Acknowledge)] and recs(cmds, "orphan_ended")
    assert book.orphans_left() == 0


def test_unknown_task_after_resume_is_an_orphan_and_silent_orphans_are_given_up():
    book = JobBook()
    book.handle(Resumed((("3.1", "a1"),)), 0.0)
    cmds = book.handle(StatusReceived("9.1", "TASK_RUNNING", agent_id="a2"), 1.0)  # learnt from the implicit answer
    assert [c for c in cmds if isinstance(c, KillTask)] == [KillTask("9.1", "a2")]
    cmds = book.handle(Tick(), 30.0)
    assert [r.fields["task"] for r in recs(cmds, "orphan_unknown")] == ["3.1"]
    assert book.orphans_left() == 1  # 9.1 still being killed


def test_orphans_alone():
    o = Orphans(confirm_s=5.0, kill_retry_s=10.0)
    o.expect("1.1", "a", 0.0)
    assert o.status("1.1", "TASK_KILLING", "a", 1.0).action == "none"
    assert [s.action for s in o.tick(11.0)] == ["kill"]
    assert o.status("1.1", "TASK_LOST", "a", 12.0).action == "ended"
    assert o.status("1.1", "TASK_RUNNING", "a", 13.0).action == "none"  # a late duplicate
    o.expect("1.1", "a", 14.0)  # already accounted for
    assert len(o) == 0


def test_before_resume_unknown_tasks_are_only_recorded():
    book = JobBook()
    cmds = book.handle(StatusReceived("9.1", "TASK_RUNNING", agent_id="a2"), 1.0)
    assert recs(cmds, "unknown_task") and not [c for c in cmds if isinstance(c, KillTask)]
