"""The Provisioner: the controller's decisions carried out through a provider, the book's queue observed.

A Framework over a recording fake driver, a RecordingProvider (the provider interface's fake), the real
ElasticController; agents appear to the framework as the fake driver's offers for the provider's nodes.
"""

from __future__ import annotations

import threading

from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.model import ElasticPolicy, NodeState
from plastic.core.model import PREEMPTIBLE, RELIABLE, Market, Resources
from plastic.framework.adapter import Framework
from plastic.framework.launcher import TaskCommand
from plastic.framework.provisioner import Provisioner
from plastic.providers.recording import RecordingProvider
from tests.fakes.catalogs import ELASTIC_SHAPES
from tests.fakes.clock import Clock
from tests.fakes.driver import FakeDriver
from tests.fakes.records import Kinds


def offer_of(node, cpus, mem, oid):
    preemptible = node.market is Market.SPOT
    return {"id": {"value": oid}, "agent_id": {"value": node.node_id}, "hostname": "127.0.0.1",
            "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": cpus}},
                          {"name": "mem", "type": "SCALAR", "scalar": {"value": mem}}],
            "attributes": [{"name": "preemptible", "type": "TEXT", "text": {"value": str(preemptible).lower()}},
                           {"name": "cluster", "type": "TEXT", "text": {"value": node.cluster}},
                           {"name": "instance_type", "type": "TEXT", "text": {"value": node.instance_type}}]}


def setup(policy=ElasticPolicy(idle_s=30), refuse=()):
    clock = Clock()
    rec = Kinds()
    fw = Framework("http://x", driver_factory=FakeDriver, clock=clock, wall_clock=clock, recorders=[rec])
    fw.registered(fw.driver, {"value": "fw-1"}, {})
    provider = RecordingProvider(clock=clock, refuse=refuse)
    core = provider.create(__import__("plastic.providers", fromlist=["NodeRequest"]).NodeRequest(
        "core", "c5.large", Market.ON_DEMAND, 1, 2, 4096)).node_ids[0]
    prov = Provisioner(fw, ElasticController(ELASTIC_SHAPES, policy), provider, ELASTIC_SHAPES)
    return fw, provider, prov, rec, clock, core


def test_queued_work_creates_spot_nodes_whose_agents_then_take_it():
    fw, provider, prov, rec, clock, core = setup()
    for i in range(4):
        fw.issue(f"j{i}", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE)
    clock.t += 5
    prov.tick()
    (create,) = [c for name, c in provider.calls if name == "create"][1:]
    assert create.market is Market.SPOT and create.count * 2 + 2 >= 4  # 2 fit the idle core node
    assert create.tags["plastic:cluster"] == create.cluster and rec.of("node_requested")[0]["reason"] == "queued_work"
    assert rec.of("node_created")[0]["node_ids"]
    clock.t += 5
    prov.tick()  # the nodes are ready now; the framework has not met their agents yet: nothing new asked
    assert len([c for name, c in provider.calls if name == "create"]) == 2
    spot = [n for n in provider.list_nodes() if n.market is Market.SPOT]
    offers = [offer_of(n, 2, 4096, f"o-{n.node_id}") for n in [*spot, provider.nodes[core]]]
    fw.resourceOffers(fw.driver, offers)
    launched = sorted(t["agent_id"]["value"] for c in fw.driver.of("launchTasks") for t in c[1][1])
    assert launched == sorted([core, core] + [n.node_id for n in spot for _ in range(2)])  # spot first, then core


def telling_provisioner(fw: Framework, provider: RecordingProvider):
    """A provisioner that looks every 10 minutes unless nudged, and an event set by each of its looks."""
    prov = Provisioner(fw, ElasticController(ELASTIC_SHAPES, ElasticPolicy(idle_s=30)), provider, ELASTIC_SHAPES,
                       interval_s=600)
    looked = threading.Event()
    tick = prov.tick

    def tick_and_tell():
        outputs = tick()
        looked.set()
        return outputs

    prov.tick = tick_and_tell
    return prov, looked


