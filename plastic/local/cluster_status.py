"""What the running cluster says about itself: an agent's summary (its /state, and an entry of
/plastic/status) and the /plastic/status document (agents, frameworks, task states, interruptions)."""

from __future__ import annotations

import os
from typing import Any

from plastic.local.state import MasterState


def agent_summary(state: MasterState, agent_id: str, pids: list[int]) -> dict[str, Any]:
    """One agent as the master sees it, with `pids` (its tasks' and executors' processes)."""
    a = state.agents[agent_id]
    status = "removed" if a.removed else "dead" if not a.connected else (
        ("draining" if a.drain["state"] == "DRAINING" else "drained") if a.drain else
        "deactivated" if a.deactivated else "active")
    free = (a.total - a.used).ordered_like(a.total)
    return {
        "id": a.id, "cluster": a.spec.cluster, "instance_type": a.spec.instance_type,
        "preemptible": a.spec.preemptible, "node_id": a.spec.node_id, "status": status,
        "port": a.port, "imds_url": a.imds_url, "instance_id": getattr(a, "instance_id", None),
        "attributes": {k: v for k, v in a.spec.all_attributes()},
        "resources": {"total": a.total.summary(), "used": a.used.summary(), "offered": a.offered.summary(),
                      "free": free.summary()},
        "tasks": sum(1 for f, t in a.tasks if not state.frameworks[f].tasks[t].terminal),
        "interruption": {
            "notice_time": a.notice_time, "rebalance_time": a.rebalance_time,
            "died_at": a.died_at, "death_cause": a.death_cause,
        },
        "pids": pids,
    }


def cluster_status(state: MasterState, agents: list[dict[str, Any]], *, master_url: str, cluster_id: str,
                   workdir: str) -> dict[str, Any]:
    """The /plastic/status document, `agents` being every agent's summary in agent-id order."""
    st = state
    frameworks = []
    counts: dict[str, int] = {}
    for fw in list(st.frameworks.values()):
        for t in fw.tasks.values():
            counts[t.state] = counts.get(t.state, 0) + 1
        frameworks.append({"id": fw.id, "name": fw.info.get("name"), "connected": fw.connected,
                           "suppressed": fw.suppressed, "active_tasks": len(fw.tasks),
                           "unreachable_tasks": len(fw.unreachable), "offers": len(fw.offers),
                           "capabilities": sorted(c for c in fw.capabilities if c)})
    return {
        "master_url": master_url, "master_id": st.master_id, "pid": os.getpid(),
        "cluster_id": cluster_id, "workdir": workdir,
        "heartbeat_seconds": st.heartbeat_s, "agent_ping_timeout_seconds": st.agent_ping_timeout_s,
        "interrupt_rate_per_min": st.interrupt_rate_per_min,
        "agents": agents,
        "frameworks": frameworks,
        "completed_frameworks": [{"id": f.id, "name": f.info.get("name")} for f in st.completed_frameworks.values()],
        "task_states": counts, "tasks_launched": st.launched,
        "interruptions": [{"agent_id": a.id, "notice_time": a.notice_time, "rebalance_time": a.rebalance_time}
                          for a in st.agents.values() if a.notice_time or a.rebalance_time],
    }
