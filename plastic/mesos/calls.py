"""Builders of Mesos v1 scheduler calls as JSON-ready dicts.

Field names follow Mesos 1.11's ``scheduler.proto`` (where the HTTP API docs'
examples differ, the proto wins).  Every builder returns the call without
``framework_id``; the driver adds it at send time with :func:`with_framework_id`
because a call queued before SUBSCRIBED, or replayed after a failover, only
learns its framework id then.

Ids may be given as plain strings or as ``{"value": ...}`` dicts (what the
master sends), singly or in lists, so offers and statuses received from the
master can be passed back as they are.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any

IdLike = str | Mapping[str, Any]
FiltersLike = Mapping[str, Any] | float | int | None

#: Call types whose meaning dies with the offers of one subscription.
OFFER_CALLS = frozenset({"ACCEPT", "DECLINE", "ACCEPT_INVERSE_OFFERS", "DECLINE_INVERSE_OFFERS"})


def as_id(value: IdLike) -> dict[str, str]:
    """``"x"`` or ``{"value": "x"}`` -> ``{"value": "x"}``."""
    if isinstance(value, str):
        return {"value": value}
    if isinstance(value, Mapping) and "value" in value:
        return {"value": str(value["value"])}
    raise TypeError(f"expected an id string or a {{'value': ...}} dict, got {value!r}")


def id_value(value: IdLike) -> str:
    """The bare string of an id given either way."""
    return as_id(value)["value"]


def as_id_list(values: IdLike | Iterable[IdLike]) -> list[dict[str, str]]:
    """One id or an iterable of ids -> a list of ``{"value": ...}`` dicts."""
    if isinstance(values, (str, Mapping)):
        return [as_id(values)]
    return [as_id(v) for v in values]


def as_filters(filters: FiltersLike) -> dict[str, Any] | None:
    """None (master default: refuse for 5 s), a number of seconds, or a Filters dict."""
    if filters is None:
        return None
    if isinstance(filters, bool):
        raise TypeError("filters must be a number of seconds or a dict")
    if isinstance(filters, (int, float)):
        return {"refuse_seconds": float(filters)}
    return dict(filters)


def _add_filters(body: dict[str, Any], filters: FiltersLike) -> None:
    """Set `filters` on a call body when there are any."""
    f = as_filters(filters)
    if f is not None:
        body["filters"] = f


def as_roles(roles: str | Iterable[str] | None) -> list[str] | None:
    if roles is None:
        return None
    if isinstance(roles, str):
        return [roles]
    return list(roles)


def encode_bytes(data: bytes | str) -> str:
    """Proto ``bytes`` fields travel base64-encoded in JSON."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return base64.b64encode(data).decode("ascii")


def with_framework_id(call: Mapping[str, Any], framework_id: IdLike | None) -> dict[str, Any]:
    """The call with its top-level ``framework_id`` set (unchanged copy if None).

    ``framework_id`` goes first, as a real scheduler writes it (the transcripts'
    bytes), although JSON key order means nothing to the master.
    """
    if framework_id is None:
        return dict(call)
    out: dict[str, Any] = {"framework_id": as_id(framework_id)}
    out.update((k, v) for k, v in call.items() if k != "framework_id")
    return out


def encode(call: Mapping[str, Any]) -> bytes:
    """Compact JSON bytes of a call."""
    return json.dumps(call, separators=(",", ":")).encode("utf-8")


# --- scheduler calls -------------------------------------------------------


def subscribe(framework_info: Mapping[str, Any], suppressed_roles: Iterable[str] | None = None) -> dict[str, Any]:
    """SUBSCRIBE; with ``framework_info.id`` set it is a failover and carries ``framework_id`` too."""
    body: dict[str, Any] = {"framework_info": dict(framework_info)}
    if suppressed_roles:
        body["suppressed_roles"] = list(suppressed_roles)
    call: dict[str, Any] = {"type": "SUBSCRIBE", "subscribe": body}
    if framework_info.get("id"):
        call["framework_id"] = as_id(framework_info["id"])
    return call


def teardown() -> dict[str, Any]:
    return {"type": "TEARDOWN"}


