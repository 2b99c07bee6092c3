"""Placement of queued tasks onto offers (plastic/core/book/placement.py): rules and properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.book.placement import (
    AgentInfo,
    Offer,
    PendingTask,
    ReviveOffers,
    SuppressOffers,
    offer_flow,
    place,
    why_unplaceable,
)
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt, Resources

CORE = AgentInfo("core-1", Resources(4, 8192), preemptible=False, cluster="core", instance_type="m5.xlarge")
BURST = AgentInfo("burst-1", Resources(2, 4096), preemptible=True, cluster="burst", instance_type="c5.large")
BURST2 = AgentInfo("burst-2", Resources(2, 4096), preemptible=True, cluster="burst", instance_type="c5.large")
CLUSTER = {a.agent_id: a for a in (CORE, BURST, BURST2)}


def offer(agent: AgentInfo, free: Resources | None = None, oid: str | None = None) -> Offer:
    return Offer(oid or f"o-{agent.agent_id}", agent, free or agent.capacity)


def task(tid: str, cpu: int, ram: int, preempt: Preempt = PREEMPTIBLE, **kw) -> PendingTask:
    return PendingTask(tid, Resources(cpu, ram), preempt, **kw)


def test_reliable_task_never_on_a_preemptible_agent():
    p = place([offer(BURST)], [task("r", 1, 512, RELIABLE)], CLUSTER)
    assert not p.launches and p.still_waiting == ("r",)
    p = place([offer(BURST), offer(CORE)], [task("r", 1, 512, RELIABLE)], CLUSTER)
    assert [(lt.task_id, lt.agent_id) for lt in p.launches] == [("r", "core-1")]


def test_preemptible_task_prefers_burst_agents():
    p = place([offer(CORE), offer(BURST)], [task("p", 1, 512)], CLUSTER)
    assert p.launches[0].agent_id == "burst-1"
    assert "burst" in p.launches[0].reason


def test_preemptible_task_falls_back_to_reliable_when_no_burst_fits():
    p = place([offer(CORE), offer(BURST)], [task("big", 3, 1024)], CLUSTER)
    assert p.launches[0].agent_id == "core-1"


def test_escalated_task_needs_a_reliable_agent():
    t = task("e", 1, 512, Preempt(2), preemptions=2)
    assert t.needs_reliable
    p = place([offer(BURST), offer(CORE)], [t], CLUSTER)
    assert p.launches[0].agent_id == "core-1"
    assert not task("e", 1, 512, Preempt(2), preemptions=1).needs_reliable


def test_dense_packing_picks_the_tightest_agent():
    half = offer(BURST2, Resources(1, 2048), "o-half")
    p = place([offer(BURST), half], [task("p", 1, 1024)], CLUSTER)
    assert p.launches[0].offer_id == "o-half"


def test_priority_reliable_first_then_larger_first():
    queue = [task("small", 1, 256), task("large", 2, 2048), task("rel", 1, 256, RELIABLE)]
    p = place([offer(CORE, Resources(1, 512)), offer(BURST)], queue, CLUSTER)
    assert [lt.task_id for lt in p.launches] == ["rel", "large"]
    assert p.still_waiting == ("small",)


def test_draining_agents_take_nothing_new():
    draining = AgentInfo("burst-1", BURST.capacity, True, "burst", "c5.large", draining=True)
    p = place([offer(draining)], [task("p", 1, 256)], {**CLUSTER, "burst-1": draining})
    assert not p.launches
    assert [d.offer_id for d in p.declines] == ["o-burst-1"]


def test_unused_offers_are_declined_briefly_while_work_waits_and_longer_when_idle():
    p = place([offer(BURST)], [task("r", 1, 256, RELIABLE)], CLUSTER, refuse_seconds=30)
    assert p.declines[0].refuse_seconds == 1.0
    p = place([offer(BURST)], [], CLUSTER, refuse_seconds=30)
    assert p.declines[0].refuse_seconds == 30


def test_unplaceable_tasks_are_reported_with_the_reason():
    p = place([offer(CORE)], [task("huge", 64, 1024), task("pin", 1, 256, instance_type="r5.large")], CLUSTER)
    reasons = {u.task_id: u.reason for u in p.unplaceable}
    assert "64 vcpus" in reasons["huge"] and "4 vcpus" in reasons["huge"]
    assert "r5.large" in reasons["pin"]
    only_burst = {"burst-1": BURST}
    assert "reliable" in why_unplaceable(task("r", 1, 1, RELIABLE), only_burst.values())
    assert why_unplaceable(task("r", 1, 1), {}.values()) == "the cluster has no agents"


def test_pinned_task_goes_to_its_type():
    p = place([offer(CORE), offer(BURST)], [task("pin", 1, 256, instance_type="m5.xlarge")], CLUSTER)
    assert p.launches[0].agent_id == "core-1"


def test_offer_flow():
    assert offer_flow(False, True, suppressed=False) == SuppressOffers()
    assert offer_flow(True, True, suppressed=True) is None
    assert offer_flow(True, False, suppressed=True) == ReviveOffers()
    assert offer_flow(True, False, suppressed=False) == ReviveOffers()
    assert offer_flow(False, False, suppressed=False) is None


agents_st = st.lists(
    st.tuples(st.integers(1, 16), st.integers(512, 32768), st.booleans(), st.integers(0, 100)),
    min_size=1, max_size=6)
tasks_st = st.lists(
    st.tuples(st.integers(1, 8), st.integers(128, 16384), st.sampled_from([True, False, 1, 2]), st.integers(0, 3)),
    max_size=30)


@settings(max_examples=150, deadline=None)
@given(agents_st, tasks_st, st.randoms(use_true_random=False))
def test_properties(agent_specs, task_specs, rnd):
    agents = [AgentInfo(f"a{i}", Resources(c, r), pre, "burst" if pre else "core", "t")
              for i, (c, r, pre, _) in enumerate(agent_specs)]
    offers = [Offer(f"o{i}", a, Resources(a.capacity.vcpus * pct // 100, a.capacity.ram_mib * pct // 100))
              for i, (a, (_, _, _, pct)) in enumerate(zip(agents, agent_specs, strict=True))]
    queue = [PendingTask(f"t{i}", Resources(c, r), Preempt.from_json(pre), preemptions=n)
             for i, (c, r, pre, n) in enumerate(task_specs)]
    cluster = {a.agent_id: a for a in agents}
    p = place(offers, queue, cluster)
    by_offer = {o.offer_id: o for o in offers}
    by_task = {t.task_id: t for t in queue}
    # every task exactly once: launched, waiting or unplaceable
    accounted = [lt.task_id for lt in p.launches] + list(p.still_waiting) + [u.task_id for u in p.unplaceable]
    assert sorted(accounted) == sorted(by_task)
    # no offer over its resources; reliable never on preemptible
    used: dict[str, Resources] = {}
    for lt in p.launches:
        used[lt.offer_id] = used.get(lt.offer_id, Resources(0, 0)) + lt.demand
        assert not (by_task[lt.task_id].needs_reliable and by_offer[lt.offer_id].agent.preemptible)
    for oid, u in used.items():
        assert by_offer[oid].available.holds(u)
    # unplaceable only when no agent could ever hold it
    for u in p.unplaceable:
        t = by_task[u.task_id]
        assert not any(a.capacity.holds(t.demand) and not (t.needs_reliable and a.preemptible) for a in agents)
    # used offers are not declined, the others are
    assert set(p.offers_used).isdisjoint(d.offer_id for d in p.declines)
    assert set(p.offers_used) | {d.offer_id for d in p.declines} == set(by_offer)
    # the same queue in another order gives the same decisions
    shuffled = queue[:]
    rnd.shuffle(shuffled)
    assert place(offers, shuffled, cluster) == p
