"""JobBook (plastic/core/book/jobbook.py): the framework's pure state machine, one scenario per rule."""

from __future__ import annotations

import pytest

from plastic.core.book.commands import (
    Acknowledge,
    DeclineOffers,
    KillTask,
    LaunchTasks,
    Reconcile,
    ReportJobEnd,
    ReportUnplaceable,
    ReviveOffers,
    SuppressOffers,
)
from plastic.core.book.events import (
    AgentLost,
    AgentSeen,
    AgentsIgnored,
    KillRequested,
    NoticeReceived,
    OfferRescinded,
    Reconnected,
    StatusReceived,
    Tick,
)
from plastic.core.book.jobs import exit_code_of, split_task_id
from plastic.core.book.lifecycle import TaskState
from plastic.core.book.placement import AgentInfo
from plastic.core.book.records import TaskStateChanged
from plastic.core.model import RELIABLE, Preempt, Resources, TaskUsage
from tests.fakes.jobbook import BURST, BURST2, CORE, Harness
from tests.fakes.records import of, records


def test_task_ids_and_exit_codes():
    assert split_task_id("toil-7.3") == ("toil-7", 3)
    assert split_task_id("a.b.12") == ("a.b", 12)
    assert split_task_id("nodots") is None
    assert exit_code_of("Command exited with status 3") == 3
    assert exit_code_of("whatever") is None


def test_happy_path_finished_once_and_acknowledged_after():
    h = Harness()
    cmds = h.issue("j")
    assert of(cmds, ReviveOffers) and not of(cmds, LaunchTasks)
    cmds = h.offer(CORE)
    assert h.launched(cmds) == [("j.1", "core")]
    assert records(cmds, "placed")[0]["why"]
    assert of(cmds, SuppressOffers)  # nothing left queued
    assert h.book.jobs["j"].state is TaskState.LAUNCHING
    h.status("j.1", "TASK_STARTING", agent_id="core")
    cmds = h.status("j.1", "TASK_RUNNING", agent_id="core")
    assert h.book.jobs["j"].state is TaskState.RUNNING and of(cmds, Acknowledge)
    assert h.book.running_job_ids() == ["j"]
    h.now += 10
    cmds = h.status("j.1", "TASK_FINISHED", agent_id="core", message="Command exited with status 0", uuid="fin")
    ended = of(cmds, ReportJobEnd)
    assert ended == [ReportJobEnd("j", "finished", 0, pytest.approx(11.0), "j.1", None, "Command exited with status 0")]
    assert isinstance(cmds[-1], Acknowledge) and cmds[-1].uuid == "fin"
    assert cmds.index(ended[0]) < cmds.index(cmds[-1])
    # the same update again (ack lost): acknowledged again, no second ReportJobEnd
    cmds = h.status("j.1", "TASK_FINISHED", agent_id="core", uuid="fin")
    assert not of(cmds, ReportJobEnd) and of(cmds, Acknowledge)


def test_failed_exit_code_from_message_or_field():
    h = Harness()
    t = h.run("a")
    cmds = h.status(t, "TASK_FAILED", message="Command exited with status 3")
    assert of(cmds, ReportJobEnd)[0].outcome == "failed" and of(cmds, ReportJobEnd)[0].exit_code == 3
    t = h.run("b")
    assert of(h.status(t, "TASK_FAILED", exit_code=7, message="Command exited with status 3"), ReportJobEnd)[0].exit_code == 7
    t = h.run("c")
    e, = of(h.status(t, "TASK_ERROR", message="bad task info"), ReportJobEnd)
    assert (e.outcome, e.exit_code) == ("failed", 255)


def test_kill_running_job():
    h = Harness()
    t = h.run()
    cmds = h(KillRequested("j"))
    assert of(cmds, KillTask) == [KillTask(t, "core")]
    assert h.book.jobs["j"].state is TaskState.KILLING
    h.status(t, "TASK_KILLING")
    e, = of(h.status(t, "TASK_KILLED"), ReportJobEnd)
    assert e.outcome == "killed"
    assert not of(h(KillRequested("j")), KillTask)  # already ended