def launch(tasks: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A LAUNCH offer operation."""
    return {"type": "LAUNCH", "launch": {"task_infos": [dict(t) for t in tasks]}}


def launch_group(executor: Mapping[str, Any], tasks: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A LAUNCH_GROUP offer operation."""
    return {
        "type": "LAUNCH_GROUP",
        "launch_group": {"executor": dict(executor), "task_group": {"tasks": [dict(t) for t in tasks]}},
    }


def accept(
    offer_ids: IdLike | Iterable[IdLike],
    operations: Iterable[Mapping[str, Any]],
    filters: FiltersLike = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"offer_ids": as_id_list(offer_ids), "operations": [dict(op) for op in operations]}
    _add_filters(body, filters)
    return {"type": "ACCEPT", "accept": body}


def decline(offer_ids: IdLike | Iterable[IdLike], filters: FiltersLike = None) -> dict[str, Any]:
    body: dict[str, Any] = {"offer_ids": as_id_list(offer_ids)}
    _add_filters(body, filters)
    return {"type": "DECLINE", "decline": body}


def accept_inverse_offers(offer_ids: IdLike | Iterable[IdLike], filters: FiltersLike = None) -> dict[str, Any]:
    body: dict[str, Any] = {"inverse_offer_ids": as_id_list(offer_ids)}
    _add_filters(body, filters)
    return {"type": "ACCEPT_INVERSE_OFFERS", "accept_inverse_offers": body}


def decline_inverse_offers(offer_ids: IdLike | Iterable[IdLike], filters: FiltersLike = None) -> dict[str, Any]:
    body: dict[str, Any] = {"inverse_offer_ids": as_id_list(offer_ids)}
    _add_filters(body, filters)
    return {"type": "DECLINE_INVERSE_OFFERS", "decline_inverse_offers": body}


def revive(roles: str | Iterable[str] | None = None) -> dict[str, Any]:
    r = as_roles(roles)
    return {"type": "REVIVE", "revive": {"roles": r} if r else {}}


def suppress(roles: str | Iterable[str] | None = None) -> dict[str, Any]:
    r = as_roles(roles)
    return {"type": "SUPPRESS", "suppress": {"roles": r} if r else {}}


def kill(task_id: IdLike, agent_id: IdLike | None = None, kill_policy: Mapping[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"task_id": as_id(task_id)}
    if agent_id is not None:
        body["agent_id"] = as_id(agent_id)
    if kill_policy is not None:
        body["kill_policy"] = dict(kill_policy)
    return {"type": "KILL", "kill": body}


def shutdown(executor_id: IdLike, agent_id: IdLike) -> dict[str, Any]:
    return {"type": "SHUTDOWN", "shutdown": {"executor_id": as_id(executor_id), "agent_id": as_id(agent_id)}}


def acknowledge(agent_id: IdLike, task_id: IdLike, uuid: str) -> dict[str, Any]:
    """ACKNOWLEDGE; ``uuid`` is the base64 string exactly as received in the UPDATE."""
    return {
        "type": "ACKNOWLEDGE",
        "acknowledge": {"agent_id": as_id(agent_id), "task_id": as_id(task_id), "uuid": uuid},
    }


def acknowledge_status(status: Mapping[str, Any]) -> dict[str, Any] | None:
    """ACKNOWLEDGE for a received TaskStatus, or None when it carries no uuid (nothing to ack)."""
    uuid = status.get("uuid")
    if not uuid or "agent_id" not in status:
        return None
    return acknowledge(status["agent_id"], status["task_id"], uuid)


def reconcile(tasks: Iterable[IdLike | Mapping[str, Any]] = ()) -> dict[str, Any]:
    """RECONCILE; empty = implicit (every task the master holds as active).

    Each entry may be a task id, or a dict with ``task_id`` and optionally
    ``agent_id`` (a full TaskStatus works: other fields are ignored).
    """
    out: list[dict[str, Any]] = []
    for t in tasks:
        if isinstance(t, str) or (isinstance(t, Mapping) and "value" in t and "task_id" not in t):
            out.append({"task_id": as_id(t)})
            continue
        entry: dict[str, Any] = {"task_id": as_id(t["task_id"])}
        if t.get("agent_id"):
            entry["agent_id"] = as_id(t["agent_id"])
        out.append(entry)
    return {"type": "RECONCILE", "reconcile": {"tasks": out}}


def message(agent_id: IdLike, executor_id: IdLike, data: bytes | str) -> dict[str, Any]:
    return {
        "type": "MESSAGE",
        "message": {"agent_id": as_id(agent_id), "executor_id": as_id(executor_id), "data": encode_bytes(data)},
    }


def request(requests: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {"type": "REQUEST", "request": {"requests": [dict(r) for r in requests]}}


def update_framework(framework_info: Mapping[str, Any], suppressed_roles: Iterable[str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"framework_info": dict(framework_info)}
    if suppressed_roles is not None:
        body["suppressed_roles"] = list(suppressed_roles)
    return {"type": "UPDATE_FRAMEWORK", "update_framework": body}


def task_ids_of_launches(operations: Iterable[Mapping[str, Any]]) -> list[tuple[dict[str, str], dict[str, str] | None]]:
    """(task_id, agent_id) of every task an ACCEPT's LAUNCH / LAUNCH_GROUP operations start."""
    found: list[tuple[dict[str, str], dict[str, str] | None]] = []
    for op in operations:
        if op.get("type") == "LAUNCH":
            tasks = op.get("launch", {}).get("task_infos", [])
        elif op.get("type") == "LAUNCH_GROUP":
            tasks = op.get("launch_group", {}).get("task_group", {}).get("tasks", [])
        else:
            continue
        for t in tasks:
            agent = t.get("agent_id")
            found.append((as_id(t["task_id"]), as_id(agent) if agent else None))
    return found
