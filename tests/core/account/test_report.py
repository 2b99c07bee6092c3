"""The end-of-run report (plastic.core.account.report: build_report and the live RunTally) and the live progress
fold (plastic.core.account.progress)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.account.progress import Progress
from plastic.core.account.report import (
    NODE_KINDS,
    AgentSpan,
    RunEvent,
    RunTally,
    build_report,
    price_agents,
)
from tests.fakes.catalogs import CATALOG, THREE_CATALOG

AGENTS = [
    AgentSpan("core-1", "core", False, "c5.large", 0.085, 0.085),
    AgentSpan("spot-1", "burst", True, "m5.large", 0.0326, 0.096),
    AgentSpan("spot-2", "burst", True, "m5.large", 0.0326, 0.096),
]


def ev(event_kind: str, at: float, **fields) -> RunEvent:
    return RunEvent(event_kind, at, fields)


def story() -> list[RunEvent]:
    return [
        ev("issued", 1, job_id="1"), ev("issued", 1, job_id="2"), ev("issued", 1, job_id="3"),
        ev("placed", 2, job_id="1", agent_id="spot-1"), ev("placed", 2, job_id="2", agent_id="spot-2"),
        ev("placed", 2, job_id="3", agent_id="core-1"),
        ev("notice", 3, agent_id="spot-1", notice_kind="terminate"),
        ev("drain_kill", 3, job_id="1", agent_id="spot-1"),
        ev("notice", 3, agent_id="spot-2", notice_kind="terminate"),
        ev("let_finish", 3, job_id="2", agent_id="spot-2"),
        ev("requeue", 4, job_id="1", agent_id="spot-1", counted_as="preempted", cause="killed"),
        ev("escalation", 4, job_id="1", preemptions=1),
        ev("agent_lost", 1800, agent_id="spot-1"),
        ev("ended", 5, job_id="2", outcome="finished", agent_id="spot-2"),
        ev("placed", 6, job_id="1", agent_id="core-1"),
        ev("ended", 9, job_id="1", outcome="finished", agent_id="core-1"),
        ev("ended", 9, job_id="3", outcome="failed", agent_id="core-1", exit_code=2),
    ]


def test_counts_and_costs():
    r = build_report(run_id="r1", workflow="wf.cwl", outcome="failed", started_at=0.0, ended_at=3600.0,
                     agents=AGENTS, events=story())
    assert (r.tasks, r.tasks_finished, r.tasks_failed, r.attempts) == (3, 2, 1, 4)
    assert (r.preemptions, r.losses, r.requeues, r.escalations) == (1, 0, 1, 1)
    assert (r.notices, r.drain_kills, r.let_finish, r.finished_in_window) == (2, 1, 1, 1)
    by = {c.name: c for c in r.clusters}
    assert by["core"].agent_hours == pytest.approx(1.0)
    assert by["burst"].agent_hours == pytest.approx(1.0 + 0.5)  # spot-1 lost after half an hour
    assert by["burst"].agents_lost == 1
    assert r.cost_usd == pytest.approx(0.085 + 1.5 * 0.0326)
    assert r.on_demand_cost_usd == pytest.approx(0.085 + 1.5 * 0.096)
    assert 0 < r.savings < 1
    assert by["core"].placements == 2 and by["burst"].placements == 2
    assert by["core"].tasks_finished == 1 and by["burst"].tasks_finished == 1
    doc = r.to_json()
    assert json.loads(json.dumps(doc))["schema"] == "plastic.report/v1"


# c5.large on demand is the cheapest reliable node, m5.large spot the cheapest vCPU (0.0163 USD an hour)
FLOOR_CATALOG = THREE_CATALOG


def floor_story() -> list[RunEvent]:
    """Job 1 (2 vCPUs) runs 80 s on the core agent; job 2 (2 vCPUs) is preempted on the spot agent and
    runs again there for 60 s; job 3 (1 vCPU) fails."""
    return [
        ev("agent", 0, agent_id="core-1", cluster="core", preemptible=False, instance_type="c5.large", vcpus=2,
           ram_mib=4096),
        ev("agent", 0, agent_id="spot-1", cluster="burst", preemptible=True, instance_type="m5.large", vcpus=2,
           ram_mib=8192),
        ev("issued", 1, job_id="1", vcpus=2, ram_mib=1024), ev("issued", 1, job_id="2", vcpus=2, ram_mib=1024),
        ev("issued", 1, job_id="3", vcpus=1, ram_mib=512),
        ev("placed", 2, job_id="1", agent_id="core-1"), ev("placed", 2, job_id="2", agent_id="spot-1"),
        ev("requeue", 10, job_id="2", agent_id="spot-1", counted_as="preempted", cause="killed"),
        ev("placed", 12, job_id="2", agent_id="spot-1"),
        ev("ended", 72, job_id="2", outcome="finished", agent_id="spot-1", wall_time_s=60.0),
        ev("ended", 82, job_id="1", outcome="finished", agent_id="core-1", wall_time_s=80.0),
        ev("placed", 83, job_id="3", agent_id="core-1"),
        ev("ended", 90, job_id="3", outcome="failed", agent_id="core-1", wall_time_s=7.0),
    ]


def test_the_floor_of_a_run_worked_out_by_hand():
    """Finished: 2 vCPUs x 80 s and 2 vCPUs x 60 s, 280 vCPU-seconds, the longest task 80 s, by a makespan
    of 100 s.  The floor keeps a c5.large for 80 s (6.8 USD-seconds an hour), which takes 2 x 100
    vCPU-seconds of the work; the other 80 at the m5.large spot's 0.0163 USD per vCPU-hour (1.304):
    8.104 / 3600 USD.  The run paid (0.085 + 0.0326) x 100 s: 11.76 / 3600 USD, 1.45 x the floor."""
    agents = [AgentSpan("core-1", "core", False, "c5.large", 0.085, 0.085),
              AgentSpan("spot-1", "burst", True, "m5.large", 0.0326, 0.096)]
    args = dict(run_id="r", workflow="w", outcome="failed", started_at=0.0, ended_at=100.0, events=floor_story())
    r = build_report(agents=agents, catalog=FLOOR_CATALOG, **args)
    assert r.cost_usd == pytest.approx(11.76 / 3600)
    f = r.floor
    assert f is not None
    assert f.usd == pytest.approx(8.104 / 3600)
    assert f.cost_over_floor == pytest.approx(11.76 / 8.104)
    assert (f.tasks, f.vcpu_s, f.critical_path_s, f.critical_path_from, f.cap_s, f.boot_s) == (
        2, 280.0, 80.0, "longest task", 100.0, 0.0)
    assert f.shapes == 6 and f.one_reliable_node  # the agents are priced as the catalog's shapes
    doc = json.loads(json.dumps(r.to_json()))["floor"]
    assert doc["usd"] == pytest.approx(8.104 / 3600) and doc["cost_over_floor"] == pytest.approx(1.4511, abs=1e-4)
    assert f.sentence(r.cost_usd).startswith("cost 0.003267 USD, 1.45 x the floor (0.002251 USD: no policy that "
                                             "keeps an on-demand node pays less for these 2 tasks")
    # a run with no on-demand agent is held to no such rule: every vCPU-second at the cheapest price
    spot = build_report(agents=agents[1:], catalog=FLOOR_CATALOG, **args).floor
    assert spot is not None and not spot.one_reliable_node and spot.usd == pytest.approx(280 * 0.0163 / 3600)
    # an agent paid less than its catalog price is a shape of its own: the floor buys from it too
    cheap = [agents[0], AgentSpan("spot-1", "burst", True, "m5.large", 0.0163, 0.096)]
    low = build_report(agents=cheap, catalog=FLOOR_CATALOG, **args).floor
    assert low is not None and low.shapes == 7 and low.usd == pytest.approx((6.8 + 80 * 0.00815) / 3600)
    # no catalog, or a run still going: no floor
    assert build_report(agents=agents, **args).floor is None
    assert build_report(agents=agents, catalog=FLOOR_CATALOG, **{**args, "outcome": "running"}).floor is None


def test_agent_seen_late_is_priced_from_then():
    late = AgentSpan("spot-3", "burst", True, "m5.large", 0.03, 0.09, seen_at=1800.0)
    r = build_report(run_id="r", workflow="w", outcome="succeeded", started_at=0.0, ended_at=3600.0,
                     agents=[late], events=[])
    assert r.clusters[0].agent_hours == pytest.approx(0.5)


def test_a_node_lost_before_the_framework_met_it_is_paid_for_and_counted_lost():
    # the elastic run created two spot nodes; the framework met one (an offer came), the other was interrupted
    # before it ever offered: both are in their cluster, priced by what the request asked for, from creation
    events = [ev("node_requested", 10, request=1, cluster="burst-c5.large", instance_type="c5.large", market="spot",
                 count=2, usd_per_hour=0.0349),
              ev("node_created", 20, request=1, node_ids=["n1", "n2"]),
              ev("agent", 25, agent_id="n1", cluster="burst-c5.large", preemptible=True, instance_type="c5.large"),
              ev("node_interrupted", 1820, node_id="n2", cluster="burst-c5.large"),
              ev("agent_lost", 1830, agent_id="n2")]
    spans = price_agents({}, [], events, CATALOG)
    assert {a.agent_id: (a.cluster, a.preemptible, a.instance_type, a.usd_per_hour, a.on_demand_usd_per_hour)
            for a in spans} == {n: ("burst-c5.large", True, "c5.large", 0.0349, 0.085) for n in ("n1", "n2")}
    r = build_report(run_id="r", workflow="w", outcome="succeeded", started_at=0.0, ended_at=3620.0,
                     agents=spans, events=events)
    (c,) = r.clusters
    assert (c.agents, c.agents_lost) == (2, 1)
    assert c.agent_hours == pytest.approx(1.0 + 0.5)  # n1 from its creation to the end, n2 until interrupted
    assert r.cost_usd == pytest.approx(1.5 * 0.0349)


def test_no_agents_means_no_savings_claimed():
    r = build_report(run_id="r", workflow="w", outcome="succeeded", started_at=0, ended_at=10, agents=[], events=[])
    assert r.savings == 0.0 and r.cost_usd == 0.0 and r.clusters == ()


def test_progress_follows_the_story():
    p = Progress({"core-1": "core", "spot-1": "burst", "spot-2": "burst"})
    seen = []
    for e in story():
        p.apply(e)
        seen.append((len(p.queued), p.running, p.finished, p.failed))
    assert seen[2] == (3, 0, 0, 0)
    assert seen[5] == (0, 3, 0, 0)
    assert p.clusters["burst"].running == 0 and p.clusters["core"].running == 0
    assert (p.finished, p.failed, p.requeues, p.notices) == (2, 1, 1, 2)
    assert p.clusters["core"].finished == 1 and p.clusters["core"].failed == 1
    assert any("requeued" in line for line in p.recent)
    assert any("lost" in line for line in p.recent)


def test_progress_learns_agents_from_events():
    p = Progress()
    p.apply(ev("agent", 0, agent_id="x", cluster="burst-large", preemptible=True))
    p.apply(ev("placed", 1, job_id="7", agent_id="x"))
    assert p.clusters["burst-large"].running == 1


def test_resume_counts_each_toil_job_once_and_adopted_orphans_as_finished():
    ev = [
        RunEvent("issued", 1.0, {"job_id": "1", "job_store_id": "js-a"}),
        RunEvent("issued", 1.0, {"job_id": "2", "job_store_id": "js-b"}),
        RunEvent("issued", 1.0, {"job_id": "3", "job_store_id": "js-c"}),
        RunEvent("placed", 2.0, {"job_id": "1", "task": "1.1"}),
        RunEvent("placed", 2.0, {"job_id": "2", "task": "2.1"}),
        RunEvent("placed", 2.0, {"job_id": "3", "task": "3.1"}),
        # the leader dies; the resumed one adopts 1.1, kills 2.1, and 3.1 had finished meanwhile
        RunEvent("orphan_adopted", 10.0, {"task": "1.1"}),
        RunEvent("orphan_kill", 10.0, {"task": "2.1", "reason": "no_fit"}),
        RunEvent("orphan_ended", 10.5, {"task": "3.1", "state": "TASK_FINISHED", "adopted": False}),
        RunEvent("orphan_ended", 11.0, {"task": "2.1", "state": "TASK_KILLED", "adopted": False}),
        RunEvent("orphan_ended", 12.0, {"task": "1.1", "state": "TASK_FINISHED", "adopted": True}),
        RunEvent("issued", 13.0, {"job_id": "1000001", "job_store_id": "js-b"}),  # run again by the new leader
        RunEvent("placed", 13.0, {"job_id": "1000001", "task": "1000001.1"}),
        RunEvent("ended", 20.0, {"job_id": "1000001", "outcome": "finished"}),
    ]
    r = build_report(run_id="r", workflow="w", outcome="succeeded", started_at=0, ended_at=30, agents=[], events=ev)
    assert (r.tasks, r.tasks_finished, r.tasks_failed, r.attempts) == (3, 3, 0, 4)
    assert (r.orphans_adopted, r.orphans_killed) == (1, 1)
    assert r.to_json()["orphans_adopted"] == 1


# --- the tally folded live (what `plastic run` keeps instead of a list of events) --------------------


_AGENT_IDS = ("core-1", "spot-1", "spot-2", "elsewhere")
_LATER = ("placed", "requeue", "notice", "drain_kill", "let_finish", "escalation", "unplaceable", "ended",
          "orphan_adopted", "orphan_kill", "orphan_ended", "agent", "agent_lost", "node_created", "node_released")


@st.composite
def streams(draw) -> list[RunEvent]:
    """Event streams as the batch system writes them: a job's ``issued`` before its other records."""
    out: list[RunEvent] = []
    t = 0.0
    for job in range(draw(st.integers(0, 12))):
        store_id = draw(st.sampled_from([None, f"js-{job}", f"js-{job % 3}"]))  # a job issued again, too
        out.append(ev("issued", t, job_id=str(job), vcpus=draw(st.integers(1, 4)),
                      **({"job_store_id": store_id} if store_id else {})))
        for kind in draw(st.lists(st.sampled_from(_LATER), max_size=6)):
            t += draw(st.floats(0, 100))
            agent = draw(st.sampled_from(_AGENT_IDS))
            out.append(ev(kind, t, job_id=str(job), agent_id=agent, node_id=agent, node_ids=[agent],
                          task=f"{draw(st.integers(0, job))}.1",
                          outcome=draw(st.sampled_from(["finished", "failed", "lost_for_good", "killed"])),
                          counted_as=draw(st.sampled_from(["preempted", "lost", "none"])),
                          wall_time_s=draw(st.floats(0, 100)), vcpus=2, ram_mib=4096,
                          state=draw(st.sampled_from(["TASK_FINISHED", "TASK_KILLED"])),
                          notice_kind=draw(st.sampled_from(["terminate", "rebalance"]))))
    return out


@settings(max_examples=200, deadline=None)
@given(streams())
@pytest.mark.slow
def test_the_tally_folded_live_gives_build_reports_figures_and_keeps_no_task_records(events):
    tally = RunTally()  # no mapping given: it learns jobStoreIDs from the issued records as they come
    for e in events:
        tally.add(e)
    args = dict(run_id="r", workflow="w", outcome="succeeded", started_at=0.0, ended_at=3600.0, agents=AGENTS,
                catalog=CATALOG)
    assert tally.report(**args) == build_report(events=events, **args)
    assert tally.kept_events == [e for e in events if e.kind in NODE_KINDS or e.kind in ("agent", "agent_lost")]


def test_the_tally_of_many_tasks_keeps_only_their_ids():
    tally = RunTally()
    for job in range(5000):
        for kind in ("issued", "placed", "running", "ended"):
            tally.add(ev(kind, 1.0, job_id=str(job), agent_id="core-1", outcome="finished", task=f"{job}.1"))
    assert tally.kept_events == []
    report = tally.report(run_id="r", workflow="w", outcome="succeeded", started_at=0, ended_at=10, agents=AGENTS)
    assert (report.tasks, report.tasks_finished, report.attempts) == (5000, 5000, 5000)
