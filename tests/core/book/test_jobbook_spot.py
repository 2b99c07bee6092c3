"""JobBook: reactions to rebalance recommendations, and provisioning health (idle agents, starving jobs)."""

from __future__ import annotations

import pytest

from plastic.core.book.commands import KillTask
from plastic.core.book.events import AgentLost, AgentSeen, NoticeReceived, Tick
from plastic.core.book.jobbook import JobBook
from plastic.core.book.lifecycle import TaskState
from plastic.core.book.notices import REBALANCE_MODES
from plastic.core.book.placement import AgentInfo
from plastic.core.model import RELIABLE, Resources
from tests.fakes.jobbook import BURST, BURST2, CORE, Harness
from tests.fakes.records import of, records

ESTIMATES = {"short": 10.0, "long": 3600.0}


def rebalanced(mode: str) -> Harness:
    h = Harness(estimates=ESTIMATES, rebalance=mode, idle_agent_s=None, starving_s=None)
    h(AgentSeen(BURST))
    h(AgentSeen(BURST2))
    cmds = h(NoticeReceived("burst", terminate_at=h.now, kind="rebalance"))
    (rec,) = records(cmds, "notice")
    assert rec["notice_kind"] == "rebalance" and rec["reaction"] == mode and "window_s" not in rec
    return h


@pytest.mark.parametrize(("mode", "on_burst"), [
    ("ignore", ["L.1", "S.1", "U.1"]),
    ("avoid-long", ["S.1"]),  # long and unknown-length tasks keep off
    ("drain", []),
])
def test_rebalance_modes(mode, on_burst):
    h = rebalanced(mode)
    for jid, tool in (("L", "long"), ("S", "short"), ("U", None)):
        h.issue(jid, tool=tool)
    assert sorted(t for t, _ in h.launched(h.offer(BURST))) == on_burst
    rest = sorted(t for t, _ in h.launched(h.offer(BURST2)))
    assert sorted(on_burst + rest) == ["L.1", "S.1", "U.1"]


def test_rebalance_never_touches_running_tasks_and_a_terminate_notice_still_applies():
    h = Harness(estimates=ESTIMATES, rebalance="drain")
    t = h.run("j", agent=BURST, tool="long")
    cmds = h(NoticeReceived("burst", terminate_at=h.now, kind="rebalance"))
    assert not of(cmds, KillTask) and h.book.jobs["j"].state is TaskState.RUNNING
    cmds = h(NoticeReceived("burst", terminate_at=h.now + 120))
    assert of(cmds, KillTask) == [KillTask(t, "burst")] and records(cmds, "drain_kill")


def test_a_task_only_rebalancing_agents_can_hold_is_not_kept_waiting():
    """A recommendation is a hint: with no other agent that could ever hold the task, it gives way."""
    h = rebalanced("drain")
    h(NoticeReceived("burst2", terminate_at=h.now, kind="rebalance"))
    h(AgentSeen(CORE))
    h.issue("z", tool="long")
    assert h.launched(h.offer(BURST)) == []  # core could take it: kept off the rebalancing agents
    h(AgentLost("core"))
    assert h.launched(h.offer(BURST)) == [("z.1", "burst")]


def test_unknown_rebalance_mode_is_refused():
    assert REBALANCE_MODES == ("ignore", "avoid-long", "drain")
    with pytest.raises(ValueError, match="avoid-long"):
        JobBook(rebalance="sometimes")  # type: ignore[arg-type]


def test_idle_burst_agent_reported_once_per_idle_period():
    h = Harness(estimates=ESTIMATES, idle_agent_s=300, starving_s=None)
    h(AgentSeen(CORE))  # reliable: never reported
    h(AgentSeen(BURST))
    seen = h.now
    assert not records(h(Tick(), dt=200), "idle_agent")
    (rec,) = records(h(Tick(), dt=150), "idle_agent")
    assert rec == {"agent_id": "burst", "idle_s": pytest.approx(h.now - seen), "cluster": "burst",
                   "instance_type": "c5.xlarge"}
    assert not records(h(Tick(), dt=100), "idle_agent")  # once per idle period
    assert h.book.status_lines(h.now)[0].startswith("agent burst (burst) idle for 450 s")
    # busy again: no longer idle; the next idle period starts when its task leaves
    t = h.run("j", agent=BURST, tool="short")
    assert not records(h(Tick(), dt=1000), "idle_agent") and h.book.health.idle_agents == {}
    h.status(t, "TASK_FINISHED")
    left = h.now
    assert not records(h(Tick(), dt=299), "idle_agent")
    (rec,) = records(h(Tick(), dt=2), "idle_agent")
    assert rec["idle_s"] == pytest.approx(h.now - left)


def test_idle_report_skips_noticed_and_gone_agents():
    h = Harness(idle_agent_s=60, starving_s=None)
    h(AgentSeen(BURST))
    h(AgentSeen(BURST2))
    h(NoticeReceived("burst", terminate_at=h.now + 120))
    h(AgentLost("burst2"))
    assert not records(h(Tick(), dt=500), "idle_agent")
    assert Harness(idle_agent_s=None).book.health.idle_agent_s is None


def test_starving_job_reported_once_with_its_shape():
    h = Harness(idle_agent_s=None, starving_s=120)
    h(AgentSeen(BURST))  # preemptible only
    h.issue("r", preempt=RELIABLE, demand=Resources(2, 2048))  # no reliable agent at all
    issued = h.now
    h.issue("fits", demand=Resources(2, 2048))  # some live agent can hold it: waiting for room is not starving
    assert not records(h(Tick(), dt=100), "starving")
    (rec,) = records(h(Tick(), dt=30), "starving")
    assert rec["job_id"] == "r" and (rec["vcpus"], rec["ram_mib"]) == (2, 2048)
    assert rec["waited_s"] == pytest.approx(h.now - issued) and "reliable" in rec["reason"]
    assert not records(h(Tick(), dt=300), "starving")
    assert any(line.startswith("job r starving for") for line in h.book.status_lines(h.now))
    # a reliable agent joins: no longer starving, and the job runs there
    h(AgentSeen(CORE))
    h(Tick())
    assert h.book.health.starving == {}
    assert ("r.1", "core") in h.launched(h.offer(CORE))


def test_starving_counts_only_live_agents():
    """A job that fitted only the agent under a terminate notice starves once that agent is closed."""
    h = Harness(idle_agent_s=None, starving_s=60)
    wide = AgentInfo("wide", Resources(16, 65536), preemptible=True, cluster="burst", instance_type="c5.4xlarge")
    h(AgentSeen(wide))
    h(AgentSeen(BURST))
    h(NoticeReceived("wide", terminate_at=h.now + 30))
    h.issue("huge", demand=Resources(8, 4096))
    (rec,) = records(h(Tick(), dt=61), "starving")
    assert rec["job_id"] == "huge" and h.book.jobs["huge"].state is TaskState.QUEUED
