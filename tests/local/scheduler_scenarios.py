"""Raw scheduler-API scenarios that need only ``cluster.master_url`` and the ``scheduler`` fixture
(tests/local/rawmesos.py), so they run against any master: collected by tests/local/test_scheduler_flow.py
against plastic's local master and by tests/compose/test_a_real_master.py against a real Mesos 1.11 one
(where they disagree, the local master is wrong)."""

from __future__ import annotations

import os

from tests.local.rawmesos import attrs, operator, task_info
from tests.waiting import eventually


def group_alive(pgid: int) -> bool:
    """Some process of group ``pgid`` is still there."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def framework_of(cluster, fid):
    """The master's GET_FRAMEWORKS entry of framework ``fid``."""
    doc = operator(cluster.master_url, "GET_FRAMEWORKS").json()
    return next(f for f in doc["get_frameworks"]["frameworks"] if f["framework_info"]["id"]["value"] == fid)


def resources_text(resources: list[dict]) -> str:
    """Offered resources as the Mesos master writes them in a message: name(allocated: role):value."""
    parts = []
    for r in resources:
        role = r.get("allocation_info", {}).get("role", "*")
        if r["type"] == "SCALAR":
            value = f"{r['scalar']['value']:.3f}".rstrip("0").rstrip(".")
        elif r["type"] == "RANGES":
            value = "[" + ", ".join(f"{x['begin']}-{x['end']}" for x in r["ranges"]["range"]) + "]"
        else:
            value = "{" + ", ".join(r["set"]["item"]) + "}"
        parts.append(f"{r['name']}(allocated: {role}):{value}")
    return "; ".join(parts)


def test_kill_sends_killing_then_killed_and_kills_the_group(cluster, scheduler):
    s = scheduler(cluster.master_url)
    s.launch("sleep-kill", "sleep 60 & sleep 61; wait", pred=lambda o: attrs(o)["cluster"] == "core")
    running = s.wait_update("sleep-kill", "TASK_RUNNING")
    pid = running["container_status"]["executor_pid"]
    assert s.call("KILL", kill={"task_id": {"value": "sleep-kill"}, "agent_id": running["agent_id"]}).status_code == 202
    killed = s.wait_update("sleep-kill", "TASK_KILLED")
    states = [st["state"] for st in s.updates("sleep-kill")]
    assert states == ["TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_KILLED"]
    assert killed["message"] == "Command terminated with signal Terminated"
    assert "reason" not in killed
    eventually(lambda: not group_alive(pid), timeout=5, what="the task's process group to go")


def test_reconcile_rules(cluster, scheduler):  # transcripts 19, 20, 24, 79
    s = scheduler(cluster.master_url)
    offer = s.offers(pred=lambda o: attrs(o)["cluster"] == "core")[0]
    agent = offer["agent_id"]["value"]
    s.accept([offer["id"]["value"]], [task_info("rec-sleep", agent, {"value": "sleep 60"}),
                                      task_info("rec-echo", agent, {"value": "true"})])
    s.wait_update("rec-sleep", "TASK_RUNNING")
    s.wait_update("rec-echo", "TASK_FINISHED")
    s.wait(lambda: len(s.acked) >= 5, what="acknowledgements")
    mark = len(s.events)
    s.call("RECONCILE", reconcile={"tasks": []})
    st = s.wait_update("rec-sleep", "TASK_RUNNING", reason="REASON_RECONCILIATION")
    assert st["message"] == "Reconciliation: Latest task state" and st["source"] == "SOURCE_MASTER"
    assert "uuid" not in st and "container_status" in st
    s.call("RECONCILE", reconcile={"tasks": [
        {"task_id": {"value": "rec-echo"}, "agent_id": {"value": agent}},
        {"task_id": {"value": "rec-echo"}},
        {"task_id": {"value": "never-existed"}, "agent_id": {"value": agent}},
        {"task_id": {"value": "never-existed-2"}, "agent_id": {"value": "no-such-agent-S99"}},
    ]})
    s.wait(lambda: len([e for e in s.events[mark:] if e["type"] == "UPDATE"]) >= 5, what="reconcile answers")
    answers = [(e["update"]["status"]["task_id"]["value"], e["update"]["status"]["state"],
                e["update"]["status"]["message"], e["update"]["status"].get("agent_id", {}).get("value"))
               for e in s.events[mark:] if e["type"] == "UPDATE"]
    assert answers[1:] == [
        ("rec-echo", "TASK_GONE", "Reconciliation: Task is unknown to the agent", agent),
        ("rec-echo", "TASK_UNKNOWN", "Reconciliation: Task is unknown", None),
        ("never-existed", "TASK_GONE", "Reconciliation: Task is unknown to the agent", agent),
        ("never-existed-2", "TASK_UNKNOWN", "Reconciliation: Task is unknown", "no-such-agent-S99"),
    ]