def test_kill_queued_job_ends_at_once():
    h = Harness()
    h.issue()
    cmds = h(KillRequested("j"))
    assert of(cmds, ReportJobEnd)[0].outcome == "killed" and of(cmds, SuppressOffers)
    assert not h.launched(h.offer(CORE))


def test_agent_loss_requeues_under_new_task_id_without_jobended():
    h = Harness()
    t = h.run(agent=BURST)
    cmds = h(AgentLost("burst"))
    assert not of(cmds, ReportJobEnd) and of(cmds, ReviveOffers)
    job = h.book.jobs["j"]
    assert (job.state, job.attempt, job.preemptions) == (TaskState.QUEUED, 2, 1)
    assert records(cmds, "requeue")[0]["counted_as"] == "preempted"
    assert h.launched(h.offer(BURST2)) == [("j.2", "burst2")]
    # the old attempt's late updates are acknowledged and ignored
    cmds = h.status(t, "TASK_LOST", uuid="late")
    assert not of(cmds, ReportJobEnd) and of(cmds, Acknowledge) and records(cmds, "stale_status")
    assert h.book.jobs["j"].preemptions == 1
    h.status("j.2", "TASK_RUNNING")
    assert of(h.status("j.2", "TASK_FINISHED"), ReportJobEnd)[0].mesos_task_id == "j.2"


@pytest.mark.parametrize("state", ["TASK_LOST", "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR",
                                   "TASK_UNKNOWN"])
def test_loss_states_requeue(state):
    h = Harness()
    t = h.run(agent=BURST)
    cmds = h.status(t, state, reason="REASON_AGENT_REMOVED")
    assert not of(cmds, ReportJobEnd)
    assert h.book.jobs["j"].state is TaskState.QUEUED and h.book.jobs["j"].preemptions == 1


def test_dropped_launch_requeues_without_counting():
    h = Harness()
    h.issue()
    h.offer(BURST)
    h.status("j.1", "TASK_DROPPED")
    job = h.book.jobs["j"]
    assert (job.state, job.attempt, job.preemptions, job.losses) == (TaskState.QUEUED, 2, 0, 0)


def test_losses_on_reliable_agents_are_bounded():
    h = Harness(max_lost_relaunches=1)
    t = h.run(agent=CORE, preempt=RELIABLE)
    h.status(t, "TASK_LOST")
    assert h.book.jobs["j"].losses == 1 and h.book.jobs["j"].state is TaskState.QUEUED
    h.offer(CORE)
    h.status("j.2", "TASK_RUNNING")
    e, = of(h.status("j.2", "TASK_LOST"), ReportJobEnd)
    assert (e.outcome, e.exit_code) == ("lost_for_good", 255)


def test_stale_running_of_old_attempt_is_killed():
    h = Harness()
    t = h.run(agent=BURST)
    h(AgentLost("burst"))
    cmds = h.status(t, "TASK_RUNNING", agent_id="burst")
    assert of(cmds, KillTask) == [KillTask(t, "burst")]
    assert h.book.jobs["j"].state is TaskState.QUEUED


def test_preempt_n_escalates_to_reliable_after_n_preemptions():
    h = Harness()
    h.issue("j", preempt=Preempt(2))
    for attempt, agent in ((1, BURST), (2, BURST2)):
        assert h.launched(h.offer(agent)) == [(f"j.{attempt}", agent.agent_id)]
        h.status(f"j.{attempt}", "TASK_RUNNING")
        cmds = h(AgentLost(agent.agent_id))
        h(AgentSeen(agent))  # it comes back (a new spot instance with the same id, for the test)
    assert records(cmds, "escalation") == [{"job_id": "j", "preemptions": 2, "budget": 2}]
    assert h.book.jobs["j"].needs_reliable
    cmds = h.offer(BURST, BURST2)
    assert not h.launched(cmds) and of(cmds, DeclineOffers)
    assert h.launched(h.offer(CORE, BURST)) == [("j.3", "core")]


def test_reliable_job_never_on_preemptible_agent():
    h = Harness()
    h.issue("r", preempt=RELIABLE)
    assert not h.launched(h.offer(BURST, BURST2))
    assert h.launched(h.offer(BURST, CORE)) == [("r.1", "core")]


def test_preemptible_job_prefers_burst():
    h = Harness()
    h.issue("p")
    assert h.launched(h.offer(CORE, BURST)) == [("p.1", "burst")]


