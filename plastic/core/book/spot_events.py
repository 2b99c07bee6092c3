"""EC2 spot events from EventBridge (as delivered through SQS) -> `SpotEvent`, or the reason to ignore one.

Pure: standard library only, no clock reads, never raises on any input.  The caller (the SQS
poller, plastic.aws.sqs_notices) turns a `SpotEvent` into a notice in Redis.

An SQS message body is either the EventBridge event itself (EventBridge -> SQS) or an SNS
envelope ``{"Type": "Notification", "Message": "<the event as a JSON string>", ...}``
(EventBridge -> SNS -> SQS without raw delivery); both are accepted.  The event::

    {"version": "0", "id": "...", "detail-type": "EC2 Spot Instance Interruption Warning",
     "source": "aws.ec2", "account": "123456789012", "time": "2026-01-01T12:00:00Z",
     "region": "us-east-1", "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc..."],
     "detail": {"instance-id": "i-0abc...", "instance-action": "terminate"}}

How each detail type maps (``kind``, ``action``, ``terminate_at_epoch_s``):

| detail-type                            | kind      | action                    | terminate_at            |
|----------------------------------------|-----------|---------------------------|-------------------------|
| EC2 Spot Instance Interruption Warning | terminate | instance-action:          | event time + 120 s      |
|                                        |           | terminate, stop,          | (event time itself for  |
|                                        |           | hibernate                 | hibernate)              |
| EC2 Instance Rebalance Recommendation  | rebalance | None                      | None (no deadline)      |
| EC2 Instance State-change Notification | state     | the state: shutting-down, | event time (the         |
| (only those 4 states; pending and      |           | terminated, stopping,     | instance is going or    |
| running are ignored)                   |           | stopped                   | gone now)               |

The interruption warning carries no explicit deadline: AWS emits it two minutes before it stops
or terminates the instance, so the deadline is the event's ``time`` + 120 s (the same instant the
instance metadata gives in ``spot/instance-action``).  Hibernation starts at once, without the two
minutes, so a hibernate warning's deadline is the event time.  Should a detail ever carry
``instance-termination-time`` (as the interruptible Capacity Reservation warning does), that
explicit time wins.  When the event time is missing or unreadable, ``received_at`` (the SQS
SentTimestamp, passed in by the caller) stands in for it; without either, the deadline is None.

Ignored (with a reason, never an exception): bodies that are not JSON or not an object, events
without a detail-type or of another detail-type, a detail that is not an object, a missing or
malformed instance id, and state changes to pending or running (the instance is not going away).
The ``source`` is not checked, so hand-made test events (EventBridge reserves ``aws.*`` sources
for AWS) are read like real ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

TERMINATE = "terminate"
REBALANCE = "rebalance"
STATE = "state"
KINDS = (TERMINATE, REBALANCE, STATE)

INTERRUPTION_WARNING = "EC2 Spot Instance Interruption Warning"
REBALANCE_RECOMMENDATION = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE = "EC2 Instance State-change Notification"
DETAIL_TYPES = (INTERRUPTION_WARNING, REBALANCE_RECOMMENDATION, STATE_CHANGE)

# AWS warns two minutes before it stops or terminates a spot instance.
INTERRUPTION_NOTICE_S = 120.0
INSTANCE_ACTIONS = ("terminate", "stop", "hibernate")
# Instance states that mean the instance (and its Mesos agent) is going or gone.
GOING_STATES = ("shutting-down", "terminated", "stopping", "stopped")
STAYING_STATES = ("pending", "running")

INSTANCE_ID = re.compile(r"^i-[0-9a-f]{8,32}$")
_INSTANCE_ARN = re.compile(r"^arn:aws[a-z-]*:ec2:[^:]*:[^:]*:instance/(i-[0-9a-f]{8,32})$")
_MAX_TEXT = 200  # longest value quoted in a reason


@dataclass(frozen=True)
class SpotEvent:
    """One EC2 event worth a notice (see the module docstring for how each kind maps)."""

    kind: str  # terminate | rebalance | state
    instance_id: str
    terminate_at_epoch_s: float | None
    action: str | None
    region: str | None
    event_time: float | None  # the event's `time`, epoch seconds
    raw_detail_type: str
    event_id: str | None = None  # EventBridge's event id


@dataclass(frozen=True)
class Ignored:
    """A message that is no notice, and why."""

    reason: str
    detail_type: str | None = None


def parse_event(body: str | bytes | Mapping[str, Any], *, received_at: float | None = None) -> SpotEvent | Ignored:
    """An SQS message body (or an already decoded event) -> `SpotEvent` or `Ignored`; never raises.

    ``received_at`` (epoch seconds, e.g. the message's SentTimestamp) stands in for an event
    without a readable ``time``."""
    try:
        return _parse(body, received_at)
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"; _parse should not get here
        return Ignored(f"unreadable event ({type(exc).__name__})")


def parse_time(text: Any) -> float | None:
    """An ISO 8601 time (``2026-01-01T12:00:00Z``; naive means UTC) -> epoch seconds, else None."""
    if not isinstance(text, str) or not 10 <= len(text) <= 64:
        return None
    try:
        when = datetime.fromisoformat(text.strip())
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()
    except (ValueError, OverflowError, OSError):
        return None


# ---------------------------------------------------------------------------- internals


def _quote(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def _decode(body: str | bytes | Mapping[str, Any]) -> Mapping[str, Any] | Ignored:
    if isinstance(body, Mapping):
        return body
    if isinstance(body, (bytes, bytearray)):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return Ignored("body is not UTF-8 text")
    if not isinstance(body, str):
        return Ignored(f"body is a {type(body).__name__}, not JSON text")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return Ignored(f"body is not JSON ({type(exc).__name__}: {str(exc)[:80]})")
    if not isinstance(doc, dict):
        return Ignored(f"body is a JSON {type(doc).__name__}, not an object")
    return doc


def _unwrap_sns(doc: Mapping[str, Any]) -> Mapping[str, Any] | Ignored:
    """The event inside an SNS envelope (``Type: Notification`` with a string ``Message``)."""
    if doc.get("Type") == "Notification" and "Message" in doc and "detail-type" not in doc:
        inner = doc.get("Message")
        if not isinstance(inner, str):
            return Ignored("SNS envelope whose Message is not a string")
        unwrapped = _decode(inner)
        if isinstance(unwrapped, Ignored):
            return Ignored(f"SNS envelope: {unwrapped.reason}")
        return unwrapped
    return doc


def _instance_id(detail: Mapping[str, Any], resources: Any) -> str | Ignored:
    raw = detail.get("instance-id")
    if raw is None and isinstance(resources, list):
        for arn in resources:
            match = _INSTANCE_ARN.match(arn) if isinstance(arn, str) else None
            if match:
                return match.group(1)
    if raw is None:
        return Ignored("detail has no instance-id")
    if not isinstance(raw, str) or not INSTANCE_ID.match(raw):
        return Ignored(f"detail has a malformed instance-id {_quote(raw)}")
    return raw


def _parse(body: str | bytes | Mapping[str, Any], received_at: float | None) -> SpotEvent | Ignored:
    doc = _decode(body)
    if isinstance(doc, Ignored):
        return doc
    doc = _unwrap_sns(doc)
    if isinstance(doc, Ignored):
        return doc
    detail_type = doc.get("detail-type")
    if detail_type is None:
        return Ignored("no detail-type: not an EventBridge event")
    if not isinstance(detail_type, str):
        return Ignored(f"detail-type is not a string: {_quote(detail_type)}")
    if detail_type not in DETAIL_TYPES:
        return Ignored(f"not a spot event: detail-type {_quote(detail_type)}", detail_type)
    detail = doc.get("detail")
    if not isinstance(detail, Mapping):
        return Ignored(f"{detail_type}: detail is not an object", detail_type)
    instance_id = _instance_id(detail, doc.get("resources"))
    if isinstance(instance_id, Ignored):
        return Ignored(f"{detail_type}: {instance_id.reason}", detail_type)

    event_time = parse_time(doc.get("time"))
    when = event_time if event_time is not None else _finite(received_at)
    region = doc.get("region") if isinstance(doc.get("region"), str) and doc.get("region") else None
    event_id = doc.get("id") if isinstance(doc.get("id"), str) and doc.get("id") else None
    common = {"instance_id": instance_id, "region": region, "event_time": event_time,
              "raw_detail_type": detail_type, "event_id": event_id}

    if detail_type == INTERRUPTION_WARNING:
        action = detail.get("instance-action")
        if not isinstance(action, str) or action.lower() not in INSTANCE_ACTIONS:
            return Ignored(f"{detail_type}: instance-action {_quote(action)} is none of "
                           f"{', '.join(INSTANCE_ACTIONS)}", detail_type)
        action = action.lower()
        explicit = parse_time(detail.get("instance-termination-time"))
        if explicit is not None:
            deadline: float | None = explicit
        elif when is None:
            deadline = None
        else:
            deadline = when if action == "hibernate" else when + INTERRUPTION_NOTICE_S
        return SpotEvent(TERMINATE, terminate_at_epoch_s=deadline, action=action, **common)

    if detail_type == REBALANCE_RECOMMENDATION:
        return SpotEvent(REBALANCE, terminate_at_epoch_s=None, action=None, **common)

    state = detail.get("state")
    if not isinstance(state, str):
        return Ignored(f"{detail_type}: detail has no state", detail_type)
    if state in STAYING_STATES:
        return Ignored(f"{detail_type}: state {state}: the instance is not going away", detail_type)
    if state not in GOING_STATES:
        return Ignored(f"{detail_type}: unknown state {_quote(state)}", detail_type)
    return SpotEvent(STATE, terminate_at_epoch_s=when, action=state, **common)


def _finite(value: float | None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value == value and value not in (float("inf"), float("-inf")) else None
