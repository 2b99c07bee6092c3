"""plastic.core.elastic.forecast: when waiting tasks will be queued, and which work the nodes there are start in time."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.forecast import (
    Stage,
    TaskProgress,
    back_to_back,
    due_in_s,
    earliest_start,
    fit_ahead,
    issued_by_step,
    plan_ahead,
    room_back_at,
    slack_s,
)
from plastic.core.elastic.model import (
    ClusterObserved,
    CreateNodes,
    ElasticPolicy,
    NodesRequested,
    NodeState,
    NodeView,
    WaitingTask,
)
from plastic.core.elastic.packing import fit_existing, group_tasks
from plastic.core.model import (
    PREEMPTIBLE,
    RELIABLE,
    Market,
    Preempt,
    Resources,
    TaskSpec,
)
from plastic.core.planning.plan import step_of
from tests.fakes.catalogs import ELASTIC_CATALOG, ELASTIC_SHAPES

ONE = Resources(1, 1024)


def spec(task_id: str, runtime_s: float | None, *parents: str) -> TaskSpec:
    return TaskSpec(task_id, 1, 1024, PREEMPTIBLE, runtime_s, parents=tuple(parents))


def node(node_id: str, vcpus: int = 2, *, used: int = 0, state: NodeState = NodeState.READY, created_at: float = 0.0,
         ends: tuple[tuple[float, Resources], ...] = (), market: Market = Market.SPOT) -> NodeView:
    return NodeView(node_id, "burst", "m5.large", market, state, Resources(vcpus, vcpus * 4096), 0.04, created_at,
                    Resources(used, used * 1024), used, None, task_ends=ends)


def waiting(task_id: str, runtime_s: float | None = 30.0, due_in_s: float = 0.0, *, reliable: bool = False):
    return WaitingTask(task_id, ONE, reliable, due_in_s=due_in_s, runtime_s=runtime_s)


# ------------------------------------------------------------ due_in_s


def test_a_wave_is_due_when_its_slowest_parent_ends():
    tasks = [spec("split", 40.0), spec("a", 10.0, "split"), spec("b", 20.0, "split"), spec("merge", 5.0, "a", "b")]
    due = due_in_s(tasks, {"split": TaskProgress(Stage.RUNNING, started_at=100.0)}, now=110.0, lead_s=60.0)
    assert due == {"a": 30.0, "b": 30.0, "merge": 50.0}  # split ends at 140; b at 160


def test_queued_parents_start_now_and_done_ones_are_over():
    tasks = [spec("x", 10.0), spec("y", 25.0), spec("z", 1.0, "x", "y")]
    progress = {"x": TaskProgress(Stage.DONE), "y": TaskProgress(Stage.QUEUED)}
    assert due_in_s(tasks, progress, now=50.0, lead_s=60.0) == {"z": 25.0}


def test_no_forecast_below_a_task_without_an_estimate():
    tasks = [spec("a", None), spec("b", 5.0, "a"), spec("c", 5.0, "b"), spec("d", 5.0)]
    due = due_in_s(tasks, {"a": TaskProgress(Stage.RUNNING, started_at=0.0)}, now=1.0, lead_s=60.0)
    assert due == {"d": 0.0}  # b and c hang on a, whose end is unknown; d waits for nothing: due now


def test_an_overrun_parent_gets_one_lead_of_grace_then_its_children_have_no_date():
    """slow should have ended at 10 s: with a 15 s lead its child is due by 25 s (at 20 s: in 5 s);
    at 30 s slow is past the grace, its end unknown, and next has no date."""
    tasks = [spec("slow", 10.0), spec("next", 1.0, "slow")]
    running = {"slow": TaskProgress(Stage.RUNNING, started_at=0.0)}
    assert due_in_s(tasks, running, now=20.0, lead_s=15.0) == {"next": 5.0}
    assert due_in_s(tasks, running, now=30.0, lead_s=15.0) == {}


# ------------------------------------------------------------ fit_ahead


def test_without_a_lead_it_is_the_free_room_now():
    queued = [waiting(f"t{i}") for i in range(5)]
    nodes = [node("n1", 2, used=1), node("n2", 2, ends=((5.0, ONE),), used=2)]
    left, given_now, _ = fit_ahead(queued, [waiting("e", due_in_s=1.0)], nodes, 0.0, 0.0)
    assert [t.task_id for t in left] == ["t1", "t2", "t3", "t4"] and given_now == {"n1": 1}


def test_room_freed_within_the_lead_serves_queued_work():
    """Two tasks queued, a full node whose two tasks end in 20 s: with a 60 s boot a new node would
    not start them sooner, so nothing is left; with a 10 s lead both are left."""
    full = node("n1", 2, used=2, ends=((20.0, ONE), (20.0, ONE)))
    queued = [waiting("a"), waiting("b")]
    assert fit_ahead(queued, [], [full], 0.0, 60.0) == ([], {}, {"n1"})  # not now, but within the boot
    left, _, _ = fit_ahead(queued, [], [full], 0.0, 10.0)
    assert [t.task_id for t in left] == ["a", "b"]


def test_tasks_placed_in_the_forecast_free_their_room_by_their_estimate():
    """One free core, four 10 s tasks: they run one after the other, starting at 0, 10, 20, 30 s;
    with a 25 s lead the last one (30 s) is left for a new node."""
    left, given_now, needed = fit_ahead([waiting(f"t{i}", 10.0) for i in range(4)], [], [node("n1", 1)], 0.0, 25.0)
    assert [t.task_id for t in left] == ["t3"] and given_now == {"n1": 1} and needed == {"n1"}


def test_a_booting_node_serves_once_it_is_up():
    booting = node("n1", 2, state=NodeState.PENDING, created_at=0.0)
    assert fit_ahead([waiting("a")], [], [booting], 10.0, 60.0)[0] == []  # up at 60, 50 s after: in time
    left, _, _ = fit_ahead([waiting("a")], [], [booting], 10.0, 40.0)  # up at 40: a waits 30 s of a 40 s lead
    assert left == []
    late = node("n2", 2, state=NodeState.PENDING, created_at=10.0)
    assert fit_ahead([waiting("a")], [], [late], 10.0, 0.0)[0] == []  # no lead: booting room counts now


def test_a_task_past_its_estimate_gets_one_lead_of_grace():
    """Two queued tasks, a full node whose two tasks should have ended at 40 s; now is 50 s, lead 15 s.
    Within the grace (ends + 15 = 55 s) the room is expected back in time: nothing is left for new
    nodes.  At 60 s, past the grace, the late tasks keep their room: both are left."""
    late = node("n1", 2, used=2, ends=((40.0, ONE), (40.0, ONE)))
    queued = [waiting("a"), waiting("b")]
    assert fit_ahead(queued, [], [late], 50.0, 15.0) == ([], {}, {"n1"})
    left, _, _ = fit_ahead(queued, [], [late], 60.0, 15.0)
    assert [t.task_id for t in left] == ["a", "b"]
    assert room_back_at(70.0, 50.0, 15.0) == 70.0 and room_back_at(50.0, 50.0, 15.0) == 50.0
    assert room_back_at(40.0, 50.0, 15.0) == 55.0 and room_back_at(30.0, 50.0, 15.0) is None


def test_expected_work_beyond_the_lead_is_not_counted():
    left, _, _ = fit_ahead([], [waiting("soon", due_in_s=30.0), waiting("later", due_in_s=90.0)], [], 0.0, 60.0)
    assert [t.task_id for t in left] == ["soon"]


def test_the_controller_buys_ahead_for_a_wave_due_within_the_boot():
    core = NodeView("core", "core", "c5.large", Market.ON_DEMAND, NodeState.READY, Resources(2, 4096), 0.085, 0.0,
                    Resources(1, 1024), 1, None, task_ends=((130.0, ONE),))
    wave = tuple(waiting(f"w{i}", 100.0, due_in_s=30.0) for i in range(8))
    ahead = ElasticController(ELASTIC_SHAPES, ElasticPolicy(lead_s=60.0))
    out = ahead.handle(ClusterObserved((), (core,), wave), 100.0)
    creates = [o for o in out if isinstance(o, CreateNodes)]
    assert creates and all(o.market is Market.SPOT and o.reason.startswith("expected_work") for o in creates)
    (req, *_) = [o for o in out if isinstance(o, NodesRequested)]
    assert req.reason == "expected_work" and set(req.tasks) <= {t.task_id for t in wave}
    blind = ElasticController(ELASTIC_SHAPES, ElasticPolicy())  # no lead: the wave is not work yet
    assert not [o for o in blind.handle(ClusterObserved((), (core,), wave), 100.0) if isinstance(o, CreateNodes)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.sampled_from([512, 1024, 4096]), st.booleans()), max_size=30),
       st.lists(st.tuples(st.integers(1, 8), st.integers(0, 8), st.booleans()), min_size=1, max_size=8))
def test_without_a_lead_fit_ahead_is_fit_existing(tasks, nodes):
    queued = [WaitingTask(f"t{i:02}", Resources(c, r), rel) for i, (c, r, rel) in enumerate(tasks)]
    views = [NodeView(f"n{j}", "c", "x", Market.ON_DEMAND if od else Market.SPOT, NodeState.READY,
                      Resources(c, c * 4096), 0.1, 0.0, Resources(min(u, c), min(u, c) * 1024), min(u, c), None)
             for j, (c, u, od) in enumerate(nodes)]
    left, given_now, needed = fit_ahead(queued, [], views, 0.0, 0.0)
    groups, counts = fit_existing(group_tasks(queued), views)
    assert needed == set(counts)
    assert sorted(t.task_id for t in left) == sorted(i for g in groups for i in g.task_ids)
    assert given_now == counts


def test_looking_ahead_an_idle_node_no_work_needs_goes_sooner():
    """With a lead, an idle node that the forecast gives no work within the boot is released after
    unneeded_idle_s (0 s: as its last task ends), not idle_s (60 s), cordoned and terminated in the same
    look; one the forecast needs waits for idle_s; without a lead, idle_s for all."""
    def idle_spot(node_id: str) -> NodeView:
        return NodeView(node_id, "burst", "m5.large", Market.SPOT, NodeState.READY, Resources(2, 8192), 0.0326, 0.0,
                        Resources(0, 0), 0, 100.0)

    core = NodeView("core", "core", "c5.large", Market.ON_DEMAND, NodeState.READY, Resources(2, 4096), 0.085, 0.0,
                    Resources(2, 2048), 2, None, task_ends=((200.0, Resources(2, 2048)),))
    soon = (waiting("w", 30.0, due_in_s=20.0),)  # fits the spare spot node in 20 s
    for lead_s, expected, cordoned in ((60.0, (), {"spare", "wanted"}), (60.0, soon, {"spare"}), (0.0, (), set())):
        ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(lead_s=lead_s))
        out = ctl.handle(ClusterObserved((), (core, idle_spot("spare"), idle_spot("wanted")), expected), 115.0)
        got = {o.node_id for o in out if type(o).__name__ == "CordonNode"}
        if expected:  # one of the two takes the expected task: which one is the forecast's choice
            assert len(got) == 1, (lead_s, got)
        else:
            assert got == cordoned, (lead_s, got)
        released = {o.node_id for o in out if type(o).__name__ == "TerminateNode"}
        assert released == (got if lead_s > 0 else set()), (lead_s, released)  # released when done


def test_queued_work_is_served_before_larger_work_only_expected():
    """At the moment booting nodes come up, the tasks queued now take their room before a larger group
    only expected: else the queued ones, waiting a boot behind the expected ones, were left for new
    nodes and bought for (seen on a Montage trace: a spot node too many, looking at 1 s)."""
    queued = [WaitingTask(f"q{i}", Resources(1, 100), False, runtime_s=100.0) for i in range(3)]
    expected = [WaitingTask(f"e{i}", Resources(1, 4000), False, due_in_s=4.0, runtime_s=100.0) for i in range(3)]
    booting = [node("n", 4, state=NodeState.PENDING, created_at=0.0)]  # up at 60
    fit = fit_ahead(queued, expected, booting, 1.0, 60.0)
    left = [t.task_id for t in fit.left]  # the queued all start when it is up; one expected task too
    assert len(left) == 2 and all(i.startswith("e") for i in left), left


def test_queued_work_starts_when_a_node_is_up_so_its_children_are_due_later():
    """earliest_start: now with a node up, else when the first booting node is (its ready time, or a
    lead after it was asked for), else a boot from now; due_in_s starts queued (and due) work then."""
    assert earliest_start([node("r"), node("b", state=NodeState.PENDING, created_at=5.0)], 10.0, 60.0) == 10.0
    assert earliest_start([node("b", state=NodeState.PENDING, created_at=5.0)], 10.0, 60.0) == 65.0
    assert earliest_start([node("b", state=NodeState.PENDING, created_at=-100.0)], 10.0, 60.0) == 10.0
    assert earliest_start([node("d", state=NodeState.DRAINING)], 10.0, 60.0) == 70.0
    assert earliest_start([], 10.0, 60.0) == 70.0
    tasks = [spec("split", 40.0), spec("a", 10.0, "split"), spec("late", 5.0)]
    progress = {"split": TaskProgress(Stage.QUEUED)}
    assert due_in_s(tasks, progress, 10.0, lead_s=60.0) == {"a": 40.0, "late": 0.0}
    # no node up before 65: the split runs 65..105; a task not issued yet is still due now, runs later
    assert due_in_s(tasks, progress, 10.0, lead_s=60.0, start_at=65.0) == {"a": 95.0, "late": 0.0}
    running = {"split": TaskProgress(Stage.RUNNING, started_at=0.0)}  # running already: as it is
    assert due_in_s(tasks, running, 10.0, lead_s=60.0, start_at=65.0)["a"] == 30.0


# ------------------------------------------------------------ plan_ahead


def test_step_of_strips_the_scatter_index_only():
    assert step_of("per_sample/sort[3]") == "per_sample/sort"
    assert step_of("sort") == "sort"
    assert step_of("odd[x]") == "odd[x]" and step_of("a[1]b") == "a[1]b"


def scatter_plan() -> list[TaskSpec]:
    """split (reliable, 30 s) and a 3-wide scatter with no parent are the first wave; merge (after split
    and sort[0]) is not."""
    return [TaskSpec("split", 1, 512, RELIABLE, 30.0),
            *(TaskSpec(f"sort[{i}]", 2, 2048, Preempt(2), None, instance_type="m5.large") for i in range(3)),
            TaskSpec("merge", 1, 1024, RELIABLE, 30.0, parents=("split", "sort[0]"))]


def test_the_plan_s_first_wave_is_expected_until_its_step_is_issued_or_the_hold_ends():
    """Nothing issued yet: the first wave is expected now (due 0, its estimate); merge is below a task
    without an estimate, so it has no date.  A step's issued jobs stand for its tasks in order; after
    hold_s from the start, a first-wave task never issued is given up."""
    tasks = scatter_plan()
    ahead = plan_ahead(tasks, {}, 5.0, 0.0, 60.0, lead_s=15.0)
    assert [w.task_id for w in ahead.expected] == ["split", "sort[0]", "sort[1]", "sort[2]"]
    assert not ahead.settled
    split, sort0 = ahead.expected[0], ahead.expected[1]
    assert split.needs_reliable and split.runtime_s == 30.0 and split.due_in_s == 0.0
    assert not sort0.needs_reliable and sort0.instance_type == "m5.large" and sort0.demand == Resources(2, 2048)
    queued = TaskProgress(Stage.QUEUED)
    two_sorts = plan_ahead(tasks, {"sort": [queued, queued]}, 5.0, 0.0, 60.0, lead_s=15.0)
    assert [w.task_id for w in two_sorts.expected] == ["split", "sort[2]"]
    everything = {"split": [queued], "sort": [queued] * 3, "merge": [queued]}
    assert plan_ahead(tasks, everything, 5.0, 0.0, 60.0, lead_s=15.0) == ((), True)
    late = plan_ahead(tasks, {}, 60.0, 0.0, 60.0, lead_s=15.0)
    assert late == ((), True)  # nothing came within the hold: the first wave and merge below it given up


def test_a_job_toil_issues_again_takes_its_first_issue_s_place():
    """sort's first job failed and Toil issued it again (the same job store id): two jobs of sort, but
    only sort[0] is issued; sort[1] and sort[2] are still expected, and split's re-issue, running,
    holds merge back (its first issue ended)."""
    tasks = scatter_plan()
    failed, queued = TaskProgress(Stage.DONE, ended_at=3.0), TaskProgress(Stage.QUEUED)
    running = TaskProgress(Stage.RUNNING, started_at=4.0)
    issued = [("split", "js-split", failed), ("sort", "js-a", failed), ("split", "js-split", running),
              ("sort", "js-a", queued), ("sort", None, queued), ("sort", None, queued)]
    by_step = issued_by_step(issued[:4])
    assert by_step == {"split": [running], "sort": [queued]}
    ahead = plan_ahead(tasks, by_step, 5.0, 0.0, 60.0, lead_s=15.0)
    assert [w.task_id for w in ahead.expected] == ["sort[1]", "sort[2]"]
    assert issued_by_step(issued)["sort"] == [queued] * 3  # without a job store id each job is one more


def test_a_later_wave_is_dated_from_its_parents_and_given_up_once_they_ended_long_ago():
    """split ran from 0 with a 30 s estimate: its children are due at 30 s (25 s from now at 5 s);
    once split has ended, they are due now for hold_s after its end, then given up (a narrower
    scatter than planned)."""
    tasks = [TaskSpec("split", 1, 512, RELIABLE, 30.0),
             *(TaskSpec(f"sort[{i}]", 1, 1024, PREEMPTIBLE, 40.0, parents=("split",)) for i in range(3))]
    running = {"split": [TaskProgress(Stage.RUNNING, started_at=0.0)]}
    ahead = plan_ahead(tasks, running, 5.0, 0.0, 20.0, lead_s=15.0)
    assert [(w.task_id, w.due_in_s) for w in ahead.expected] == [(f"sort[{i}]", 25.0) for i in range(3)]
    ended = {"split": [TaskProgress(Stage.DONE, ended_at=32.0)],
             "sort": [TaskProgress(Stage.RUNNING, started_at=33.0)]}
    now_due = plan_ahead(tasks, ended, 40.0, 0.0, 20.0, lead_s=15.0)
    assert [(w.task_id, w.due_in_s) for w in now_due.expected] == [("sort[1]", 0.0), ("sort[2]", 0.0)]
    assert plan_ahead(tasks, ended, 52.0, 0.0, 20.0, lead_s=15.0) == ((), True)


def test_a_looking_ahead_controller_keeps_the_nodes_of_the_expected_first_wave():
    """The run's spot nodes are up and idle before the Toil leader has issued anything: with the first
    wave expected, the controller neither cordons them nor buys more; without it, they go after
    unneeded_idle_s."""
    def idle_spot(node_id: str) -> NodeView:
        return NodeView(node_id, "burst", "m5.large", Market.SPOT, NodeState.READY, Resources(2, 8192), 0.0326, 0.0,
                        Resources(0, 0), 0, 5.0)

    core = NodeView("core", "core", "c5.large", Market.ON_DEMAND, NodeState.READY, Resources(2, 4096), 0.085, 0.0,
                    Resources(0, 0), 0, 5.0)
    tasks = [TaskSpec("split", 2, 2048, RELIABLE, 30.0),
             *(TaskSpec(f"sort[{i}]", 1, 1024, PREEMPTIBLE, 40.0) for i in range(4))]
    for expected, cordoned in ((plan_ahead(tasks, {}, 20.0, 0.0, 60.0, lead_s=15.0).expected, set()), ((), {"a", "b"})):
        ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(lead_s=15.0))
        out = ctl.handle(ClusterObserved((), (core, idle_spot("a"), idle_spot("b")), expected), 20.0)
        assert {o.node_id for o in out if type(o).__name__ == "CordonNode"} == cordoned
        assert not [o for o in out if isinstance(o, CreateNodes)]


# ------------------------------------------------------------ a makespan allowance


def test_the_slack_is_the_allowance_of_a_boot_and_a_run():
    assert slack_s(0.1, 60.0, 2.0) == pytest.approx(6.2)
    assert slack_s(0.1, 60.0, None) == pytest.approx(6.0) and slack_s(0.0, 60.0, 2.0) == 0.0


def test_under_an_allowance_work_waits_the_slack_for_spot_room_not_for_on_demand_room():
    """One free spot vCPU, lead 25 s, four 10 s tasks: they start at 0, 10, 20 and 30 s, and t3, past the
    lead, is left for a new node; with an allowance of 0.5 (slack 0.5 x (25 + 10) = 17.5 s, until 42.5 s)
    it waits for that room.  Late work does not wait for on-demand room (it costs more than the spot node
    it would save): a spot vCPU busy until 50 s (past the slack) and an on-demand one free at 30 s (past
    the lead) leave a queued task for a new node; the same on-demand vCPU free at 20 s (within the lead)
    takes it."""
    four = [waiting(f"t{i}", 10.0) for i in range(4)]
    assert [t.task_id for t in fit_ahead(four, [], [node("s", 1)], 0.0, 25.0).left] == ["t3"]
    assert fit_ahead(four, [], [node("s", 1)], 0.0, 25.0, 0.5).left == []
    busy_spot = node("s", 1, used=1, ends=((50.0, ONE),))
    for od_free_at, left in ((30.0, ["x"]), (20.0, [])):
        od = node("o", 1, used=1, ends=((od_free_at, ONE),), market=Market.ON_DEMAND)
        assert [t.task_id for t in fit_ahead([waiting("x", 10.0)], [], [busy_spot, od], 0.0, 25.0, 0.5).left] == left


def test_reliable_work_waits_the_slack_for_on_demand_room_its_only_room():
    od = node("o", 1, market=Market.ON_DEMAND)
    four = [waiting(f"r{i}", 10.0, reliable=True) for i in range(4)]
    assert [t.task_id for t in fit_ahead(four, [], [od], 0.0, 25.0).left] == ["r3"]
    assert fit_ahead(four, [], [od], 0.0, 25.0, 0.5).left == []


def test_new_nodes_run_short_tasks_back_to_back_within_the_slack():
    """40 tasks of 2 s, boot 60 s, allowance 0.1: the slack is 6.2 s, so a slot runs 1 + 3 of them (at
    60, 62, 64 and 66 s of a new node): 10 slots, not 40; tasks of 10 s share nothing."""
    groups = group_tasks(waiting(f"t{i}", 2.0) for i in range(40))
    tasks = {f"t{i}": waiting(f"t{i}", 2.0) for i in range(40)}
    (cut,) = back_to_back(groups, tasks, 60.0, 0.1)
    assert cut.task_ids == groups[0].task_ids[:10]
    assert back_to_back(groups, tasks, 60.0, 0.0) == groups
    long = {f"t{i}": waiting(f"t{i}", 10.0) for i in range(40)}
    assert back_to_back(groups, long, 60.0, 0.1) == groups
    blind = {f"t{i}": waiting(f"t{i}", None) for i in range(40)}
    assert back_to_back(groups, blind, 60.0, 0.1) == groups  # no estimate: no slot is shared


def test_the_controller_buys_fewer_nodes_for_short_work_under_an_allowance():
    ahead = ElasticPolicy(lead_s=60.0, band_weight=0.0)
    queued = tuple(waiting(f"t{i}", 2.0) for i in range(40))
    core = node("core", 2, used=2, market=Market.ON_DEMAND)

    def vcpus(policy):
        out = ElasticController(ELASTIC_SHAPES, policy).handle(ClusterObserved(queued, (core,)), 1.0)
        return sum(ELASTIC_CATALOG.by_name(c.instance_type).vcpus * c.count for c in out
                   if isinstance(c, CreateNodes))

    assert vcpus(ahead) >= 40
    assert 10 <= vcpus(replace(ahead, makespan_allowance=0.1)) < 16