def test_unused_offers_declined():
    h = Harness()
    h.issue("j")
    cmds = h.offer(CORE, BURST)
    d, = of(cmds, DeclineOffers)
    assert len(d.offer_ids) == 1
    cmds = h.offer(CORE)  # nothing queued any more
    assert of(cmds, DeclineOffers)[0].refuse_seconds == 5.0


def test_notice_kills_long_job_and_requeues_it():
    h = Harness(estimates={"long": 3600.0})
    t = h.run("j", agent=BURST, tool="long")
    cmds = h(NoticeReceived("burst", terminate_at=h.now + 120))
    assert of(cmds, KillTask) == [KillTask(t, "burst")]
    assert records(cmds, "notice") and records(cmds, "drain_kill")
    assert h.book.jobs["j"].state is TaskState.KILLING
    # no new placement on the draining agent
    h.issue("other", tool="long")
    assert h.launched(h.offer(BURST)) == []
    h.status(t, "TASK_KILLING")
    cmds = h.status(t, "TASK_KILLED")
    assert not of(cmds, ReportJobEnd)
    job = h.book.jobs["j"]
    assert (job.state, job.attempt, job.preemptions) == (TaskState.QUEUED, 2, 1)
    assert sorted(h.launched(h.offer(BURST2))) == [("j.2", "burst2"), ("other.1", "burst2")]


def test_a_task_that_ends_before_its_notice_kill_lands_ends_as_it_did():
    """The kill and the task's own exit cross: the agent reports TASK_FINISHED (it no longer had the task when
    the kill came), so the job ends finished on that agent, is not requeued and is no preemption."""
    h = Harness(estimates={"long": 3600.0})
    t = h.run("j", agent=BURST, tool="long")
    assert of(h(NoticeReceived("burst", terminate_at=h.now + 120)), KillTask) == [KillTask(t, "burst")]
    cmds = h.status(t, "TASK_FINISHED")
    assert [(e.outcome, e.exit_code) for e in of(cmds, ReportJobEnd)] == [("finished", 0)]
    assert not records(cmds, "requeue")
    job = h.book.jobs["j"]
    assert (job.state, job.attempt, job.preemptions) == (TaskState.FINISHED, 1, 0)


def test_notice_lets_short_job_finish():
    h = Harness(estimates={"short": 30.0}, notice_margin_s=30)
    t = h.run("j", agent=BURST, tool="short")
    cmds = h(NoticeReceived("burst", terminate_at=h.now + 120))
    assert not of(cmds, KillTask) and records(cmds, "let_finish")
    h(Tick(), dt=5)
    assert of(h.status(t, "TASK_FINISHED"), ReportJobEnd)[0].outcome == "finished"


def test_kept_job_that_overruns_is_killed_before_the_deadline():
    h = Harness(estimates={"short": 30.0}, notice_margin_s=30)
    t = h.run("j", agent=BURST, tool="short")
    h(NoticeReceived("burst", terminate_at=h.now + 120))
    assert not of(h(Tick(), dt=60), KillTask)
    assert of(h(Tick(), dt=40), KillTask) == [KillTask(t, "burst")]  # within the margin of the end


def test_a_short_notice_keeps_a_quarter_of_its_window_as_margin():
    """A 10 s notice (the local cluster's --notice-seconds 10) lets a task with 7 s left finish: the
    margin is 2.5 s, not the 30 s that would kill every task at once; one with 8 s left is killed."""
    h = Harness(estimates={"short": 11.0, "longer": 8.0}, notice_margin_s=30)
    ends_soon = h.run("a", agent=BURST, tool="short")  # RUNNING at 4 s
    later = h.run("b", agent=BURST, tool="longer")  # RUNNING at 8 s: a has 7 s left, b 8 s
    cmds = h(NoticeReceived("burst", terminate_at=h.now + 10), dt=0)
    assert of(cmds, KillTask) == [KillTask(later, "burst")]
    assert [r["job_id"] for r in records(cmds, "let_finish")] == ["a"]
    assert h.book.notices.margin_for("burst") == 2.5 and h.book.notices.margin_for("core") == 30
    assert not of(h(Tick(), dt=5), KillTask)  # 2 s left, 5 s to go: still fits
    assert of(h.status(ends_soon, "TASK_FINISHED"), ReportJobEnd)[0].outcome == "finished"


