"""Operator API answers (GET_AGENTS, GET_TASKS, GET_FRAMEWORKS) in the shape of Mesos 1.11.1."""

from __future__ import annotations

from typing import Any

from plastic.local import protocol as P
from plastic.local.state import Agent, MasterState, RegisteredFramework, Task

AGENT_CAPABILITIES = ["MULTI_ROLE", "HIERARCHICAL_ROLE", "RESERVATION_REFINEMENT", "RESOURCE_PROVIDER",
                      "RESIZE_VOLUME", "AGENT_OPERATION_FEEDBACK", "AGENT_DRAINING", "TASK_RESOURCE_LIMITS"]
# FrameworkInfo fields in the order of mesos.proto, which is the order a real master prints them in.
FRAMEWORK_INFO_ORDER = ["user", "name", "id", "failover_timeout", "checkpoint", "role", "roles", "hostname",
                        "principal", "webui_url", "capabilities", "labels", "offer_filters"]


def agent_json(state: MasterState, a: Agent) -> dict[str, Any]:
    d: dict[str, Any] = {
        "agent_info": {
            "hostname": state.host, "port": a.port,
            "resources": a.total.to_json(role=False, ranges_first=False),
            "attributes": P.attributes_json(a.spec.all_attributes()),
            "id": P.value(a.id), "checkpoint": True,
        },
        "active": a.connected and not a.deactivated, "deactivated": a.deactivated,
        "version": P.MESOS_VERSION, "pid": f"slave(1)@{state.host}:{a.port}",
        "registered_time": P.ns(a.registered_time),
        "total_resources": a.total.to_json(ranges_first=False),
    }
    if a.used:
        d["allocated_resources"] = a.used.ordered_like(a.total).to_json(allocation_info=True, ranges_first=False)
    if a.offered:
        d["offered_resources"] = a.offered.ordered_like(a.total).to_json(allocation_info=True)
    d["capabilities"] = [{"type": c} for c in AGENT_CAPABILITIES]
    if a.drain:
        grace = a.drain.get("grace_s")
        config: dict[str, Any] = {}
        if grace is not None:
            config["max_grace_period"] = {"nanoseconds": int(grace * 1e9)}
        config["mark_gone"] = bool(a.drain.get("mark_gone"))
        d["drain_info"] = {"state": a.drain["state"], "config": config}
        d["estimated_drain_start_time"] = P.ns(int(a.drain["since"]))
    return d


def get_agents(state: MasterState) -> dict[str, Any]:
    agents = [agent_json(state, a) for a in state.agents.values() if not a.removed]
    return {"type": "GET_AGENTS", "get_agents": {"agents": agents, "recovered_agents": []}}


def task_json(t: Task) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": t.name, "task_id": P.value(t.id), "framework_id": P.value(t.framework_id),
        "agent_id": P.value(t.agent_id), "state": t.state,
        "resources": t.resources.to_json(role=False, allocation_info=True, ranges_first=False),
        "statuses": list(t.statuses),
    }
    last = next((s for s in reversed(t.statuses) if "uuid" in s), None)
    if last is not None:
        d["status_update_state"] = last["state"]
        d["status_update_uuid"] = last["uuid"]
    return d


def get_tasks(state: MasterState) -> dict[str, Any]:
    frameworks = list(state.frameworks.values())
    tasks = [task_json(t) for fw in frameworks for t in fw.tasks.values()]
    unreachable = [task_json(t) for fw in frameworks for t in fw.unreachable.values()]
    completed = [task_json(t) for fw in frameworks + list(state.completed_frameworks.values())
                 for t in fw.completed.values()]
    return {"type": "GET_TASKS", "get_tasks": {"tasks": tasks, "unreachable_tasks": unreachable,
                                               "completed_tasks": completed}}


def framework_json(state: MasterState, fw: RegisteredFramework, *, completed: bool = False) -> dict[str, Any]:
    info = {k: fw.info[k] for k in FRAMEWORK_INFO_ORDER if k in fw.info}
    info.update({k: v for k, v in fw.info.items() if k not in info})
    d: dict[str, Any] = {
        "framework_info": info, "active": fw.connected and not completed, "connected": fw.connected and not completed,
        "recovered": False, "registered_time": P.ns(fw.registered_time),
        "reregistered_time": P.ns(fw.reregistered_time),
    }
    if fw.unregistered_time is not None:
        d["unregistered_time"] = P.ns(fw.unregistered_time)
    if not completed:
        offers = [state.offer_json(state.offers[o], allocation_info=True) for o in sorted(fw.offers)]
        if offers:
            d["offers"] = offers
        used = None
        for t in fw.tasks.values():
            if not t.terminal:
                used = t.resources if used is None else used + t.resources
        if used:
            d["allocated_resources"] = used.to_json(allocation_info=True, ranges_first=False)
        offered = None
        for o in fw.offers:
            r = state.offers[o].resources
            offered = r if offered is None else offered + r
        if offered:
            d["offered_resources"] = offered.to_json(allocation_info=True)
    d["offer_constraints"] = {}
    return d


def get_frameworks(state: MasterState) -> dict[str, Any]:
    return {"type": "GET_FRAMEWORKS", "get_frameworks": {
        "frameworks": [framework_json(state, fw) for fw in state.frameworks.values()],
        "completed_frameworks": [framework_json(state, fw, completed=True)
                                 for fw in state.completed_frameworks.values()],
    }}
