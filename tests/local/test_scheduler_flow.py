"""The scheduler API end to end, with raw JSON over HTTP, checked against the recorded Mesos 1.11.1 behaviour."""

from __future__ import annotations

import base64
import json

import pytest

from plastic.local.handle import LocalCluster
from plastic.mesos.recordio import Decoder
from tests.data_paths import MESOS_TRANSCRIPTS, require
from tests.local.clusters import SPEC
from tests.local.rawmesos import attrs, operator, scalar, task_info
from tests.local.scheduler_scenarios import (  # collected here too: they run against any master
    framework_of,
    group_alive,
    test_decline_filter_and_revive,  # noqa: F401 (collected, or a fixture, here)
    test_invalid_accepts,  # noqa: F401 (collected, or a fixture, here)
    test_kill_sends_killing_then_killed_and_kills_the_group,  # noqa: F401 (collected, or a fixture, here)
    test_reconcile_rules,  # noqa: F401 (collected, or a fixture, here)
    test_suppress_keeps_outstanding_offers,  # noqa: F401 (collected, or a fixture, here)
)
from tests.waiting import eventually


def _transcript_events(name: str) -> list[dict]:
    path = require(MESOS_TRANSCRIPTS / name)
    return [json.loads(line)["event"] for line in path.read_text().splitlines() if line.strip()]