def test_aws_two_minute_notice_keeps_the_whole_margin():
    h = Harness(estimates={"edge": 91.0}, notice_margin_s=30)
    t = h.run("j", agent=BURST, tool="edge")  # 90 s left + 30 s margin > 120 s: killed
    assert of(h(NoticeReceived("burst", terminate_at=h.now + 120), dt=0), KillTask) == [KillTask(t, "burst")]


def test_notice_deadline_passed_requeues():
    h = Harness(estimates={"long": 3600.0})
    t = h.run("j", agent=BURST, tool="long")
    h(NoticeReceived("burst", terminate_at=h.now + 120))
    cmds = h(Tick(), dt=200)  # no TASK_KILLED came: the instance is gone anyway
    assert h.book.jobs["j"].state is TaskState.QUEUED and not of(cmds, ReportJobEnd)
    assert not of(h.status(t, "TASK_KILLED"), ReportJobEnd)


def test_duplicate_notices_handled_once():
    h = Harness(estimates={"long": 3600.0})
    h.run("j", agent=BURST, tool="long")
    first = h(NoticeReceived("burst", terminate_at=h.now + 120))
    assert len(of(first, KillTask)) == 1
    for _ in range(20):
        cmds = h(NoticeReceived("burst", terminate_at=h.now + 120))
        assert not of(cmds, KillTask) and records(cmds, "duplicate_notice")


def test_agent_draining_kill_is_a_preemption():
    h = Harness()
    t = h.run("j", agent=CORE)
    cmds = h.status(t, "TASK_KILLED", reason="REASON_AGENT_DRAINING")
    assert not of(cmds, ReportJobEnd) and h.book.jobs["j"].state is TaskState.QUEUED


def test_unexplained_kill_is_a_failure():
    h = Harness()
    t = h.run("j")
    e, = of(h.status(t, "TASK_KILLED"), ReportJobEnd)
    assert e.outcome == "failed"


def test_rebalance_stops_long_tasks_only():
    h = Harness(estimates={"short": 10.0, "long": 3600.0})
    h(AgentSeen(BURST))
    h(AgentSeen(BURST2))  # another agent could take the long task (else it may go to burst: test_jobbook_spot)
    cmds = h(NoticeReceived("burst", terminate_at=h.now + 900, kind="rebalance"))
    assert not of(cmds, KillTask)
    h.issue("L", tool="long")
    h.issue("S", tool="short")
    assert h.launched(h.offer(BURST)) == [("S.1", "burst")]
    assert h.launched(h.offer(BURST2)) == [("L.1", "burst2")]
    h2 = Harness(estimates={"long": 3600.0}, rebalance="ignore")
    h2(NoticeReceived("burst", terminate_at=900, kind="rebalance"))
    h2.issue("L", tool="long")
    assert h2.launched(h2.offer(BURST)) == [("L.1", "burst")]


def test_reconnect_reconciles_live_tasks():
    h = Harness()
    t = h.run("a")
    h.issue("b")  # queued: nothing to reconcile
    cmds = h(Reconnected())
    assert of(cmds, Reconcile) == [Reconcile(((t, "core"),))]
    # reconciliation answers carry no uuid: nothing to acknowledge
    cmds = h(StatusReceived(t, "TASK_RUNNING", reason="REASON_RECONCILIATION"))
    assert not of(cmds, Acknowledge)


def test_periodic_reconcile_and_kill_retry():
    h = Harness(reconcile_every_s=60, kill_retry_s=30)
    t = h.run("a")
    assert of(h(Tick()), Reconcile)
    assert not of(h(Tick(), dt=10), Reconcile)
    assert of(h(Tick(), dt=60), Reconcile)
    h(KillRequested("a"))
    assert of(h(Tick(), dt=31), KillTask) == [KillTask(t, "core")]


def test_suppress_and_revive():
    h = Harness()
    assert of(h(Tick()), SuppressOffers)
    assert not of(h(Tick()), SuppressOffers)  # once
    assert of(h.issue("a"), ReviveOffers)
    assert not of(h.issue("b"), ReviveOffers)
    cmds = h.offer(CORE)
    assert of(cmds, SuppressOffers) and len(h.launched(cmds)) == 2
    cmds = h(AgentLost("core"))
    assert of(cmds, ReviveOffers)


