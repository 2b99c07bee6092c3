"""The picture of a run (plastic.core.account.picture), from small hand-made event lists: attempts, lanes,
marks, the cost over time and the plan beside what ran."""

from __future__ import annotations

import pytest

from plastic.core.account.picture import build_picture
from plastic.core.account.report import AgentSpan
from plastic.core.model import Market, Resources
from plastic.core.planning.plan import Plan, PlannedNode
from tests.fakes.stories import CORE, SPOT, ev, preempted_story


def picture(events, agents=(CORE, SPOT), ended_at=100.0, **kw):
    return build_picture(run_id="r1", workflow="wf.cwl", outcome="succeeded", started_at=0.0, ended_at=ended_at,
                         agents=list(agents), events=events, **kw)


def test_an_attempt_preempted_at_a_notice_and_run_again():
    pic = picture(preempted_story())
    by_task = {a.task: a for a in pic.attempts}
    assert sorted(by_task) == ["1.1", "1.2", "2.1"]
    first, again, other = by_task["1.1"], by_task["1.2"], by_task["2.1"]
    assert (first.outcome, first.killed_at_notice, first.start_at, first.end_at) == ("preempted", True, 10, 21)
    assert (first.number, again.number, other.number) == (1, 2, 1)
    assert first.running_at == 11 and first.tool == "sort_tool" and first.step == "sort"
    assert (again.outcome, again.agent_id, again.start_at, again.end_at) == ("finished", "core-1", 25, 40)
    assert (other.outcome, other.end_at) == ("finished", 30)
    assert pic.report.attempts == len(pic.attempts) == 3 and pic.report.preemptions == 1
    kinds = [(m.kind, m.at, m.agent_id) for m in pic.marks]
    assert ("notice", 20, "spot-1") in kinds and ("requeue", 21, "spot-1") in kinds
    assert ("agent_lost", 50, "spot-1") in kinds
    assert [m.at for m in pic.marks] == sorted(m.at for m in pic.marks)
    assert pic.tools == {"sort_tool": 2, "split_tool": 1}


def test_lanes_are_the_agents_on_demand_first_with_how_they_left():
    pic = picture(preempted_story())
    assert [lane.agent_id for lane in pic.lanes] == ["core-1", "spot-1"]
    core, spot = pic.lanes
    assert (core.preemptible, core.start_at, core.end_at, core.gone) == (False, 0.0, 100.0, None)
    assert (spot.preemptible, spot.start_at, spot.end_at, spot.gone) == (True, 0.0, 50.0, "lost")


def test_cost_over_time_ends_at_the_report_cost_and_bends_when_an_agent_goes():
    pic = picture(preempted_story())
    last = pic.cost[-1]
    assert (pic.cost[0].at, pic.cost[0].usd, last.at) == (0.0, 0.0, 100.0)
    assert last.usd == pytest.approx(pic.report.cost_usd)
    assert last.on_demand_usd == pytest.approx(pic.report.on_demand_cost_usd)
    assert last.usd == pytest.approx((100 * 0.085 + 50 * 0.0326) / 3600)
    assert last.on_demand_usd == pytest.approx((100 * 0.085 + 50 * 0.096) / 3600)
    at = {p.at: p for p in pic.cost}
    assert at[50].usd == pytest.approx(50 * (0.085 + 0.0326) / 3600)  # the spot agent's end is a point
    for a, b in zip(pic.cost, pic.cost[1:], strict=False):
        assert a.at < b.at and a.usd <= b.usd <= b.on_demand_usd


def test_a_run_with_no_attempts():
    pic = picture([], agents=())
    assert pic.attempts == () and pic.lanes == () and pic.marks == ()
    assert [(p.at, p.usd, p.on_demand_usd) for p in pic.cost] == [(0.0, 0.0, 0.0), (100.0, 0.0, 0.0)]
    assert pic.report.attempts == 0 and pic.clusters == ()


def test_an_attempt_still_running_at_the_end():
    events = [ev("placed", 5, job_id="7", task="7.1", agent_id="core-1", cluster="core", preemptible=False)]
    pic = picture(events, ended_at=60.0, running=True)
    (a,) = pic.attempts
    assert (a.outcome, a.end_at, a.start_at) == ("running", None, 5)
    assert pic.running


def test_ends_from_requeues_ended_records_and_lost_agents_without_task_state():
    events = [
        ev("placed", 1, job_id="1", task="1.1", agent_id="spot-1", cluster="burst", preemptible=True),
        ev("placed", 1, job_id="2", task="2.1", agent_id="core-1", cluster="core", preemptible=False),
        ev("placed", 1, job_id="3", task="3.1", agent_id="core-1", cluster="core", preemptible=False),
        ev("placed", 1, job_id="4", task="4.1", agent_id="spot-1", cluster="burst", preemptible=True),
        ev("requeue", 5, job_id="1", old_task="1.1", new_task="1.2", agent_id="spot-1", counted_as="lost"),
        ev("ended", 6, job_id="2", outcome="failed", agent_id="core-1", message="exit 2"),
        ev("ended", 7, job_id="3", outcome="killed", agent_id="core-1"),
        ev("agent_lost", 8, agent_id="spot-1"),
        ev("ended", 9, job_id="1", outcome="finished", agent_id=None, reason="done_by_earlier_attempt"),
    ]
    pic = picture(events)
    got = {a.task: (a.outcome, a.end_at) for a in pic.attempts}
    assert got == {"1.1": ("lost", 5), "2.1": ("failed", 6), "3.1": ("killed", 7), "4.1": ("lost", 8)}
    assert len(pic.attempts) == 4  # job 1's end by an earlier attempt's work is no attempt
    assert "not run again" in pic.attempts[0].reason and pic.attempts[1].reason == "exit 2"


