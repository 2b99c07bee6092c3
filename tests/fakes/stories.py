"""A hand-made run for the picture, the HTML report and `plastic report`: two agents and the events of a
job preempted at a spot notice and run again."""

from __future__ import annotations

from plastic.core.account.report import AgentSpan, RunEvent

CORE = AgentSpan("core-1", "core", False, "c5.large", 0.085, 0.085)
SPOT = AgentSpan("spot-1", "burst", True, "m5.large", 0.0326, 0.096)


def ev(kind: str, at: float, **fields) -> RunEvent:
    return RunEvent(kind, at, fields)


def preempted_story() -> list[RunEvent]:
    """Job 1 starts on a spot agent, is killed at its terminate notice and runs again on the core agent
    (1 vCPU, 15 s); job 2 runs on the core agent (2 vCPUs, 20 s)."""
    return [
        ev("book", 0.5, config={}),
        ev("agent", 1, agent_id="core-1", cluster="core", preemptible=False, instance_type="c5.large", vcpus=2,
           ram_mib=4096),
        ev("agent", 1, agent_id="spot-1", cluster="burst", preemptible=True, instance_type="m5.large", vcpus=2,
           ram_mib=8192),
        ev("issued", 2, job_id="1", tool="sort_tool", step="sort", job_store_id="js-1", vcpus=1, ram_mib=1024),
        ev("issued", 2, job_id="2", tool="split_tool", step="split", job_store_id="js-2", vcpus=2, ram_mib=1024),
        ev("placed", 10, job_id="1", task="1.1", agent_id="spot-1", cluster="burst", preemptible=True,
           instance_type="m5.large"),
        ev("placed", 10, job_id="2", task="2.1", agent_id="core-1", cluster="core", preemptible=False,
           instance_type="c5.large"),
        ev("running", 11, job_id="1", task="1.1", agent_id="spot-1"),
        ev("notice", 20, agent_id="spot-1", notice_kind="terminate", window_s=120.0, jobs=["1"]),
        ev("drain_kill", 20, job_id="1", task="1.1", agent_id="spot-1"),
        ev("task_state", 21, job_id="1", from_state="KILLING", to_state="LOST",
           attempt={"number": 1, "outcome": "preempted", "mesos_task_id": "1.1", "reason": "notice_kill"}),
        ev("requeue", 21, job_id="1", old_task="1.1", new_task="1.2", agent_id="spot-1", cause="notice_kill",
           counted_as="preempted"),
        ev("placed", 25, job_id="1", task="1.2", agent_id="core-1", cluster="core", preemptible=False,
           instance_type="c5.large"),
        ev("ended", 30, job_id="2", outcome="finished", agent_id="core-1", wall_time_s=20.0),
        ev("ended", 40, job_id="1", outcome="finished", agent_id="core-1", wall_time_s=15.0),
        ev("agent_lost", 50, agent_id="spot-1"),
    ]
