"""Scheduler calls: checking a request the way Mesos 1.11.1 does, then applying it to the state.

The order of checks comes from the transcripts: Content-Type (400 when
missing, 415 when not JSON), JSON parsing (400), call validation (400), then,
for SUBSCRIBE only, the Accept header (406) and a stray Mesos-Stream-Id (400).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from typing import Any

from plastic.local import protocol as P
from plastic.local.executors import check_executor, executor_id_of
from plastic.local.resources import ResourceBag, ResourceFormatError
from plastic.local.state import DEFAULT_REFUSE_SECONDS, MasterState, RegisteredFramework

CALL_TYPES = {
    "SUBSCRIBE", "TEARDOWN", "ACCEPT", "DECLINE", "ACCEPT_INVERSE_OFFERS", "DECLINE_INVERSE_OFFERS", "REVIVE",
    "KILL", "SHUTDOWN", "ACKNOWLEDGE", "ACKNOWLEDGE_OPERATION_STATUS", "RECONCILE", "RECONCILE_OPERATIONS",
    "MESSAGE", "REQUEST", "SUPPRESS", "UPDATE_FRAMEWORK",
}
# The sub-message each call type must carry.
_PAYLOAD = {
    "SUBSCRIBE": "subscribe", "ACCEPT": "accept", "DECLINE": "decline", "KILL": "kill", "SHUTDOWN": "shutdown",
    "ACKNOWLEDGE": "acknowledge", "RECONCILE": "reconcile", "MESSAGE": "message", "REQUEST": "request",
    "ACCEPT_INVERSE_OFFERS": "accept_inverse_offers", "DECLINE_INVERSE_OFFERS": "decline_inverse_offers",
    "UPDATE_FRAMEWORK": "update_framework", "ACKNOWLEDGE_OPERATION_STATUS": "acknowledge_operation_status",
}
JSON_TYPES = ("application/json",)


def _media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def check_content_type(content_type: str | None) -> None:
    if content_type is None:
        raise P.CallError(400, "Expecting 'Content-Type' to be present")
    if _media_type(content_type) not in JSON_TYPES:
        if _media_type(content_type) == "application/x-protobuf":
            raise P.CallError(415, "Expecting 'Content-Type' of application/json "
                                   "(the plastic local cluster does not speak application/x-protobuf)")
        raise P.CallError(415, "Expecting 'Content-Type' of application/json or application/x-protobuf")


def accepts_json(accept_headers: list[str]) -> bool:
    """A real master reads the last Accept header; absent means anything goes."""
    if not accept_headers:
        return True
    for item in accept_headers[-1].split(","):
        parts = [p.strip() for p in item.split(";")]
        media = parts[0].lower()
        q = 1.0
        for p in parts[1:]:
            if p.startswith("q="):
                try:
                    q = float(p[2:])
                except ValueError:
                    q = 0.0
        if q > 0 and media in ("application/json", "application/*", "*/*"):
            return True
    return False


def parse_json(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise P.CallError(400, "Failed to parse body into JSON: invalid UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        line_end = text.find("\n", exc.pos)
        near = text[exc.pos: line_end if line_end >= 0 else len(text)]
        raise P.CallError(400, f"Failed to parse body into JSON: syntax error at line {exc.lineno} near: {near}") \
            from None


def _convert_error(message: str) -> P.CallError:
    return P.CallError(400, f"Failed to convert JSON into Call protobuf: {message}")


def _invalid(message: str) -> P.CallError:
    return P.CallError(400, f"Failed to validate scheduler::Call: {message}")


def _id_field(obj: Any, path: str, missing: list[str]) -> None:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("value"), str):
        missing.append(path)


def _required(call: Mapping[str, Any], ctype: str) -> list[str]:
    """Proto2 required fields (what protobuf's IsInitialized checks), by dotted path."""
    missing: list[str] = []
    payload = call.get(_PAYLOAD.get(ctype, ""), None)
    if not isinstance(payload, Mapping):
        return missing
    if ctype == "SUBSCRIBE":
        fi = payload.get("framework_info")
        if not isinstance(fi, Mapping):
            return ["subscribe.framework_info"]
        for k in ("user", "name"):
            if not isinstance(fi.get(k), str):
                missing.append(f"subscribe.framework_info.{k}")
    elif ctype == "ACCEPT":
        for i, op in enumerate(payload.get("operations") or []):
            if not isinstance(op, Mapping):
                continue
            infos: list[tuple[str, Any]] = []
            if isinstance(op.get("launch"), Mapping):
                infos = [(f"accept.operations[{i}].launch.task_infos[{j}]", t)
                         for j, t in enumerate(op["launch"].get("task_infos") or [])]
            elif isinstance(op.get("launch_group"), Mapping):
                group = op["launch_group"].get("task_group") or {}
                infos = [(f"accept.operations[{i}].launch_group.task_group.tasks[{j}]", t)
                         for j, t in enumerate(group.get("tasks") or [])]
            for where, t in infos:
                if not isinstance(t, Mapping):
                    missing.append(where)
                    continue
                if not isinstance(t.get("name"), str):
                    missing.append(f"{where}.name")
                _id_field(t.get("task_id"), f"{where}.task_id", missing)
                _id_field(t.get("agent_id"), f"{where}.agent_id", missing)
    elif ctype == "KILL":
        _id_field(payload.get("task_id"), "kill.task_id", missing)
    elif ctype == "ACKNOWLEDGE":
        _id_field(payload.get("agent_id"), "acknowledge.agent_id", missing)
        _id_field(payload.get("task_id"), "acknowledge.task_id", missing)
        if not isinstance(payload.get("uuid"), str):
            missing.append("acknowledge.uuid")
    elif ctype == "RECONCILE":
        for i, t in enumerate(payload.get("tasks") or []):
            _id_field(t.get("task_id") if isinstance(t, Mapping) else None, f"reconcile.tasks[{i}].task_id", missing)
    elif ctype == "SHUTDOWN":
        _id_field(payload.get("executor_id"), "shutdown.executor_id", missing)
        _id_field(payload.get("agent_id"), "shutdown.agent_id", missing)
    elif ctype == "UPDATE_FRAMEWORK":
        fi = payload.get("framework_info")
        if not isinstance(fi, Mapping):
            missing.append("update_framework.framework_info")
    return missing


def validate_call(call: Any) -> dict[str, Any]:
    """JSON -> a checked call (400 with Mesos' wording when it is not one)."""
    if not isinstance(call, dict):
        raise _convert_error("Expecting a JSON object")
    ctype = call.get("type")
    if ctype is not None and (not isinstance(ctype, str) or ctype not in CALL_TYPES):
        raise _convert_error(f"Failed to find enum for '{ctype}'")
    if "framework_id" in call:
        missing: list[str] = []
        _id_field(call["framework_id"], "framework_id", missing)
        if missing:
            raise _convert_error("Missing required fields: framework_id.value")
    missing = _required(call, ctype) if ctype else []
    if missing:
        raise _convert_error("Missing required fields: " + ", ".join(missing))
    if ctype is None:
        raise _invalid("Expecting 'type' to be present")
    payload_key = _PAYLOAD.get(ctype)
    if ctype == "SUBSCRIBE":
        if not isinstance(call.get("subscribe"), Mapping):
            raise _invalid("Expecting 'subscribe' to be present")
        fi_id = call["subscribe"]["framework_info"].get("id")
        if "framework_id" in call and fi_id != call["framework_id"]:
            raise _invalid("'framework_id' differs from 'subscribe.framework_info.id'")
        return call
    if "framework_id" not in call:
        raise _invalid("Expecting 'framework_id' to be present")
    if payload_key and ctype not in ("ACKNOWLEDGE_OPERATION_STATUS",) and not isinstance(call.get(payload_key),
                                                                                          Mapping):
        raise _invalid(f"Expecting '{payload_key}' to be present")
    if ctype == "ACKNOWLEDGE":
        try:
            raw = base64.b64decode(call["acknowledge"]["uuid"], validate=True)
        except (binascii.Error, ValueError):
            raise _convert_error("Failed to decode base64 'acknowledge.uuid'") from None
        if len(raw) != 16:
            raise _invalid("Not a valid UUID")
    return call


# ================================================================ applying calls
def apply_call(state: MasterState, fw: RegisteredFramework, call: dict[str, Any], now: float) -> list:
    ctype = call["type"]
    if ctype == "ACCEPT":
        return accept(state, fw, call["accept"], now)
    if ctype == "DECLINE":
        return decline(state, fw, call["decline"], now)
    if ctype == "REVIVE":
        fw.filters.clear()
        fw.suppressed = False
        state.needs_allocation = True
        return []
    if ctype == "SUPPRESS":
        fw.suppressed = True
        return []
    if ctype == "KILL":
        k = call["kill"]
        return state.kill(fw, k["task_id"]["value"], (k.get("agent_id") or {}).get("value"), now,
                          k.get("kill_policy"))
    if ctype == "ACKNOWLEDGE":
        a = call["acknowledge"]
        return state.acknowledge(fw, a["agent_id"]["value"], a["task_id"]["value"], a["uuid"], now)
    if ctype == "RECONCILE":
        wanted = [(t["task_id"]["value"], (t.get("agent_id") or {}).get("value"))
                  for t in call["reconcile"].get("tasks") or []]
        return state.reconcile(fw, wanted, now)
    if ctype == "TEARDOWN":
        return state.teardown(fw, now)
    if ctype == "UPDATE_FRAMEWORK":
        info = call["update_framework"]["framework_info"]
        if (info.get("id") or {}).get("value") != fw.id:
            raise _invalid("'framework_id' differs from 'update_framework.framework_info.id'")
        return state.update_framework(fw, info)
    if ctype == "SHUTDOWN":
        s = call["shutdown"]
        return state.shutdown_executor(fw, s["agent_id"]["value"], s["executor_id"]["value"])
    # MESSAGE, REQUEST, inverse offers, operation feedback: nothing to do without operations.
    return []


def _offer_ids(items: Any) -> list[str]:
    if not isinstance(items, list):
        return []
    return [o["value"] for o in items if isinstance(o, Mapping) and isinstance(o.get("value"), str)]


def _refuse_seconds(filters: Any) -> float:
    if isinstance(filters, Mapping) and "refuse_seconds" in filters:
        try:
            return float(filters["refuse_seconds"])
        except (TypeError, ValueError):
            return DEFAULT_REFUSE_SECONDS
    return DEFAULT_REFUSE_SECONDS


def decline(state: MasterState, fw: RegisteredFramework, body: Mapping[str, Any], now: float) -> list:
    seconds = _refuse_seconds(body.get("filters"))
    for oid in _offer_ids(body.get("offer_ids")):
        offer = state.offers.get(oid)
        if offer is None or offer.framework_id != fw.id:
            continue
        state.remove_offer(offer)
        state.add_filter(fw, offer.agent_id, offer.resources, seconds, now)
    return []


def _task_infos(operations: Iterable[Any]) -> list[tuple[str, list[dict[str, Any]], ResourceBag]]:
    """(operation type, task infos, extra executor resources) per LAUNCH / LAUNCH_GROUP operation."""
    out = []
    for op in operations:
        if not isinstance(op, Mapping):
            continue
        if op.get("type") == "LAUNCH":
            out.append(("LAUNCH", list((op.get("launch") or {}).get("task_infos") or []), ResourceBag()))
        elif op.get("type") == "LAUNCH_GROUP":
            lg = op.get("launch_group") or {}
            try:
                extra = ResourceBag.from_json((lg.get("executor") or {}).get("resources") or [])
            except ResourceFormatError:
                extra = ResourceBag()
            out.append(("LAUNCH_GROUP", list((lg.get("task_group") or {}).get("tasks") or []), extra))
    return out


def accept(state: MasterState, fw: RegisteredFramework, body: Mapping[str, Any], now: float) -> list:
    effects: list = []
    offer_ids = _offer_ids(body.get("offer_ids"))
    ops = _task_infos(body.get("operations") or [])
    error = None if offer_ids else "No offers specified"
    offers = []
    for oid in offer_ids:
        offer = state.offers.get(oid)
        if offer is None:
            error = error or f"Offer {oid} is no longer valid"
            continue
        if offer.framework_id != fw.id:
            error = error or f"Offer {oid} is not owned by this framework"
            continue
        offers.append(offer)
    if not error and len({o.agent_id for o in offers}) > 1:
        error = "Aggregated offers must belong to one single agent"
    for offer in offers:
        state.remove_offer(offer)
    if error:
        state_name = "TASK_DROPPED" if fw.partition_aware else "TASK_LOST"
        for _, infos, _ in ops:
            for info in infos:
                state.master_update(fw, info["task_id"]["value"], state_name, "REASON_INVALID_OFFERS",
                                    f"Task launched with invalid offers: {error}",
                                    info["agent_id"]["value"], now, effects)
        return effects
    agent = state.agents[offers[0].agent_id]
    available = ResourceBag()
    for offer in offers:
        available = available + offer.resources
    available = available.ordered_like(agent.total)
    for kind, infos, extra in ops:
        checked = []
        first_error = None
        budget = available
        for i, info in enumerate(infos):
            res, err = _check_task(state, fw, agent.id, info, budget, extra if i == 0 else ResourceBag(),
                                   [c[0] for c in checked])
            if err:
                first_error = first_error or err
                checked.append((info, res, err))
                continue
            budget = budget - res
            checked.append((info, res, None))
        for info, res, err in checked:
            tid = info["task_id"]["value"]
            if err or (kind == "LAUNCH_GROUP" and first_error):
                state.master_update(fw, tid, "TASK_ERROR", "REASON_TASK_INVALID", err or first_error,
                                    info["agent_id"]["value"], now, effects)
                continue
            state.launch(fw, agent, info, res, state.new_uuid(), effects)
            available = available - res
    state.add_filter(fw, agent.id, available, _refuse_seconds(body.get("filters")), now)
    state.needs_allocation = True
    return effects


def _check_task(state: MasterState, fw: RegisteredFramework, agent_id: str, info: dict[str, Any], available: ResourceBag,
                extra: ResourceBag, earlier: list[dict[str, Any]]) -> tuple[ResourceBag, str | None]:
    tid = info["task_id"]["value"]
    if not tid or "/" in tid or any(c.isspace() for c in tid):
        return ResourceBag(), f"Task ID '{tid}' is invalid: it must be non-empty, without '/' or whitespace"
    if info["agent_id"]["value"] != agent_id:
        return ResourceBag(), f"Task uses invalid agent: {info['agent_id']['value']}"
    if tid in fw.tasks or any(e["task_id"]["value"] == tid for e in earlier):
        return ResourceBag(), f"Task has duplicate ID: {tid}"
    has_command = isinstance(info.get("command"), Mapping)
    has_executor = isinstance(info.get("executor"), Mapping)
    if has_command == has_executor:
        return ResourceBag(), "Task should have at least one (but not both) of CommandInfo or ExecutorInfo present"
    if has_executor:
        agent = state.agents[agent_id]
        new_here = {executor_id_of(e): e["executor"] for e in earlier if executor_id_of(e)}
        executor_res, err = check_executor(info, state.executor_for(agent, fw.id, info), new_here)
        if err:
            return ResourceBag(), err
        res, err = _fit(info, available, executor_res)
        return res + executor_res, err  # what this launch takes from the offer (the executor's part is its own)
    cmd = info["command"]
    if cmd.get("shell", True) is not False and not isinstance(cmd.get("value"), str):
        return ResourceBag(), "Shell command of task is missing 'value'"
    if cmd.get("shell", True) is False and not isinstance(cmd.get("value"), str):
        return ResourceBag(), "Non-shell command of task is missing 'value'"
    return _fit(info, available, extra)


def _fit(info: dict[str, Any], available: ResourceBag, extra: ResourceBag) -> tuple[ResourceBag, str | None]:
    """(the task's resources, error): the task and its executor's (`extra`) must fit what is offered.
    The task's own resources are what it holds; a new executor's are held by the executor's record."""
    try:
        res = ResourceBag.from_json(info.get("resources") or [])
    except ResourceFormatError as exc:
        return ResourceBag(), f"Task uses invalid resources: {exc}"
    if not available.contains(res + extra):
        return res, (f"Total resources {(res + extra).describe()} required by task and its executor is more than "
                     f"available {available.describe()}")
    return (res + extra if not isinstance(info.get("executor"), Mapping) else res), None
