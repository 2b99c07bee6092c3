"""Unit tests of the master's state machine: stimuli in, effects out, fake time, no I/O."""

from __future__ import annotations

import random

import pytest

from plastic.local import calls
from plastic.local.config import AgentSpec
from plastic.local.effects import EndStream, Kill, KillAgent, Launch, Send
from plastic.local.protocol import CallError
from plastic.local.resources import ResourceBag
from plastic.local.state import MasterState

T0 = 1_800_000_000.0


def make_state(**kwargs) -> MasterState:
    st = MasterState(master_id="m", rng=random.Random(1), now=T0, agent_ping_timeout_s=15.0, **kwargs)
    st.add_agent(AgentSpec("core", 4, 8192, False), port=1, now=T0)
    st.add_agent(AgentSpec("burst", 1, 1024, True), port=2, now=T0)
    return st


def sends(effects, etype=None):
    return [e.event for e in effects if isinstance(e, Send) and (etype is None or e.event["type"] == etype)]


def subscribe(st, name="fw", caps=("PARTITION_AWARE", "TASK_KILLING_STATE"), fid=None, stream="s1", now=T0,
              failover_timeout=0.0):
    info = {"user": "u", "name": name, "failover_timeout": failover_timeout,
            "capabilities": [{"type": c} for c in caps]}
    if fid:
        info["id"] = {"value": fid}
    return st.subscribe(info, stream, now)


def offers_by_agent(effects):
    return {o["agent_id"]["value"]: o for ev in sends(effects, "OFFERS") for o in ev["offers"]["offers"]}


def launch(st, fw, offer, task_id, cpus=0.1, mem=32, refuse=None, now=T0):
    body = {"offer_ids": [offer["id"]], "operations": [{"type": "LAUNCH", "launch": {"task_infos": [
        {"name": task_id, "task_id": {"value": task_id}, "agent_id": offer["agent_id"],
         "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": cpus}},
                       {"name": "mem", "type": "SCALAR", "scalar": {"value": mem}}],
         "command": {"value": "true"}}]}}]}
    if refuse is not None:
        body["filters"] = {"refuse_seconds": refuse}
    return calls.accept(st, fw, body, now)


def status(st, effects, state, now=T0, uuid="u"):
    (eff,) = [e for e in effects if isinstance(e, Launch)]
    st_json = {"task_id": {"value": eff.task_id}, "state": state, "source": "SOURCE_EXECUTOR",
               "agent_id": {"value": eff.agent_id}, "timestamp": now, "uuid": uuid + state}
    return st.task_status(eff.agent_id, eff.framework_id, eff.task_id, st_json, now)


def test_subscribe_then_offers_for_every_agent():
    st = make_state()
    fid, eff = subscribe(st)
    assert fid == "m-0000"
    assert [e["type"] for e in sends(eff)] == ["SUBSCRIBED", "HEARTBEAT"]
    assert st.needs_allocation
    offers = offers_by_agent(st.allocate(T0))
    assert set(offers) == {"m-S0", "m-S1"}
    assert len(sends(st.allocate(T0))) == 0  # everything is offered already
    st.validate()


def test_launch_accounts_resources_and_frees_them_at_the_terminal_status():
    st = make_state()
    fid, _ = subscribe(st)
    fw = st.frameworks[fid]
    offer = offers_by_agent(st.allocate(T0))["m-S1"]
    eff = launch(st, fw, offer, "t1", cpus=0.5, mem=512)
    assert [type(e) for e in eff] == [Launch]
    agent = st.agents["m-S1"]
    assert agent.used == ResourceBag.of(cpus=0.5, mem=512) and not agent.offered
    # The 0.5 cpus left are filtered for the default 5 s...
    assert "m-S1" not in offers_by_agent(st.allocate(T0 + 1))
    # ...but offered again once more frees up (not a subset of the filter any more).
    assert st.task_status("m-S1", fid, "t1", {"state": "TASK_STARTING", "uuid": "a", "task_id": {"value": "t1"}},
                          T0 + 1)
    status_eff = st.task_status("m-S1", fid, "t1", {"state": "TASK_FINISHED", "uuid": "b",
                                                    "task_id": {"value": "t1"}}, T0 + 1)
    assert status_eff == []  # queued behind the unacknowledged TASK_STARTING
    assert agent.used == ResourceBag()
    assert offers_by_agent(st.allocate(T0 + 1))["m-S1"]["resources"][1]["scalar"]["value"] == 1.0
    st.validate()