def _keys(obj):
    """The shape of a JSON value: dict keys in order, recursively (lists by their first element)."""
    if isinstance(obj, dict):
        return {k: _keys(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_keys(obj[0])] if obj else []
    return type(obj).__name__


def test_subscribe_stream_shape(cluster, scheduler):
    s = scheduler(cluster.master_url)
    assert s.status == 200
    assert s.headers["content-type"] == "application/json"
    assert s.headers["transfer-encoding"] == "chunked"
    assert 0 < len(s.stream_id) <= 128
    offers = s.offers()
    types = [e["type"] for e in s.events[:3]]
    assert types == ["SUBSCRIBED", "HEARTBEAT", "OFFERS"]
    # One RecordIO record per HTTP chunk, each decodable alone.
    for chunk in s.chunks:
        assert len(Decoder().feed(chunk)) == 1
    sub = s.events[0]["subscribed"]
    assert sub["heartbeat_interval_seconds"] == 15.0
    assert sub["master_info"]["version"] == "1.11.1"
    assert sub["master_info"]["ip"] == 16777343
    assert sub["master_info"]["capabilities"] == [{"type": "AGENT_UPDATE"}, {"type": "AGENT_DRAINING"}, {}]
    # All three agents in the first OFFERS event, with their capacity and attributes.
    assert len(offers) == 3
    by_cluster = {attrs(o)["cluster"]: o for o in offers}
    core = by_cluster["core"]
    assert attrs(core) == {"preemptible": "false", "cluster": "core", "instance_type": "m5.xlarge"}
    assert scalar(core["resources"], "cpus") == 4.0 and scalar(core["resources"], "mem") == 8192.0
    assert [r["name"] for r in core["resources"]] == ["ports", "cpus", "mem", "disk"]
    assert attrs(by_cluster["burst-small"])["preemptible"] == "true"


def test_event_shapes_match_the_transcript(cluster, scheduler):
    real = _transcript_events("08_SUBSCRIBE_stream.events.jsonl")
    s = scheduler(cluster.master_url)
    s.launch("shape-1", "echo hi")
    s.wait_update("shape-1", "TASK_FINISHED")
    ours = {e["type"]: e for e in reversed(s.events)}
    theirs = {e["type"]: e for e in reversed(real)}
    for etype in ("SUBSCRIBED", "HEARTBEAT"):
        assert _keys(ours[etype]) == _keys(theirs[etype]), etype
    our_offer = ours["OFFERS"]["offers"]["offers"][0]
    their_offer = theirs["OFFERS"]["offers"]["offers"][0]
    assert list(our_offer) == list(their_offer)
    assert _keys(our_offer["resources"][1]) == _keys(their_offer["resources"][1])
    assert _keys(our_offer["attributes"][0]) == _keys(their_offer["attributes"][0])
    for state in ("TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"):
        mine = next(st for st in s.updates("shape-1") if st["state"] == state)
        real_st = next(e["update"]["status"] for e in real
                       if e["type"] == "UPDATE" and e["update"]["status"]["state"] == state)
        assert _keys(mine) == _keys(real_st), state


def test_launch_finish_fail_and_sandbox(cluster, scheduler):
    s = scheduler(cluster.master_url)
    offer = s.offers(pred=lambda o: attrs(o)["cluster"] == "core")[0]
    agent = offer["agent_id"]["value"]
    infos = [
        task_info("ok-1", agent, {"value": "echo out; echo err >&2", "shell": True}),
        task_info("fail-3", agent, {"value": "echo $PLASTIC_X; exit 3", "shell": True,
                                    "environment": {"variables": [{"name": "PLASTIC_X", "value": "x-value"}]}}),
        task_info("args-1", agent, {"value": "/bin/echo", "shell": False,
                                    "arguments": ["echo", "a b", "$HOME"]}),
    ]
    assert s.accept([offer["id"]["value"]], infos).status_code == 202
    fin = s.wait_update("ok-1", "TASK_FINISHED")
    assert fin["message"] == "Command exited with status 0"
    failed = s.wait_update("fail-3", "TASK_FAILED")
    assert failed["message"] == "Command exited with status 3"
    s.wait_update("args-1", "TASK_FINISHED")
    states = [st["state"] for st in s.updates("ok-1")]
    assert states == ["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]
    for st in s.updates("ok-1"):
        assert st["source"] == "SOURCE_EXECUTOR" and st["executor_id"] == {"value": "ok-1"}
        assert len(base64.b64decode(st["uuid"])) == 16
        assert st["agent_id"] == {"value": agent}
        assert st["container_status"]["executor_pid"] > 0
    box = cluster.sandbox("ok-1")
    assert (box / "stdout").read_text() == "out\n" and (box / "stderr").read_text() == "err\n"
    assert (cluster.sandbox("fail-3") / "stdout").read_text() == "x-value\n"
    assert (cluster.sandbox("args-1") / "stdout").read_text() == "a b $HOME\n"


def test_kill_without_killing_state_and_kill_of_unknown_task(cluster, scheduler):
    s = scheduler(cluster.master_url, capabilities=("PARTITION_AWARE",))
    s.launch("sleep-k2", "sleep 60")
    running = s.wait_update("sleep-k2", "TASK_RUNNING")
    s.call("KILL", kill={"task_id": {"value": "sleep-k2"}, "agent_id": running["agent_id"]})
    s.wait_update("sleep-k2", "TASK_KILLED")
    assert "TASK_KILLING" not in [st["state"] for st in s.updates("sleep-k2")]
    s.call("KILL", kill={"task_id": {"value": "never-launched"}})
    st = s.wait_update("never-launched", "TASK_UNKNOWN")
    assert (st["reason"], st["source"], st["message"]) == ("REASON_RECONCILIATION", "SOURCE_MASTER",
                                                           "Reconciliation: Task is unknown")
    assert "uuid" not in st


def test_reconcile_without_partition_awareness_says_lost(cluster, scheduler):  # transcript 91
    s = scheduler(cluster.master_url, capabilities=("TASK_KILLING_STATE",))
    s.call("RECONCILE", reconcile={"tasks": [{"task_id": {"value": "ghost"}}]})
    st = s.wait_update("ghost", "TASK_LOST")
    assert st["message"] == "Reconciliation: Task is unknown"


def test_decline_filter_holds_for_its_duration():
    with LocalCluster({"clusters": [{"name": "c", "count": 1, "cpus": 1, "ram_mib": 256, "preemptible": False}]}) \
            as c:
        from tests.local.rawmesos import Scheduler

        s = Scheduler(c.master_url)
        try:
            s.subscribe()
            offer = s.offers()[0]
            s.call("DECLINE", decline={"offer_ids": [offer["id"]], "filters": {"refuse_seconds": 0.5}})
            declined_at = s.times[-1]
            s.next("OFFERS", timeout=5)
            assert s.times[-1] - declined_at >= 0.45
        finally:
            s.shutdown()


def test_invalid_offer_without_partition_awareness_is_lost(cluster, scheduler):
    s = scheduler(cluster.master_url, capabilities=())
    s.accept(["no-such-offer"], [task_info("bogus-2", "some-agent", {"value": "true"})])
    assert s.wait_update("bogus-2", "TASK_LOST")["reason"] == "REASON_INVALID_OFFERS"


def test_failover_keeps_tasks_and_ends_the_old_stream(cluster, scheduler):  # transcripts 51, 55, 59
    a = scheduler(cluster.master_url, failover_timeout=60.0)
    a.launch("fo-sleep", "sleep 60")
    a.wait_update("fo-sleep", "TASK_RUNNING")
    b = scheduler(cluster.master_url, framework_id=a.framework_id, failover_timeout=60.0)
    assert b.framework_id == a.framework_id and b.stream_id != a.stream_id
    err = a.next("ERROR", timeout=5)
    assert err == {"type": "ERROR", "error": {"message": "Framework failed over"}}
    a.wait(lambda: a.ended, what="the old stream's terminating chunk")
    b.offers()
    assert [e["type"] for e in b.events[:3]] == ["SUBSCRIBED", "HEARTBEAT", "OFFERS"]
    b.call("RECONCILE", reconcile={"tasks": []})
    b.wait_update("fo-sleep", "TASK_RUNNING")
    # Disconnect B; re-subscribe C within the failover timeout: the task is still there.
    b.close()
    eventually(lambda: not framework_of(cluster, a.framework_id)["connected"], timeout=10, what="disconnection")
    c = scheduler(cluster.master_url, framework_id=a.framework_id, failover_timeout=60.0)
    c.call("KILL", kill={"task_id": {"value": "fo-sleep"}})
    c.wait_update("fo-sleep", "TASK_KILLED")


def test_disconnected_framework_is_removed_after_failover_timeout(cluster, scheduler):
    a = scheduler(cluster.master_url, failover_timeout=0.5)
    a.launch("fo-gone", "sleep 60")
    pid = a.wait_update("fo-gone", "TASK_RUNNING")["container_status"]["executor_pid"]
    a.close()

    def completed():
        doc = operator(cluster.master_url, "GET_FRAMEWORKS").json()["get_frameworks"]
        return any(f["framework_info"]["id"]["value"] == a.framework_id for f in doc["completed_frameworks"])

    eventually(completed, timeout=5, what="the framework's removal")
    eventually(lambda: not group_alive(pid), timeout=5, what="its task's death")
    resp = a.post({"framework_id": {"value": a.framework_id}, "type": "REVIVE"}, stream_id=a.stream_id)
    assert (resp.status_code, resp.text) == (400, "Framework cannot be found")


def test_operator_views(cluster, scheduler):  # transcripts 29, 36, 37
    s = scheduler(cluster.master_url)
    s.launch("op-sleep", "sleep 60", pred=lambda o: attrs(o)["cluster"] == "core")
    s.wait_update("op-sleep", "TASK_RUNNING")
    agents = operator(cluster.master_url, "GET_AGENTS").json()
    assert agents["type"] == "GET_AGENTS"
    a0 = agents["get_agents"]["agents"][0]
    assert list(a0)[:8] == ["agent_info", "active", "deactivated", "version", "pid", "registered_time",
                            "total_resources", "allocated_resources"]
    assert a0["active"] is True and a0["agent_info"]["attributes"][0]["name"] == "preemptible"
    tasks = operator(cluster.master_url, "GET_TASKS").json()["get_tasks"]
    mine = next(t for t in tasks["tasks"] if t["task_id"]["value"] == "op-sleep")
    assert mine["state"] == "TASK_RUNNING" and mine["status_update_state"] == "TASK_RUNNING"
    assert set(tasks) == {"tasks", "unreachable_tasks", "completed_tasks"}
    fw = framework_of(cluster, s.framework_id)
    assert fw["active"] and fw["connected"] and not fw["recovered"]
    assert list(fw["framework_info"])[:3] == ["user", "name", "id"]
    assert scalar(fw["allocated_resources"], "cpus") == pytest.approx(0.1)


def test_unacknowledged_updates_are_resent_and_do_not_block_others():
    with LocalCluster(SPEC, update_retry_s=0.3, heartbeat_s=0.2) as c:
        from tests.local.rawmesos import Scheduler

        s = Scheduler(c.master_url, auto_ack=False)
        try:
            s.subscribe()
            offer = s.offers(pred=lambda o: attrs(o)["cluster"] == "core")[0]
            agent = offer["agent_id"]["value"]
            s.accept([offer["id"]["value"]], [task_info("noack-1", agent, {"value": "true"}),
                                              task_info("noack-2", agent, {"value": "true"})])
            # Without acks only the first update of each task flows, and it is sent again.
            s.wait(lambda: sum(1 for st in s.updates("noack-1") if st["state"] == "TASK_STARTING") >= 2,
                   what="a re-sent TASK_STARTING")
            first, again = [st for st in s.updates("noack-1") if st["state"] == "TASK_STARTING"][:2]
            assert first["uuid"] == again["uuid"]
            assert s.updates("noack-2")[0]["state"] == "TASK_STARTING"
            assert all(st["state"] == "TASK_STARTING" for st in s.updates("noack-1"))
            # Acknowledging lets the next one through.
            s.acknowledge(first)
            s.wait_update("noack-1", "TASK_RUNNING")
            # Heartbeats keep coming at the configured interval.
            s.wait(lambda: sum(e["type"] == "HEARTBEAT" for e in s.events) >= 4, what="heartbeats")
        finally:
            s.shutdown()


def test_launch_group_and_update_framework(cluster, scheduler):
    s = scheduler(cluster.master_url, capabilities=("PARTITION_AWARE",))
    offer = s.take_offer(lambda o: attrs(o)["cluster"] == "core")
    agent = offer["agent_id"]["value"]
    group = {"type": "LAUNCH_GROUP", "launch_group": {
        "executor": {"executor_id": {"value": "grp"}, "type": "DEFAULT",
                     "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.1}}]},
        "task_group": {"tasks": [task_info("grp-a", agent, {"value": "true"}),
                                 task_info("grp-b", agent, {"value": "exit 4"})]}}}
    resp = s.call("ACCEPT", accept={"offer_ids": [offer["id"]], "operations": [group]})
    assert resp.status_code == 202
    s.wait_update("grp-a", "TASK_FINISHED")
    assert s.wait_update("grp-b", "TASK_FAILED")["message"] == "Command exited with status 4"
    info = dict(s.body["subscribe"]["framework_info"], id={"value": s.framework_id},
                capabilities=[{"type": "PARTITION_AWARE"}, {"type": "TASK_KILLING_STATE"}])
    assert s.call("UPDATE_FRAMEWORK", update_framework={"framework_info": info}).status_code == 202
    caps = framework_of(cluster, s.framework_id)["framework_info"]["capabilities"]
    assert {"type": "TASK_KILLING_STATE"} in caps


def test_duplicate_task_id_is_an_error(cluster, scheduler):
    s = scheduler(cluster.master_url)
    offer = s.take_offer(lambda o: attrs(o)["cluster"] == "core")
    agent = offer["agent_id"]["value"]
    s.accept([offer["id"]["value"]], [task_info("dup", agent, {"value": "sleep 30"}),
                                      task_info("dup", agent, {"value": "sleep 30"})])
    assert s.wait_update("dup", "TASK_ERROR")["message"] == "Task has duplicate ID: dup"
    s.wait_update("dup", "TASK_RUNNING")


def test_kill_policy_grace_then_sigkill(cluster, scheduler):
    s = scheduler(cluster.master_url)
    s.launch("stubborn", "trap '' TERM; sleep 60", pred=lambda o: attrs(o)["cluster"] == "core")
    s.wait_update("stubborn", "TASK_RUNNING")
    s.call("KILL", kill={"task_id": {"value": "stubborn"},
                         "kill_policy": {"grace_period": {"nanoseconds": 200_000_000}}})
    killed = s.wait_update("stubborn", "TASK_KILLED", timeout=5)
    assert killed["message"] == "Command terminated with signal Killed"


def test_missing_executable_fails_the_task(cluster, scheduler):
    s = scheduler(cluster.master_url)
    s.launch("no-binary", {"value": "/no/such/binary", "shell": False, "arguments": ["x"]})
    failed = s.wait_update("no-binary", "TASK_FAILED")
    assert "No such file" in failed["message"]
    assert [st["state"] for st in s.updates("no-binary")] == ["TASK_STARTING", "TASK_FAILED"]
