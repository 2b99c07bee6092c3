"""Call builders against the request bodies a real Mesos 1.11.1 master accepted (202/200)."""

from __future__ import annotations

import json

import pytest

from plastic.mesos import calls, operator
from plastic.mesos.driver import MesosSchedulerDriver
from plastic.mesos.scheduler import Scheduler

from . import transcripts

FW = "066d9997-c53c-4de7-9401-d3a7385d2fa4-0000"
PREFIX = "066d9997-c53c-4de7-9401-d3a7385d2fa4"
FW_INFO = {
    "user": "root",
    "name": "transcript-fw",
    "failover_timeout": 3600.0,
    "checkpoint": True,
    "capabilities": [{"type": "PARTITION_AWARE"}, {"type": "TASK_KILLING_STATE"}],
}

ECHO_TASK = {
    "name": "echo-1",
    "task_id": {"value": "echo-1"},
    "agent_id": {"value": f"{PREFIX}-S0"},
    "resources": [
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.1}},
        {"name": "mem", "type": "SCALAR", "scalar": {"value": 32}},
    ],
    "command": {"value": "echo hi", "shell": True},
}

SCHEDULER_CASES = [
    ("12_ACCEPT_LAUNCH_echo-1.txt", lambda: calls.accept(f"{PREFIX}-O1", [calls.launch([ECHO_TASK])], 1.0)),
    ("26_DECLINE_refuse_30s.txt", lambda: calls.decline([{"value": f"{PREFIX}-O0"}], {"refuse_seconds": 30.0})),
    ("27_SUPPRESS.txt", lambda: calls.suppress()),
    ("28_REVIVE.txt", lambda: calls.revive()),
    ("21_KILL_sleep-kill-1.txt", lambda: calls.kill("sleep-kill-1", f"{PREFIX}-S0")),
    ("25_KILL_unknown_task.txt", lambda: calls.kill({"value": "never-launched"})),
    ("13_ACKNOWLEDGE_echo-1_TASK_STARTING.txt", lambda: calls.acknowledge(f"{PREFIX}-S0", "echo-1", "T7dkzVdcQ5+W1nk1AvfvEQ==")),
    ("19_RECONCILE_implicit.txt", lambda: calls.reconcile([])),
    ("20_RECONCILE_explicit.txt", lambda: calls.reconcile(["sleep-kill-1", {"value": "echo-1"}, {"task_id": {"value": "no-such-task"}}])),
    ("46_TEARDOWN.txt", lambda: calls.teardown()),
]


@pytest.mark.parametrize(("name", "build"), SCHEDULER_CASES, ids=[c[0].split("_", 1)[1][:-4] for c in SCHEDULER_CASES])
def test_scheduler_call_matches_transcript(name, build):
    exchange = transcripts.exchange(name)
    assert exchange.response_status == 202
    call = calls.with_framework_id(build(), FW)
    assert call == exchange.request_json
    # Byte for byte, too (framework_id first, compact separators).
    assert calls.encode(call) == exchange.request_body


def test_reconcile_with_agent_ids_matches_transcript():
    exchange = transcripts.exchange("103_RECONCILE_explicit_with_agent_id_pa-defaultping.txt")
    prefix = "525592d2-fa71-4304-97bc-0e537e29d04f"
    statuses = [
        {"task_id": {"value": "echo-pa-defaultping"}, "agent_id": {"value": f"{prefix}-S1"}, "state": "TASK_FINISHED"},
        {"task_id": {"value": "echo-pa-defaultping"}},
        {"task_id": {"value": "never-existed"}, "agent_id": {"value": f"{prefix}-S1"}},
        {"task_id": {"value": "never-existed-2"}, "agent_id": {"value": "no-such-agent-S99"}},
    ]
    call = calls.with_framework_id(calls.reconcile(statuses), f"{prefix}-0000")
    assert calls.encode(call) == exchange.request_body


@pytest.mark.parametrize("name", [
    "13_ACKNOWLEDGE_echo-1_TASK_STARTING.txt",
    "14_ACKNOWLEDGE_echo-1_TASK_RUNNING.txt",
    "15_ACKNOWLEDGE_echo-1_TASK_FINISHED.txt",
    "17_ACKNOWLEDGE_sleep-kill-1_TASK_STARTING.txt",
    "22_ACKNOWLEDGE_sleep-kill-1_TASK_KILLING.txt",
    "23_ACKNOWLEDGE_sleep-kill-1_TASK_KILLED.txt",
])
def test_acknowledge_built_from_the_received_update(name):
    """ACKNOWLEDGE carries agent_id, task_id and the uuid exactly as received (base64)."""
    exchange = transcripts.exchange(name)
    uuid = exchange.request_json["acknowledge"]["uuid"]
    updates = [e["update"]["status"] for e in transcripts.events("08_SUBSCRIBE_stream.events.jsonl") if e["type"] == "UPDATE"]
    (status,) = [s for s in updates if s.get("uuid") == uuid]
    call = calls.with_framework_id(calls.acknowledge_status(status), FW)
    assert calls.encode(call) == exchange.request_body