def test_work_issued_is_looked_at_soon_after_its_burst_not_at_the_next_interval():
    """Toil issues a scatter's jobs together: the running provisioner looks once they stop coming
    (BATCH_IDLE_S of quiet), not up to interval_s later; stop() wakes a loop that waits."""
    import time

    from plastic.framework import provisioner as provisioner_module

    fw, provider, _, rec, clock, core = setup()
    prov, looked = telling_provisioner(fw, provider)
    prov.start()
    try:
        started = time.monotonic()
        for i in range(4):
            fw.issue(f"j{i}", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE)
        assert looked.wait(60), "no look within a minute of the jobs issued (the interval is 10 minutes)"
        waited = time.monotonic() - started
        assert waited >= provisioner_module.BATCH_IDLE_S * 0.9  # the burst's quiet was waited for
        assert [c.market for name, c in provider.calls if name == "create"][1:] == [Market.SPOT]
        assert rec.of("node_requested")[0]["reason"] == "queued_work"
    finally:
        stopped = time.monotonic()
        prov.stop(timeout_s=30)
    assert not prov._thread.is_alive() and time.monotonic() - stopped < 30


def test_a_task_that_ends_is_looked_at_soon_so_its_node_goes_when_done():
    """A running provisioner looks soon after a task ends (BATCH_IDLE_S of quiet), not up to interval_s
    later, so that the controller can release a node as its last task ends; the Framework's listeners
    hear of ended attempts only."""
    fw, provider, _, rec, clock, core = setup()
    heard = []
    fw.on_attempt_ended.append(lambda: heard.append(True))
    core_node = provider.nodes[core]
    fw.issue("j", TaskCommand("true"), Resources(1, 1024), RELIABLE)
    fw.resourceOffers(fw.driver, [offer_of(core_node, 2, 4096, "o0")])
    fw.statusUpdate(fw.driver, {"task_id": {"value": "j.1"}, "state": "TASK_RUNNING", "uuid": "a"})
    assert heard == []  # issued, launched, running: no attempt ended
    prov, looked = telling_provisioner(fw, provider)
    prov.start()
    try:
        fw.statusUpdate(fw.driver, {"task_id": {"value": "j.1"}, "state": "TASK_FINISHED", "uuid": "b"})
        assert heard == [True]
        assert looked.wait(60), "no look within a minute of the task's end (the interval is 10 minutes)"
    finally:
        prov.stop(timeout_s=30)


def test_tasks_ending_one_after_another_do_not_put_off_the_look():
    """While tasks keep ending less than BATCH_IDLE_S apart (a wide wave's tail), the look still comes
    about BATCH_IDLE_S after the first end, not at the next interval: the node whose last task ended
    first is released then (the local montage replay kept one 4 s longer when ends postponed the look)."""
    import threading

    fw, provider, _, rec, clock, core = setup()
    prov, looked = telling_provisioner(fw, provider)
    prov.start()
    stop_ending = threading.Event()
    ends = []

    def keep_ending() -> None:  # an end every tenth of a second, until the look came (a minute at most)
        while not stop_ending.is_set() and len(ends) < 600:
            for listener in list(fw.on_attempt_ended):
                listener()
            ends.append(True)
            stop_ending.wait(0.1)

    ender = threading.Thread(target=keep_ending)
    ender.start()
    try:
        assert looked.wait(60), "no look within a minute of steady task ends (the interval is 10 minutes)"
        assert ender.is_alive()  # the look came while tasks were still ending
    finally:
        stop_ending.set()
        ender.join(10)
        prov.stop(timeout_s=30)