def test_unplaceable_reported_once_and_kept_queued():
    h = Harness()
    h(AgentSeen(CORE))
    cmds = h.issue("big", demand=Resources(64, 1024))
    assert of(cmds, ReportUnplaceable)[0].job_id == "big" and not of(cmds, ReportJobEnd)
    cmds = h.offer(CORE)
    assert not of(cmds, ReportUnplaceable) and not h.launched(cmds)
    assert h.book.jobs["big"].state is TaskState.QUEUED
    huge = AgentInfo("huge", Resources(96, 393216), preemptible=False)
    assert h.launched(h.offer(huge)) == [("big.1", "huge")]


def test_unplaceable_fails_when_cluster_cannot_grow():
    h = Harness(cluster_may_grow=False)
    h(AgentSeen(BURST))
    cmds = h.issue("r", preempt=RELIABLE)
    e, = of(cmds, ReportJobEnd)
    assert e.outcome == "failed" and "reliable" in e.message


def test_reliable_agents_gone_makes_queued_work_unplaceable():
    h = Harness()
    h(AgentSeen(CORE))
    h(AgentSeen(BURST))
    h.issue("r", preempt=RELIABLE)
    cmds = h(AgentLost("core"))
    assert [u.job_id for u in of(cmds, ReportUnplaceable)] == ["r"]


def test_unknown_task_status_acknowledged():
    h = Harness()
    cmds = h.status("nobody.1", "TASK_RUNNING", uuid="x")
    assert of(cmds, Acknowledge) and records(cmds, "unknown_task") and not of(cmds, KillTask)


def test_rescind_is_recorded():
    h = Harness()
    assert records(h(OfferRescinded("o1")), "rescinded")


def test_leader_kill_during_loss_ends_killed():
    h = Harness()
    t = h.run("j", agent=BURST)
    h(KillRequested("j"))
    e, = of(h(AgentLost("burst")), ReportJobEnd)
    assert e.outcome == "killed"
    assert not of(h.status(t, "TASK_KILLED"), ReportJobEnd)


def test_an_ignored_agents_offers_are_declined_and_it_is_revived_when_it_takes_work_again():
    h = Harness()
    h(AgentsIgnored(("burst",)))
    h.issue("j")
    cmds = h.offer(BURST)
    assert not of(cmds, LaunchTasks) and of(cmds, DeclineOffers) and records(cmds, "declined_ignored")
    # taken back while work waits: its offers come now, not when the decline's filter ends
    assert of(h(AgentsIgnored(("burst",), ignored=False)), ReviveOffers)
    assert h.launched(h.offer(BURST)) == [("j.1", "burst")]
    # nothing queued, or an agent that was not ignored: nothing to revive
    h(AgentsIgnored(("burst2",)))
    assert not of(h(AgentsIgnored(("burst2",), ignored=False)), ReviveOffers)
    h.issue("k")
    assert not of(h(AgentsIgnored(("core",), ignored=False)), ReviveOffers)


@pytest.mark.parametrize("state", ["TASK_FAILED", "TASK_KILLED"])
def test_the_end_of_its_executor_requeues_a_task_as_a_loss_not_a_failure(state):
    h = Harness()
    task = h.run("j", agent=CORE)
    cmds = h.status(task, state, agent_id="core", reason="REASON_EXECUTOR_TERMINATED", message="Executor terminated")
    assert not of(cmds, ReportJobEnd)
    (requeued,) = records(cmds, "requeue")
    assert (requeued["cause"], requeued["counted_as"]) == ("executor_terminated", "lost")
    assert h.book.jobs["j"].state is TaskState.QUEUED


def test_what_a_task_used_rides_on_its_attempt():
    h = Harness()
    task = h.run("j", agent=CORE)
    usage = TaskUsage(cpu_s=1.25, max_rss_mib=300.0, wall_s=2.0)
    cmds = h.status(task, "TASK_FINISHED", agent_id="core", usage=usage)
    (ended,) = [r for r in of(cmds, TaskStateChanged) if r.attempt is not None]
    assert ended.attempt.usage == usage