def test_decline_filter_and_revive(cluster, scheduler):  # transcripts 26, 28
    s = scheduler(cluster.master_url)
    offers = s.offers()
    core = next(o for o in offers if attrs(o)["cluster"] == "core")
    s.call("DECLINE", decline={"offer_ids": [core["id"]], "filters": {"refuse_seconds": 30.0}})
    s.call("DECLINE", decline={"offer_ids": [{"value": "no-such-offer"}]})  # 202, nothing else
    mark = len(s.events)
    s.call("REVIVE", revive={})
    again = s.offers(pred=lambda o: attrs(o)["cluster"] == "core")
    assert again[0]["id"] != core["id"]
    assert not any(e["type"] == "UPDATE" for e in s.events[mark:])


def test_suppress_keeps_outstanding_offers(cluster, scheduler):  # transcript 27
    s = scheduler(cluster.master_url)
    first = s.offers()
    s.call("SUPPRESS", suppress={})
    fw = framework_of(cluster, s.framework_id)
    assert len(fw["offers"]) == len(first)
    # Declining while suppressed brings no new offer; REVIVE does.
    s.call("DECLINE", decline={"offer_ids": [first[0]["id"]], "filters": {"refuse_seconds": 0}})
    mark = len(s.events)
    eventually(lambda: len(framework_of(cluster, s.framework_id).get("offers", [])) == len(first) - 1, timeout=10,
               what="the declined offer gone from the master")
    assert not any(e["type"] == "OFFERS" for e in s.events[mark:])
    s.call("REVIVE", revive={})
    s.offers()


def test_invalid_accepts(cluster, scheduler):  # transcripts 61-64
    s = scheduler(cluster.master_url)
    offers = s.offers()
    burst = next(o for o in offers if attrs(o)["cluster"] == "burst-small")
    agent = burst["agent_id"]["value"]
    s.accept(["no-such-offer"], [task_info("bogus-offer-task", agent, {"value": "true"}, cpus=0.1)])
    st = s.wait_update("bogus-offer-task", "TASK_DROPPED")
    assert (st["reason"], st["source"]) == ("REASON_INVALID_OFFERS", "SOURCE_MASTER")
    assert st["message"] == "Task launched with invalid offers: Offer no-such-offer is no longer valid"
    assert "uuid" not in st
    s.accept([burst["id"]["value"]], [task_info("too-big", agent, {"value": "true", "shell": True}, cpus=8)])
    st = s.wait_update("too-big", "TASK_ERROR")
    assert st["reason"] == "REASON_TASK_INVALID"
    assert st["message"] == ("Total resources cpus(allocated: *):8; mem(allocated: *):32 required by task and its "
                             f"executor is more than available {resources_text(burst['resources'])}")
    if "local" in type(cluster).__module__:  # the transcripts' agent (on the compose cluster it is shaped otherwise)
        assert resources_text(burst["resources"]) == ("ports(allocated: *):[31000-32000]; cpus(allocated: *):1; "
                                                      "mem(allocated: *):2048; disk(allocated: *):10000")
    s.call("REVIVE")
    offer = s.offers(pred=lambda o: o["agent_id"]["value"] == agent)[0]
    s.accept([offer["id"]["value"]], [task_info("no-command", agent, None)])
    st = s.wait_update("no-command", "TASK_ERROR")
    assert st["message"] == "Task should have at least one (but not both) of CommandInfo or ExecutorInfo present"