def test_an_idle_node_is_cordoned_then_terminated_and_never_the_reliable_one():
    fw, provider, prov, rec, clock, core = setup()
    core_node = provider.nodes[core]
    fw.issue("r", TaskCommand("true"), Resources(2, 4096), RELIABLE)  # keeps the core node busy
    fw.resourceOffers(fw.driver, [offer_of(core_node, 2, 4096, "o0")])
    fw.issue("j", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE)
    prov.tick()
    (spot,) = [n for n in provider.list_nodes() if n.market is Market.SPOT]
    fw.resourceOffers(fw.driver, [offer_of(spot, 2, 4096, "o1")])
    fw.statusUpdate(fw.driver, {"task_id": {"value": "j.1"}, "state": "TASK_RUNNING", "uuid": "a"})
    clock.t += 100
    assert not rec.of("node_cordoned")  # busy
    prov.tick()
    fw.statusUpdate(fw.driver, {"task_id": {"value": "j.1"}, "state": "TASK_FINISHED", "uuid": "b"})
    clock.t += 31
    prov.tick()
    assert [r["node_id"] for r in rec.of("node_cordoned")] == [spot.node_id]
    assert spot.node_id in fw.book.ignored  # no new work reaches it
    clock.t += 5
    prov.tick()
    assert ("terminate", (spot.node_id,)) in provider.calls
    assert provider.nodes[spot.node_id].state is NodeState.GONE and provider.nodes[core].state is NodeState.READY
    assert [r["node_id"] for r in rec.of("node_released")] == [spot.node_id]


def test_a_refused_spot_type_falls_back_and_reliable_work_asks_on_demand():
    fw, provider, prov, rec, clock, core = setup(refuse=[("*", Market.SPOT)])
    fw.issue("p", TaskCommand("true"), Resources(2, 4096), PREEMPTIBLE)
    fw.issue("r", TaskCommand("true"), Resources(2, 4096), RELIABLE)
    markets = []
    for _ in range(8):
        clock.t += 5
        prov.tick()
    for name, req in provider.calls:
        if name == "create":
            markets.append(req.market)
    assert rec.of("create_refused") and all(r["market"] == "spot" for r in rec.of("create_refused"))
    assert markets.count(Market.ON_DEMAND) >= 2  # the core node, the reliable task's, then the fallback


def test_provider_unreachable_is_logged_once_and_nothing_decided(caplog):
    fw, provider, prov, rec, clock, core = setup()

    def down():
        from plastic.providers import ProviderError

        raise ProviderError("connection refused", source="local provider")

    provider.list_nodes = down
    fw.issue("j", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE)
    assert prov.tick() == [] and prov.tick() == []
    assert caplog.text.count("unreachable") == 1


def test_with_a_boot_lead_the_observation_carries_runtime_estimates():
    """--boot-seconds sets the controller's lead: queued jobs carry their tool's estimate (from the run's
    runtime history) and each node the expected ends of its running tasks; without a lead, neither (the
    observation is the core's, plastic.core.elastic.observation: here through the provisioner's listing)."""
    for lead_s, estimated in ((60.0, True), (0.0, False)):
        fw, provider, prov, rec, clock, core = setup(ElasticPolicy(idle_s=30, lead_s=lead_s))
        fw.book.runtimes.loaded("sort", [40.0, 40.0])
        for i in range(3):
            fw.issue(f"j{i}", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE, tool="sort")
        fw.resourceOffers(fw.driver, [offer_of(provider.nodes[core], 2, 4096, "o-core")])
        launched_at = clock.t
        with fw.lock:
            prov.machine.handle(prov.listed(provider.list_nodes()), fw.book, clock.t)
        obs = prov.machine.observed
        (queued,) = obs.queued  # two of three went to the core node's 2 cpus
        (view,) = [v for v in obs.nodes if v.node_id == core]
        if estimated:
            assert queued.runtime_s == 40.0
            assert view.task_ends == ((launched_at + 40.0, Resources(1, 1024)),) * 2
        else:
            assert queued.runtime_s is None and view.task_ends == ()


def test_a_step_whose_runtimes_spread_gets_small_nodes_through_the_provisioner():
    """Looking a boot ahead, the jobs of a step carry it, and the step's tool's runtimes (the run's history)
    give its spread: eighteen dumps of 100 or 2,000 s (two fit the idle core node) get 2-vCPU nodes, not a
    16-vCPU one paid until its longest dump ends (plastic.core.elastic.spread); the same jobs with like
    runtimes, one large node."""
    bought = {}
    for label, history in (("spread", [100.0] * 10 + [2000.0] * 10), ("like", [1000.0] * 20)):
        fw, provider, prov, rec, clock, core = setup(ElasticPolicy(idle_s=30, lead_s=60.0))
        fw.book.runtimes.loaded("dump", history)
        for i in range(18):
            fw.issue(f"d{i}", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE, tool="dump", step="dump")
        clock.t += 5
        prov.tick()
        creates = [c for name, c in provider.calls if name == "create"][1:]
        bought[label] = sorted((c.instance_type, c.count) for c in creates)
        assert all(c.market is Market.SPOT for c in creates)
    assert bought["spread"] == [("c5.large", 8)]
    assert bought["like"] == [("c5.4xlarge", 1)]


