"""Checking a call to an agent's /api/v1/executor as a Mesos 1.11 agent checks it, with its answers
(src/slave/http.cpp and common/validation.cpp of 1.11: the order of the checks and the messages)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

JSON = "application/json"


class ExecutorCallError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _media(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def _accepts_json(accept: list[str]) -> bool:
    if not accept:
        return True
    kinds = [_media(k) for h in accept for k in h.split(",")]
    return any(k in (JSON, "application/*", "*/*") for k in kinds)


def check_executor_call(method: str, content_type: list[str], accept: list[str], body: bytes) -> dict[str, Any]:
    """The call, or ExecutorCallError with the status and message a real agent answers."""
    if method != "POST":
        raise ExecutorCallError(405, f"405 Method Not Allowed. Expecting one of {{ 'POST' }}, but received '{method}'.")
    if not content_type:
        raise ExecutorCallError(400, "Expecting 'Content-Type' to be present")
    if _media(content_type[0]) != JSON:
        raise ExecutorCallError(415, "Expecting 'Content-Type' of application/json or application/x-protobuf")
    try:
        call = json.loads(body)
    except json.JSONDecodeError as exc:  # worded as Mesos' parser (picojson) words it
        near = exc.doc[exc.pos:exc.pos + 20] if isinstance(exc.doc, str) else ""
        raise ExecutorCallError(400, f"Failed to parse body into JSON: syntax error at line {exc.lineno} near: "
                                     f"{near}") from None
    except ValueError as exc:
        raise ExecutorCallError(400, f"Failed to parse body into JSON: {exc}") from None
    if not isinstance(call, dict):
        raise ExecutorCallError(400, "Failed to convert JSON into Call protobuf: Expecting a JSON object")
    error = _validate(call)
    if error:
        raise ExecutorCallError(400, f"Failed to validate Executor::Call: {error}")
    if call["type"] == "SUBSCRIBE" and not _accepts_json(accept):
        raise ExecutorCallError(406, "Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'")
    return call


def _has_id(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("value"), str)


def _validate(call: dict[str, Any]) -> str | None:
    kind = call.get("type")
    if not _has_id(call.get("executor_id")) or not _has_id(call.get("framework_id")):
        missing = [f"{k}.value" for k in ("executor_id", "framework_id") if not _has_id(call.get(k))]
        return f"Not initialized: {', '.join(missing)}"
    if kind is None:
        return "Expecting 'type' to be present"
    if kind == "SUBSCRIBE":
        return None if isinstance(call.get("subscribe"), dict) else "Expecting 'subscribe' to be present"
    if kind == "UPDATE":
        return _validate_update(call)
    if kind == "MESSAGE":
        return None if isinstance(call.get("message"), dict) else "Expecting 'message' to be present"
    if kind in ("HEARTBEAT", "UNKNOWN"):
        return None
    return f"Unknown call type {kind!r}"


def _validate_update(call: dict[str, Any]) -> str | None:
    update = call.get("update")
    if not isinstance(update, dict) or not isinstance(update.get("status"), dict):
        return "Expecting 'update' to be present"
    status = update["status"]
    if not _has_id(status.get("task_id")) or not isinstance(status.get("state"), str):
        return "Not initialized: update.status.task_id, update.status.state"
    if not status.get("uuid"):
        return "Expecting 'uuid' to be present"
    try:
        raw = base64.b64decode(status["uuid"], validate=True)
    except (binascii.Error, ValueError):
        return "Not a valid UUID"
    if len(raw) != 16 or not 1 <= raw[6] >> 4 <= 5:  # as Mesos' UUID::fromBytes: 16 bytes of a known version
        return "Not a valid UUID"
    ex = status.get("executor_id")
    if _has_id(ex) and ex["value"] != call["executor_id"]["value"]:
        return (f"ExecutorID in Call: {call['executor_id']['value']} does not match ExecutorID in TaskStatus: "
                f"{ex['value']}")
    if status.get("source") != "SOURCE_EXECUTOR":
        return (f"Received Call from executor {call['executor_id']['value']} of framework "
                f"{call['framework_id']['value']} with invalid source, expecting 'SOURCE_EXECUTOR'")
    if status["state"] == "TASK_STAGING":
        return (f"Received TASK_STAGING from executor {call['executor_id']['value']} of framework "
                f"{call['framework_id']['value']} which is not allowed")
    return None
