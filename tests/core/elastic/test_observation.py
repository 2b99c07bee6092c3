"""plastic.core.elastic.observation: the listed nodes and a JobBook at ``now`` -> the controller's ClusterObserved.

Books are driven by their own events (tests.fakes.jobbook.Harness): what a node's view says of its agent
comes from what the book was told, never from a hand-set field.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.book.events import AgentLost, AgentSeen, NoticeReceived, RuntimeHistoryLoaded
from plastic.core.book.placement import AgentInfo
from plastic.core.elastic.model import ElasticPolicy, NodeState
from plastic.core.elastic.observation import (
    NodeFact,
    NodesListed,
    Observation,
    PlanAhead,
    agents_of,
    observe,
    shapes_by_type,
)
from plastic.core.model import PREEMPTIBLE, Market, Resources, TaskSpec
from tests.fakes.catalogs import ELASTIC_SHAPES
from tests.fakes.jobbook import BURST, CORE, SMALL, Harness

SHAPES = shapes_by_type(ELASTIC_SHAPES)
AHEAD = ElasticPolicy(idle_s=60.0, lead_s=15.0)  # looking a boot ahead


def fact(node_id: str, state: NodeState = NodeState.READY, *, agent: str | None = None, since: float = 0.0,
         market: Market = Market.SPOT, instance: str | None = None, itype: str = "m5.large") -> NodeFact:
    return NodeFact(node_id, "burst", itype, market, state, 0.0, since, agent, instance)


def look(h: Harness, *facts: NodeFact, policy: ElasticPolicy = ElasticPolicy(),
         ahead: PlanAhead = PlanAhead()) -> Observation:
    return observe(h.book, NodesListed(facts), SHAPES, policy, ahead, h.now)


def view(h: Harness, node: NodeFact, **kw):
    (v,) = look(h, node, **kw).observed.nodes
    return v


# ------------------------------------------------------------ states


def test_a_node_whose_agent_the_book_has_seen_lost_is_gone_now_whatever_the_provider_says():
    h = Harness()
    h(AgentSeen(BURST))
    h(AgentLost("burst"))
    for provider_says in (NodeState.READY, NodeState.PENDING):
        v = view(h, fact("n", provider_says, agent="burst", since=0.5))
        assert v.state is NodeState.GONE and v.ended_at == h.now and v.idle_since is None
    interrupted = view(h, fact("n", NodeState.INTERRUPTED, agent="burst", since=0.5))
    assert interrupted.state is NodeState.INTERRUPTED and interrupted.ended_at == 0.5  # the provider's time


def test_a_terminate_notice_makes_the_node_draining_and_its_ready_time_its_agent_s():
    h = Harness()
    h(AgentSeen(BURST))
    seen_at = h.now
    h(NoticeReceived("burst", terminate_at=h.now + 120))
    v = view(h, fact("n", agent="burst", since=0.5))
    assert v.state is NodeState.DRAINING and v.ready_at == seen_at and v.idle_since is None


def test_a_booting_node_whose_agent_met_the_framework_is_ready():
    h = Harness()
    assert view(h, fact("n", NodeState.PENDING, agent="burst")).state is NodeState.PENDING
    h(AgentSeen(BURST))
    v = view(h, fact("n", NodeState.PENDING, agent="burst", since=0.5))
    assert v.state is NodeState.READY and v.ready_at == h.now and v.capacity == BURST.capacity


def test_a_node_without_an_agent_id_is_found_by_its_instance_and_capacity_comes_from_its_shape():
    h = Harness()
    agent = AgentInfo("a-1", Resources(3, 3000), preemptible=True, instance_id="i-123")
    h(AgentSeen(agent))
    h(AgentLost("a-1"))
    v = view(h, fact("n", instance="i-123"))
    assert v.state is NodeState.GONE  # its agent, by instance id, is lost
    listed = NodesListed((fact("n", instance="i-123"), fact("m", agent="burst")))
    assert agents_of(h.book, listed, ["m", "n", "x"]) == ("burst", "a-1")
    unknown = view(h, fact("u", itype="c5.large", since=2.0))  # no agent known: the shape's room, the provider's time
    assert unknown.capacity == SHAPES[("c5.large", Market.SPOT)].usable and unknown.idle_since == 2.0
    assert unknown.usd_per_hour == SHAPES[("c5.large", Market.SPOT)].usd_per_hour


# ------------------------------------------------------------ idle, busy, task ends


def test_idle_since_is_when_the_agent_was_last_busy_and_a_busy_node_has_none():
    h = Harness(estimates={"t": 40.0})
    h(AgentSeen(BURST), dt=1.0)
    assert view(h, fact("n", agent="burst")).idle_since == h.now  # seen, never busy
    task = h.run("j", agent=BURST)
    busy = view(h, fact("n", agent="burst"))
    assert busy.idle_since is None and busy.running == 1 and busy.used == SMALL
    h.status(task, "TASK_FINISHED", agent_id="burst")
    ended_at = h.now
    h(AgentSeen(CORE), dt=7.0)
    idle = view(h, fact("n", agent="burst"))
    assert idle.idle_since == ended_at and idle.running == 0 and idle.used == Resources(0, 0)


def test_looking_ahead_a_running_task_ends_by_its_tool_s_estimate_and_queued_ones_carry_it():
    h = Harness(estimates={"t": 40.0})
    h.run("j", agent=BURST)
    began = h.book.jobs["j"].current.began_at
    h.issue("q")
    h.now += 3.0
    seen = look(h, fact("n", agent="burst"), policy=AHEAD).observed
    (v,) = seen.nodes
    assert v.task_ends == ((began + 40.0, SMALL),)
    (queued,) = seen.queued
    assert queued.task_id == "q" and queued.runtime_s == 40.0 and queued.waited_s == 3.0
    blind = look(h, fact("n", agent="burst")).observed  # no lead: no estimates at all
    assert blind.nodes[0].task_ends == () and blind.queued[0].runtime_s is None


# ------------------------------------------------------------ the plan ahead


PLAN = (TaskSpec("split", 1, 1024, PREEMPTIBLE, 10.0),
        TaskSpec("sort[0]", 1, 1024, PREEMPTIBLE, 30.0, parents=("split",)),
        TaskSpec("sort[1]", 1, 1024, PREEMPTIBLE, 30.0, parents=("split",)))


def test_the_plan_s_tasks_are_dated_from_the_start_then_from_their_parents_and_dropped_once_settled():
    h = Harness()
    h.now = 100.0
    first = look(h, policy=AHEAD, ahead=PlanAhead(PLAN))
    assert first.ahead == PlanAhead(PLAN, 100.0)  # the first look starts the clock
    due = {t.task_id: t.due_in_s for t in first.observed.expected}
    # no node at all: the split is issued now but runs only once a node is up, a boot (the lead) from now
    assert due == {"split": 0.0, "sort[0]": 25.0, "sort[1]": 25.0}
    booting = look(h, fact("n", NodeState.PENDING), policy=AHEAD, ahead=PlanAhead(PLAN)).observed
    # a node booting since 0, more than a boot ago: taken as up at any moment, so the split runs now
    assert {t.task_id: t.due_in_s for t in booting.expected}["sort[0]"] == 10.0
    ready = look(h, fact("n"), policy=AHEAD, ahead=PlanAhead(PLAN)).observed  # a node is up: it runs now
    assert {t.task_id: t.due_in_s for t in ready.expected} == {"split": 0.0, "sort[0]": 10.0, "sort[1]": 10.0}
    h.run("s", agent=CORE, step="split")  # the leader issued the split; it runs
    h.now += 4.0
    later = look(h, policy=AHEAD, ahead=first.ahead)
    assert later.ahead == first.ahead and {t.task_id for t in later.observed.expected} == {"sort[0]", "sort[1]"}
    h.issue("a", step="sort")
    h.issue("b", step="sort")
    settled = look(h, policy=AHEAD, ahead=later.ahead)
    assert settled.observed.expected == () and settled.ahead == PlanAhead((), 100.0)  # every task has its job
    assert look(h, policy=AHEAD, ahead=settled.ahead).ahead == settled.ahead


def test_a_first_wave_the_leader_never_issues_is_given_up_a_hold_after_its_first_issue():
    """Until the leader issues anything it is still starting (Toil took 63 s on a 300-task trace), and
    the first wave is still coming; once it has issued a job, a first-wave task it has not issued within
    the hold (idle_s) never comes."""
    h = Harness()
    start = look(h, policy=AHEAD, ahead=PlanAhead(PLAN[:1]))
    assert [t.task_id for t in start.observed.expected] == ["split"]
    h.now += 120.0  # two holds and nothing issued: the leader is starting, the split still expected
    assert [t.task_id for t in look(h, policy=AHEAD, ahead=start.ahead).observed.expected] == ["split"]
    h.issue("x", step="other")  # the leader is up: it issued another step's job
    h.now += 59.0
    assert look(h, policy=AHEAD, ahead=start.ahead).ahead.tasks == PLAN[:1]
    h.now += 1.0  # idle_s (60 s) after the leader's first issue: nothing of the plan is coming
    gone = look(h, policy=AHEAD, ahead=start.ahead)
    assert gone.observed.expected == () and gone.ahead.tasks == ()


def test_without_a_lead_the_plan_is_not_looked_at():
    h = Harness()
    seen = look(h, ahead=PlanAhead(PLAN))
    assert seen.observed.expected == () and seen.ahead == PlanAhead(PLAN)


# ------------------------------------------------------------ properties

AGENTS = ("a0", "a1", "a2", "a3")
facts = st.builds(
    fact, st.sampled_from(("n0", "n1", "n2", "n3", "n4")), st.sampled_from(list(NodeState)),
    agent=st.none() | st.sampled_from(AGENTS), since=st.floats(0.0, 50.0, allow_nan=False),
    market=st.sampled_from(list(Market)))
happenings = st.lists(st.tuples(st.sampled_from(("seen", "lost", "notice", "job")), st.sampled_from(AGENTS)),
                      max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(facts, max_size=6), happenings, st.booleans())
def test_every_listed_node_has_one_view_and_an_ended_one_has_its_end(listed, happened, ahead):
    """Whatever the book was told: one view per listed node, in order, with the node's identity; a gone
    or interrupted node has an end no later than now; only a ready node without tasks has an idle time;
    the queue observed is the book's."""
    h = Harness(estimates={"t": 20.0})
    for i, (what, agent) in enumerate(happened):
        info = AgentInfo(agent, Resources(2, 4096), preemptible=True)
        if what == "seen":
            h(AgentSeen(info))
        elif what == "lost":
            h(AgentLost(agent))
        elif what == "notice":
            h(NoticeReceived(agent, terminate_at=h.now + 30))
        else:
            h.issue(f"j{i}")
            h.offer(info)
    h.now = 60.0
    policy = AHEAD if ahead else ElasticPolicy()
    seen = look(h, *listed, policy=policy, ahead=PlanAhead(PLAN)).observed
    assert [(v.node_id, v.instance_type, v.market) for v in seen.nodes] == \
        [(n.node_id, n.instance_type, n.market) for n in listed]
    for v, n in zip(seen.nodes, listed, strict=True):
        if v.state in (NodeState.GONE, NodeState.INTERRUPTED):
            assert v.ended_at is not None and v.ended_at <= h.now
        else:
            assert v.ended_at is None
        assert v.idle_since is None or (v.state is NodeState.READY and v.running == 0)
        assert v.state is n.state or (n.state in (NodeState.READY, NodeState.PENDING) and n.agent_id is not None)
        assert v.used.nonnegative and v.running == len(h.book.on_agent(n.agent_id or ""))
    assert [t.task_id for t in seen.queued] == [j.job_id for j in h.book.queued()]
    assert all(t.waited_s >= 0 for t in seen.queued)