def test_a_resumed_run_counts_the_same_task_id_of_two_leaders_as_two_attempts():
    events = [
        ev("book", 0, config={}),
        ev("issued", 1, job_id="3", tool="a", job_store_id="js-a"),
        ev("placed", 2, job_id="3", task="3.1", agent_id="core-1", cluster="core", preemptible=False),
        ev("book", 20, config={}),
        ev("issued", 21, job_id="3", tool="b", job_store_id="js-b"),
        ev("placed", 22, job_id="3", task="3.1", agent_id="spot-1", cluster="burst", preemptible=True),
        ev("orphan_ended", 30, task="3.1", agent_id="core-1", state="TASK_FINISHED", adopted=True),
        ev("ended", 40, job_id="3", outcome="finished", agent_id="spot-1"),
    ]
    pic = picture(events)
    old, new = pic.attempts
    assert (old.task, old.tool, old.agent_id, old.outcome, old.end_at) == ("3.1", "a", "core-1", "finished", 30)
    assert (new.task, new.tool, new.agent_id, new.outcome, new.end_at) == ("3.1", "b", "spot-1", "finished", 40)
    assert old.number == new.number == 1  # different jobs (their job-store ids differ)


def test_an_elastic_node_created_then_released():
    node = AgentSpan("n-1", "burst-x", True, "m5.large", 0.0326, 0.096, seen_at=12.0)
    events = [
        ev("node_requested", 9, cluster="burst-x", instance_type="m5.large", market="spot", count=1,
           reason="queued_work"),
        ev("node_created", 10, node_ids=["n-1"]),
        ev("agent", 12, agent_id="n-1", cluster="burst-x", preemptible=True, instance_type="m5.large"),
        ev("placed", 12, job_id="1", task="1.1", agent_id="n-1", cluster="burst-x", preemptible=True),
        ev("ended", 20, job_id="1", outcome="finished", agent_id="n-1"),
        ev("node_released", 30, node_id="n-1", cluster="burst-x", reason="idle for 10 s"),
        ev("agent_lost", 35, agent_id="n-1"),
    ]
    pic = picture(events, agents=(CORE, node))
    lane = next(lane for lane in pic.lanes if lane.agent_id == "n-1")
    assert (lane.start_at, lane.end_at, lane.gone, lane.created) == (10, 30, "released", True)
    kinds = [(m.kind, m.agent_id) for m in pic.marks]
    assert kinds == [("node_requested", None), ("node_created", "n-1"), ("node_released", "n-1")]
    assert pic.elastic
    assert pic.cost[-1].usd == pytest.approx((100 * 0.085 + 20 * 0.0326) / 3600)


def test_an_agent_the_prices_do_not_know_still_gets_a_lane():
    events = [ev("placed", 3, job_id="1", task="1.1", agent_id="x-9", cluster="other", preemptible=True),
              ev("ended", 8, job_id="1", outcome="finished", agent_id="x-9")]
    pic = picture(events, agents=())
    assert [(lane.agent_id, lane.cluster, lane.preemptible, lane.start_at) for lane in pic.lanes] == [
        ("x-9", "other", True, 3)]


def test_the_plan_beside_what_ran():
    def node(i: int, cluster: str, market: Market, usd: float) -> PlannedNode:
        return PlannedNode(f"{cluster}-{i}", cluster, "m5.large", market, usd, Resources(2, 8192), (), 0.096)

    plan = Plan(tasks=(), nodes=(node(1, "core", Market.ON_DEMAND, 0.096), node(1, "burst", Market.SPOT, 0.0326),
                                 node(2, "burst", Market.SPOT, 0.0326)),
                usd_per_hour=0.1612, on_demand_usd_per_hour=0.288, lower_bound_usd_per_hour=0.1, mode="waves")
    extra = AgentSpan("e-1", "burst-extra", True, "c5.large", 0.0349, 0.085)
    pic = picture(preempted_story(), agents=(CORE, SPOT, extra), plan=plan)
    rows = {r.name: r for r in pic.clusters}
    assert list(rows) == ["core", "burst", "burst-extra"]
    assert (rows["burst"].planned_nodes, rows["burst"].planned_usd_per_hour) == (2, pytest.approx(0.0652))
    assert (rows["burst"].ran_agents, rows["burst"].placements, rows["burst"].preemptible) == (1, 1, True)
    assert (rows["core"].planned_nodes, rows["core"].ran_agents, rows["core"].placements) == (1, 1, 2)
    assert (rows["burst-extra"].planned_nodes, rows["burst-extra"].planned_type, rows["burst-extra"].ran_agents) == (
        0, None, 1)
    assert pic.plan_usd_per_hour == 0.1612