def test_updates_flow_one_at_a_time_per_task_and_are_retried():
    st = make_state(update_retry_s=10.0)
    fid, _ = subscribe(st)
    fw = st.frameworks[fid]
    offer = offers_by_agent(st.allocate(T0))["m-S0"]
    body = {"offer_ids": [offer["id"]], "operations": [{"type": "LAUNCH", "launch": {"task_infos": [
        {"name": t, "task_id": {"value": t}, "agent_id": offer["agent_id"], "command": {"value": "true"},
         "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1}}]} for t in ("a", "b")]}}]}
    calls.accept(st, fw, body, T0)
    first = st.task_status("m-S0", fid, "a", {"task_id": {"value": "a"}, "state": "TASK_STARTING", "uuid": "a1"}, T0)
    assert [e["update"]["status"]["uuid"] for e in sends(first)] == ["a1"]
    assert st.task_status("m-S0", fid, "a", {"task_id": {"value": "a"}, "state": "TASK_RUNNING", "uuid": "a2"},
                          T0) == []
    other = st.task_status("m-S0", fid, "b", {"task_id": {"value": "b"}, "state": "TASK_STARTING", "uuid": "b1"}, T0)
    assert len(sends(other)) == 1  # task a's unacknowledged update does not block task b
    assert st.next_deadline() == T0 + 5.0  # the filter on the 2 cpus left over
    assert st.advance(T0 + 5.0) == [] and st.needs_allocation
    assert st.next_deadline() == T0 + 10.0
    retried = st.advance(T0 + 10.0)
    assert sorted(e["update"]["status"]["uuid"] for e in sends(retried)) == ["a1", "b1"]
    assert st.next_deadline() == T0 + 30.0  # backoff doubles
    acked = st.acknowledge(fw, "m-S0", "a", "a1", T0 + 11)
    assert [e["update"]["status"]["uuid"] for e in sends(acked)] == ["a2"]
    assert st.acknowledge(fw, "m-S0", "a", "bogus", T0 + 11) == []
    st.validate()


def test_terminal_acknowledgement_completes_the_task():
    st = make_state()
    fid, _ = subscribe(st)
    fw = st.frameworks[fid]
    eff = launch(st, fw, offers_by_agent(st.allocate(T0))["m-S0"], "t")
    status(st, eff, "TASK_FINISHED")
    assert "t" in fw.tasks
    st.acknowledge(fw, "m-S0", "t", "uTASK_FINISHED", T0)
    assert "t" not in fw.tasks and "t" in fw.completed
    st.validate()


def test_agent_loss_rescinds_now_and_reports_after_the_ping_timeout():
    st = make_state()
    fid, _ = subscribe(st)
    fw = st.frameworks[fid]
    offers = offers_by_agent(st.allocate(T0))
    eff = launch(st, fw, offers["m-S1"], "t", refuse=0)
    status(st, eff, "TASK_RUNNING")
    rest = offers_by_agent(st.allocate(T0))["m-S1"]
    lost = st.agent_lost("m-S1", T0 + 1)
    assert sends(lost) == [{"type": "RESCIND", "rescind": {"offer_id": rest["id"]}}]
    assert st.advance(T0 + 15.9) == []
    eff = st.advance(T0 + 16.0)
    update, failure = sends(eff)
    s = update["update"]["status"]
    assert (s["state"], s["reason"], s["message"]) == ("TASK_UNREACHABLE", "REASON_AGENT_REMOVED",
                                                       "health check timed out")
    assert s["unreachable_time"] == {"nanoseconds": int((T0 + 16.0) * 1e9)}
    assert failure == {"type": "FAILURE", "failure": {"agent_id": {"value": "m-S1"}}}
    assert "t" in fw.unreachable and st.agents["m-S1"].removed
    st.validate()


def test_non_partition_aware_frameworks_hear_task_lost():
    st = make_state()
    fid, _ = subscribe(st, caps=())
    eff = launch(st, st.frameworks[fid], offers_by_agent(st.allocate(T0))["m-S1"], "t")
    status(st, eff, "TASK_RUNNING")
    st.agent_lost("m-S1", T0)
    (update, _failure) = sends(st.advance(T0 + 15))
    assert update["update"]["status"]["state"] == "TASK_LOST"


def test_failover_ends_the_old_stream_and_keeps_tasks():
    st = make_state()
    fid, _ = subscribe(st, failover_timeout=100)
    launch(st, st.frameworks[fid], offers_by_agent(st.allocate(T0))["m-S0"], "t")
    fid2, eff = subscribe(st, fid=fid, stream="s2", failover_timeout=100)
    assert fid2 == fid
    assert eff[0] == Send("s1", {"type": "ERROR", "error": {"message": "Framework failed over"}})
    assert eff[1] == EndStream("s1")
    assert [e.stream_id for e in eff[2:]] == ["s2", "s2"]
    assert "t" in st.frameworks[fid].tasks and not st.frameworks[fid].offers
    assert st.disconnected("s1", T0) == []  # the old stream closing changes nothing
    with pytest.raises(CallError) as err:
        st.check_call(fid, "s1")
    assert err.value.status == 400
    st.validate()


def test_disconnected_framework_removed_after_failover_timeout():
    st = make_state()
    fid, _ = subscribe(st, failover_timeout=30)
    eff = launch(st, st.frameworks[fid], offers_by_agent(st.allocate(T0))["m-S0"], "t")
    status(st, eff, "TASK_RUNNING")
    st.disconnected("s1", T0 + 1)
    with pytest.raises(CallError) as err:
        st.check_call(fid, "s1")
    assert (err.value.status, err.value.message) == (403, "Framework is not subscribed")
    assert st.advance(T0 + 30) == []
    (kill,) = st.advance(T0 + 31)
    assert kill == Kill("m-S0", fid, "t", silent=True, grace_s=3.0)
    assert fid in st.completed_frameworks and st.agents["m-S0"].used == ResourceBag()
    with pytest.raises(CallError) as err:
        st.check_call(fid, "s1")
    assert (err.value.status, err.value.message) == (400, "Framework cannot be found")
    st.validate()


def test_decline_filter_expires_and_revive_clears_it():
    st = make_state()
    fid, _ = subscribe(st)
    fw = st.frameworks[fid]
    offers = offers_by_agent(st.allocate(T0))
    calls.decline(st, fw, {"offer_ids": [offers["m-S0"]["id"]], "filters": {"refuse_seconds": 30}}, T0)
    assert st.allocate(T0 + 29) == []
    assert st.next_deadline() == T0 + 30
    st.advance(T0 + 30)
    assert set(offers_by_agent(st.allocate(T0 + 30))) == {"m-S0"}
    calls.decline(st, fw, {"offer_ids": [o["id"] for o in offers_by_agent([]).values()]}, T0)
    fw.filters["m-S0"] = []
    st.validate()


def test_suppress_and_revive():
    st = make_state()
    fid, _ = subscribe(st)
    fw = st.frameworks[fid]
    offers = offers_by_agent(st.allocate(T0))
    calls.apply_call(st, fw, {"type": "SUPPRESS"}, T0)
    calls.decline(st, fw, {"offer_ids": [offers["m-S0"]["id"]], "filters": {"refuse_seconds": 0}}, T0)
    assert st.allocate(T0) == [] and len(fw.offers) == 1
    calls.apply_call(st, fw, {"type": "REVIVE"}, T0)
    assert set(offers_by_agent(st.allocate(T0))) == {"m-S0"}


def test_interruption_kills_the_agent_at_the_notice_time():
    st = make_state()
    with pytest.raises(CallError):
        st.interrupt("m-S0", 120, T0)  # not preemptible
    st.interrupt("m-S1", 120, T0)
    agent = st.agents["m-S1"]
    assert (agent.notice_time, agent.rebalance_time) == (T0 + 120, T0)
    assert st.advance(T0 + 119) == []
    assert st.advance(T0 + 120) == [KillAgent("m-S1", "spot interruption")]


def test_random_interruptions_are_seeded():
    def first_deadline(seed: int) -> float:
        st = MasterState(master_id="m", rng=random.Random(seed), now=T0, interrupt_rate_per_min=1.0)
        st.add_agent(AgentSpec("burst", 1, 1024, True), port=1, now=T0)
        st.add_agent(AgentSpec("core", 1, 1024, False), port=2, now=T0)
        assert len(st._timers) == 1  # only the preemptible agent
        return st.next_deadline()

    assert first_deadline(3) == first_deadline(3) != first_deadline(4)


def test_drain_kills_with_reason_and_ends_drained():
    st = make_state()
    fid, _ = subscribe(st)
    fw = st.frameworks[fid]
    eff = launch(st, fw, offers_by_agent(st.allocate(T0))["m-S1"], "t", refuse=0)
    status(st, eff, "TASK_RUNNING")
    offers_by_agent(st.allocate(T0))
    drained = st.drain_agent("m-S1", 10.0, False, T0)
    assert [type(e) for e in drained] == [Send, Kill]
    assert drained[1].reason == "REASON_AGENT_DRAINING" and drained[1].killing_state and drained[1].grace_s == 10.0
    assert st.agents["m-S1"].drain["state"] == "DRAINING"
    status(st, eff, "TASK_KILLED")
    assert st.agents["m-S1"].drain["state"] == "DRAINED"
    assert "m-S1" not in offers_by_agent(st.allocate(T0))
    st.reactivate_agent("m-S1", T0)
    assert "m-S1" in offers_by_agent(st.allocate(T0))
    st.validate()


def test_invalid_offer_and_task_errors():
    st = make_state()
    fid, _ = subscribe(st)
    fw = st.frameworks[fid]
    offer = offers_by_agent(st.allocate(T0))["m-S1"]
    eff = launch(st, fw, {"id": {"value": "nope"}, "agent_id": offer["agent_id"]}, "x")
    s = sends(eff)[0]["update"]["status"]
    assert (s["state"], s["reason"]) == ("TASK_DROPPED", "REASON_INVALID_OFFERS")
    eff = launch(st, fw, offer, "big", cpus=2)
    s = sends(eff)[0]["update"]["status"]
    assert s["state"] == "TASK_ERROR" and s["message"].startswith("Total resources cpus(allocated: *):2;")
    assert offer["id"]["value"] not in fw.offers  # the offer was used up by the ACCEPT
    st.validate()


def test_teardown_kills_silently_and_ends_the_stream():
    st = make_state()
    fid, _ = subscribe(st)
    fw = st.frameworks[fid]
    eff = launch(st, fw, offers_by_agent(st.allocate(T0))["m-S0"], "t")
    status(st, eff, "TASK_RUNNING")
    out = st.teardown(fw, T0)
    assert out[0] == EndStream("s1") and isinstance(out[1], Kill) and out[1].silent
    assert not sends(out)


def test_resources_arithmetic_is_exact():
    r = ResourceBag.of(cpus=1)
    for _ in range(10):
        r = r - ResourceBag.of(cpus=0.1)
    assert r == ResourceBag()
    ports = ResourceBag({}, {"ports": [(31000, 32000)]})
    left = ports - ResourceBag({}, {"ports": [(31000, 31000), (31500, 31600)]})
    assert left.ranges["ports"] == [(31001, 31499), (31601, 32000)]
    assert ports.contains(ResourceBag({}, {"ports": [(31010, 31020)]}))
    assert not left.contains(ResourceBag({}, {"ports": [(31000, 31001)]}))
    assert ResourceBag.of(cpus=8, mem=32).describe() == "cpus(allocated: *):8; mem(allocated: *):32"


# ---------------------------------------------------------------- master failover: re-registration rules
def test_unknown_framework_id_on_subscribe_is_a_reregistration_after_master_failover():
    """A new master adopts a framework it does not know under the id it brings (Mesos after a master
    failover); its old tasks are unknown here: TASK_UNKNOWN (TASK_LOST without PARTITION_AWARE)."""
    old = "previous-master-0003"
    st = make_state()
    fid, eff = subscribe(st, fid=old, failover_timeout=60)
    assert fid == old and st.frameworks[old].connected
    (subscribed, _) = sends(eff)
    assert subscribed["subscribed"]["framework_id"] == {"value": old}
    fw = st.frameworks[old]
    answers = sends(st.reconcile(fw, [("old-task", "previous-master-S0"), ("old-task-2", None)], T0), "UPDATE")
    assert [(u["update"]["status"]["state"], u["update"]["status"]["reason"]) for u in answers] == \
        [("TASK_UNKNOWN", "REASON_RECONCILIATION")] * 2
    assert all("uuid" not in u["update"]["status"] for u in answers)
    assert sends(st.reconcile(fw, [], T0)) == []  # implicit reconciliation: no task is known
    lost_fid, _ = subscribe(st, fid="previous-master-0004", caps=("TASK_KILLING_STATE",), stream="s2")
    (answer,) = sends(st.reconcile(st.frameworks[lost_fid], [("old-task", "previous-master-S0")], T0), "UPDATE")
    assert answer["update"]["status"]["state"] == "TASK_LOST"
    st.validate()


def test_unknown_framework_id_on_other_calls_stays_400():
    st = make_state()
    with pytest.raises(CallError) as err:
        st.check_call("previous-master-0003", "some-stream")
    assert (err.value.status, err.value.message) == (400, "Framework cannot be found")


def test_removed_framework_stays_refused_for_the_masters_lifetime():
    """TEARDOWN'd ids are refused on SUBSCRIBE even after they left the bounded completed_frameworks."""
    from plastic.local.framework_book import MAX_COMPLETED_FRAMEWORKS

    st = make_state()
    fid, _ = subscribe(st)
    st.teardown(st.frameworks[fid], T0)
    for i in range(MAX_COMPLETED_FRAMEWORKS + 1):
        other, _ = subscribe(st, name=f"fw{i}", stream=f"x{i}")
        st.teardown(st.frameworks[other], T0)
    assert fid not in st.completed_frameworks
    again, eff = subscribe(st, fid=fid, stream="s9")
    assert again == fid and fid not in st.frameworks
    assert [e.event for e in eff if isinstance(e, Send)] == [{"type": "ERROR",
                                                              "error": {"message": "Framework has been removed"}}]
    assert eff[-1] == EndStream("s9")
    st.validate()


def test_new_framework_ids_skip_ids_taken_by_reregistered_frameworks():
    st = make_state()
    adopted, _ = subscribe(st, fid="m-0000", stream="s1")
    fresh, _ = subscribe(st, stream="s2")
    assert (adopted, fresh) == ("m-0000", "m-0001")
    st.teardown(st.frameworks[fresh], T0)
    assert subscribe(st, stream="s3")[0] == "m-0002"
    st.validate()