# ------------------------------------------------------------ runtimes' spread


def test_looking_ahead_queued_tasks_carry_their_step_and_each_step_its_tool_s_runtimes_spread():
    h = Harness()
    h.book.handle(RuntimeHistoryLoaded("bwa-tool", (30.0, 10.0, 20.0)), h.now)  # the history the shell loads
    h.issue("a", tool="bwa-tool", step="align")
    h.issue("b", tool="bwa-tool", step="align")
    priors = (("align", (500.0,)), ("sort", (7.0, 9.0)))  # the plan's runtimes of each step
    seen = look(h, policy=AHEAD, ahead=PlanAhead((), 0.0, priors)).observed
    assert [(t.task_id, t.step) for t in seen.queued] == [("a", "align"), ("b", "align")]
    # the tool's history, which the book knows, over the plan's runtimes; a step with no task waiting: none
    assert seen.spreads == (("align", (10.0, 20.0, 30.0)),)
    blind = look(h, ahead=PlanAhead((), 0.0, priors)).observed  # no lead: no steps, no spreads
    assert blind.spreads == () and {t.step for t in blind.queued} == {None}


def test_an_expected_task_s_spread_is_its_step_s_in_the_plan_until_the_book_meets_its_tool():
    h = Harness()
    h.now = 100.0
    plan = (TaskSpec("split", 1, 1024, PREEMPTIBLE, 10.0),)
    seen = look(h, policy=AHEAD, ahead=PlanAhead(plan, None, (("split", (10.0, 12.0)),))).observed
    assert [(t.task_id, t.step) for t in seen.expected] == [("split", "split")]
    assert seen.spreads == (("split", (10.0, 12.0)),)


def test_a_tool_several_steps_run_gives_no_step_its_spread_the_plan_s_runtimes_do():
    """A generic tool (one sleeping tool for every step of a replayed trace) mixes the steps' runtimes:
    a step takes the plan's runtimes of its own tasks instead, and none without them."""
    h = Harness()
    h.book.handle(RuntimeHistoryLoaded("sleep", (1.0, 500.0, 3000.0)), h.now)
    h.issue("a", tool="sleep", step="dump")
    h.issue("b", tool="sleep", step="index")
    seen = look(h, policy=AHEAD, ahead=PlanAhead((), 0.0, (("dump", (400.0, 900.0)),))).observed
    assert seen.spreads == (("dump", (400.0, 900.0)),)