def test_under_a_makespan_allowance_short_jobs_share_the_new_nodes_vcpus():
    """200 jobs of a tool whose runtimes are 2 s, a 60 s boot: the idle core node's 2 vCPUs start 62 of
    them within the boot and the other 138 get a vCPU each on new nodes; with --makespan-allowance 0.1
    (a slack of 6.2 s) the core node starts 68, and four run back to back on each new vCPU: 33 vCPUs
    (plastic.core.elastic.forecast.back_to_back)."""
    vcpus = {}
    for allowance in (0.0, 0.1):
        policy = ElasticPolicy(idle_s=30, lead_s=60.0, makespan_allowance=allowance)
        fw, provider, prov, rec, clock, core = setup(policy)
        fw.book.runtimes.loaded("tiny", [2.0] * 20)
        for i in range(200):
            fw.issue(f"t{i}", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE, tool="tiny")
        clock.t += 5
        prov.tick()
        vcpus[allowance] = sum(c.count * c.vcpus for name, c in provider.calls[1:] if name == "create")
    assert vcpus[0.0] >= 138 and 33 <= vcpus[0.1] <= 40, vcpus


def test_the_plan_s_first_wave_keeps_its_nodes_until_the_leader_issues_it():
    """Looking a boot ahead, the run's spot node is up and idle while the Toil leader has issued nothing
    yet (a slow start): the plan's first wave is expected work, so the node is kept.  The leader issues
    two of the four planned sorts (the core node takes them): the other two are still expected, until
    the hold (--idle-seconds from the leader's first issue) ends; then a node nothing needs goes."""
    from plastic.core.model import TaskSpec
    from plastic.providers import NodeRequest

    fw, provider, prov, rec, clock, core = setup()
    plan_tasks = tuple(TaskSpec(f"sort[{i}]", 1, 1024, PREEMPTIBLE, 40.0) for i in range(4))
    prov = Provisioner(fw, ElasticController(ELASTIC_SHAPES, ElasticPolicy(idle_s=60, lead_s=15.0)), provider, ELASTIC_SHAPES,
                       plan_tasks=plan_tasks)
    (spot,) = provider.create(NodeRequest("burst", "m5.large", Market.SPOT, 1, 2, 8192)).node_ids
    prov.tick()
    for _ in range(5):  # 25 s idle: a node no work needs would have gone at once
        clock.t += 5
        out = prov.tick()
        assert not [o for o in out if type(o).__name__ in ("CordonNode", "CreateNodes")], out
    for i in range(2):  # the leader issues the wave's step; the core node takes both jobs
        fw.issue(f"s{i}", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE, step="sort")
    fw.resourceOffers(fw.driver, [offer_of(provider.nodes[core], 2, 4096, "o-core")])
    assert len(fw.book.live()) == 2
    issued_at = clock.t
    while clock.t < issued_at + 60:  # sort[2] and sort[3] are still expected: the node is kept
        clock.t += 5
        prov.tick()
        assert not rec.of("node_cordoned") or clock.t >= issued_at + 60
    clock.t += 5
    prov.tick()
    assert [r["node_id"] for r in rec.of("node_cordoned")] == [spot]