def test_reconciliation_answers_need_no_acknowledgement():
    updates = [e["update"]["status"] for e in transcripts.events("08_SUBSCRIBE_stream.events.jsonl") if e["type"] == "UPDATE"]
    no_uuid = [s for s in updates if "uuid" not in s]
    assert no_uuid, "the recorded run has reconciliation answers"
    assert all(calls.acknowledge_status(s) is None for s in no_uuid)


def test_subscribe_matches_transcripts():
    recorded = transcripts.stream("08_SUBSCRIBE_stream.txt").request.partition(b"\r\n\r\n")[2]
    assert calls.encode(calls.subscribe(FW_INFO)) == recorded
    # A failover SUBSCRIBE carries the id in framework_info and at the top (transcript 55).
    failover = transcripts.stream("55_SUBSCRIBE_B_failover_while_A_open.txt").request.partition(b"\r\n\r\n")[2]
    info = dict(FW_INFO, name="transcript-fw-2", id={"value": f"{PREFIX}-0001"})
    assert calls.encode(calls.subscribe(info)) == failover


def test_driver_framework_info_is_left_as_given():
    """No failover timeout injected; required capabilities already there are not duplicated."""
    driver = MesosSchedulerDriver(Scheduler(), FW_INFO, "127.0.0.1:5050")
    assert driver.framework_info == FW_INFO
    bare = MesosSchedulerDriver(Scheduler(), {"name": "x", "user": "u"}, "127.0.0.1:5050", capabilities=["MULTI_ROLE"])
    info = bare.framework_info
    assert "failover_timeout" not in info
    assert bare.failover_timeout_s == 0.0
    assert [c["type"] for c in info["capabilities"]] == ["PARTITION_AWARE", "TASK_KILLING_STATE", "MULTI_ROLE"]
    given = MesosSchedulerDriver(Scheduler(), {"name": "x"}, "127.0.0.1:5050", failover_timeout_s=120, principal="p")
    assert given.framework_info["failover_timeout"] == 120.0
    assert given.framework_info["principal"] == "p"
    assert given.framework_info["user"]  # defaults to the current user
    with pytest.raises(ValueError):
        MesosSchedulerDriver(Scheduler(), {"user": "root"}, "127.0.0.1:5050")


def test_other_builders():
    assert calls.revive(["a", "b"]) == {"type": "REVIVE", "revive": {"roles": ["a", "b"]}}
    assert calls.suppress("a") == {"type": "SUPPRESS", "suppress": {"roles": ["a"]}}
    assert calls.message("S1", "E1", b"hi") == {
        "type": "MESSAGE",
        "message": {"agent_id": {"value": "S1"}, "executor_id": {"value": "E1"}, "data": "aGk="},
    }
    assert calls.request([{"agent_id": {"value": "S1"}}]) == {
        "type": "REQUEST",
        "request": {"requests": [{"agent_id": {"value": "S1"}}]},
    }
    assert calls.shutdown("E1", "S1") == {
        "type": "SHUTDOWN",
        "shutdown": {"executor_id": {"value": "E1"}, "agent_id": {"value": "S1"}},
    }
    assert calls.decline("O1") == {"type": "DECLINE", "decline": {"offer_ids": [{"value": "O1"}]}}
    assert calls.accept_inverse_offers(["I1"], 5)["accept_inverse_offers"] == {
        "inverse_offer_ids": [{"value": "I1"}],
        "filters": {"refuse_seconds": 5.0},
    }
    assert calls.task_ids_of_launches([calls.launch([ECHO_TASK]), {"type": "RESERVE"}]) == [
        ({"value": "echo-1"}, {"value": f"{PREFIX}-S0"})
    ]
    with pytest.raises(TypeError):
        calls.as_id(3)  # type: ignore[arg-type]


OPERATOR_CASES = [
    ("38_OPERATOR_DRAIN_AGENT.txt", lambda: operator.drain_agent(f"{PREFIX}-S0", max_grace_period_s=10)),
    ("42_OPERATOR_REACTIVATE_AGENT.txt", lambda: operator.reactivate_agent({"value": f"{PREFIX}-S0"})),
    ("29_OPERATOR_GET_AGENTS.txt", lambda: operator.simple("GET_AGENTS")),
    ("36_OPERATOR_GET_TASKS.txt", lambda: operator.simple("GET_TASKS")),
    ("37_OPERATOR_GET_FRAMEWORKS.txt", lambda: operator.simple("GET_FRAMEWORKS")),
]


@pytest.mark.parametrize(("name", "build"), OPERATOR_CASES, ids=[c[0][3:-4] for c in OPERATOR_CASES])
def test_operator_call_matches_transcript(name, build):
    exchange = transcripts.exchange(name)
    assert exchange.response_status == 200
    assert exchange.request_line.startswith("POST /api/v1 ")
    assert calls.encode(build()) == exchange.request_body


def test_drain_agent_mark_gone():
    call = operator.drain_agent("S1", max_grace_period_s=1.5, mark_gone=True)
    assert call == {
        "type": "DRAIN_AGENT",
        "drain_agent": {"agent_id": {"value": "S1"}, "max_grace_period": {"nanoseconds": 1_500_000_000}, "mark_gone": True},
    }
    assert json.loads(calls.encode(call)) == call