def test_the_run_s_plan_gives_cluster_names_and_tasks_and_a_bad_one_one_line(tmp_path):
    """--plasticPlan: new nodes join the plan's clusters by type and market, its tasks give the first
    wave; an unreadable or malformed plan is a PlasticError naming the file and the option."""
    import json

    import pytest

    from plastic.catalogs import load_catalog
    from plastic.core.errors import PlasticError
    from plastic.core.model import Workload
    from plastic.core.planning.plan import plan_to_json
    from plastic.core.planning.sizing import plan_workload
    from plastic.framework.elastic_options import read_plan
    from tests.fakes.workloads import dag

    plan = plan_workload(Workload(tuple(dag())), load_catalog(None))
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_to_json(plan)))
    names, tasks = read_plan(str(path))
    assert names == {(c.instance_type, c.market): c.name for c in plan.clusters}
    assert [t.id for t in tasks] == [t.id for t in plan.tasks] and tasks[0].runtime_s == 30.0
    assert read_plan(None) == ({}, ())
    for text in ("{not json", json.dumps({"clusters": []})):
        path.write_text(text)
        with pytest.raises(PlasticError) as caught:
            read_plan(str(path))
        assert str(path) in str(caught.value) and "--plasticPlan" in str(caught.value)
        assert "\n" not in str(caught.value)


def test_every_step_of_the_provisioner_is_logged_whole_and_replays(tmp_path):
    """The decisions log holds the machine's configuration and every look (nodes and all, whether it
    decided something or not) and every answer of the provider: replayed with the book, the controller
    decides the same (plastic.core.elastic.replay); a cordon's AgentsIgnored is a book event after it."""
    import json

    from plastic.core.elastic.replay import replay_all

    clock = Clock()
    fw = Framework("http://x", driver_factory=FakeDriver, clock=clock, wall_clock=clock,
                   record_path=tmp_path / "decisions.jsonl")
    fw.registered(fw.driver, {"value": "fw-1"}, {})
    provider = RecordingProvider(clock=clock, refuse=[("c5.large", Market.SPOT)])
    from plastic.providers import NodeRequest

    core = provider.create(NodeRequest("core", "c5.large", Market.ON_DEMAND, 1, 2, 4096)).node_ids[0]
    prov = Provisioner(fw, ElasticController(ELASTIC_SHAPES, ElasticPolicy(idle_s=30, lead_s=10.0)), provider,
                       ELASTIC_SHAPES)
    fw.issue("r", TaskCommand("true"), Resources(2, 4096), RELIABLE, tool="t")
    fw.resourceOffers(fw.driver, [offer_of(provider.nodes[core], 2, 4096, "o0")])
    for i in range(3):
        fw.issue(f"j{i}", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE, tool="t")
    prov.tick()  # the cheapest spot type is refused ...
    clock.t += 5
    prov.tick()  # ... the next one is bought
    spot = [n for n in provider.list_nodes() if n.market is Market.SPOT]
    fw.resourceOffers(fw.driver, [offer_of(n, 2, 4096, f"o-{n.node_id}") for n in spot])
    for i in range(3):
        fw.statusUpdate(fw.driver, {"task_id": {"value": f"j{i}.1"}, "state": "TASK_RUNNING", "uuid": f"r{i}"})
    clock.t += 5
    prov.tick()
    provider.interrupt(spot[0].node_id)
    for i in range(3):
        fw.statusUpdate(fw.driver, {"task_id": {"value": f"j{i}.1"}, "state": "TASK_FINISHED", "uuid": f"f{i}"})
    for _ in range(12):
        clock.t += 5
        prov.tick()
    fw.close_recorders()
    log = [json.loads(line) for line in (tmp_path / "decisions.jsonl").read_text().splitlines()]
    elastic = [e for e in log if e.get("m") == "elastic"]
    looks = [e for e in elastic if e["kind"] == "elastic_event" and e["event"]["type"] == "NodesListed"]
    assert elastic[0]["event"]["type"] == "ElasticStarted" and len(looks) == 15
    assert {"node_requested", "node_interrupted", "node_cordoned", "node_released", "create_refused"} <= \
        {e["kind"] for e in elastic}
    cordon = next(i for i, e in enumerate(log) if e["kind"] == "node_cordoned")
    ignored = next(i for i, e in enumerate(log) if e["kind"] == "event" and e["event"]["type"] == "AgentsIgnored")
    assert cordon < ignored
    result = replay_all(log)
    assert not result.mismatches, result.mismatches[0]
    assert (result.elastic.starts, result.elastic.looks, result.elastic.skipped) == (1, 15, 0)
    assert result.elastic.answers >= 2
