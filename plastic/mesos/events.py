"""Events of the Mesos v1 scheduler API: decoding, and which callback each one calls.

:func:`callback_for` is the pure mapping (event dict -> callback name and
arguments); :func:`invoke` calls a scheduler callback and contains whatever it
raises.  SUBSCRIBED and ERROR also change the driver's state, which the driver
does before dispatching them.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Mapping
from typing import Any

from plastic.mesos.driver_errors import MesosError

logger = logging.getLogger(__name__)

FAILED_OVER_MESSAGE = "Framework failed over"

#: Events whose content is only meaningful on the connection that carried them.
CONNECTION_SCOPED = frozenset({"OFFERS", "INVERSE_OFFERS", "RESCIND", "RESCIND_INVERSE_OFFER"})


class EventDecodeError(MesosError):
    """A record of the event stream is not a JSON event."""


def decode_event(record: bytes) -> dict[str, Any]:
    try:
        event = json.loads(record)
    except ValueError as exc:
        raise EventDecodeError(f"event is not JSON: {exc}: {record[:200]!r}") from exc
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise EventDecodeError(f"event without a type: {record[:200]!r}")
    return event


def decode_data(data: str | None) -> bytes:
    """A proto ``bytes`` field (base64 in JSON) -> bytes."""
    if not data:
        return b""
    try:
        return base64.b64decode(data)
    except (binascii.Error, ValueError):
        logger.warning("message data is not base64; passing its UTF-8 bytes")
        return data.encode("utf-8")


def callback_for(event: Mapping[str, Any], *, first_subscription: bool = True) -> tuple[str, tuple[Any, ...]] | None:
    """The scheduler callback an event calls, and its arguments after ``driver``.

    None for events with no callback (unknown types are logged).
    """
    kind = event.get("type")
    if kind == "SUBSCRIBED":
        sub = event.get("subscribed", {})
        if first_subscription:
            return "registered", (sub.get("framework_id"), sub.get("master_info", {}))
        return "reregistered", (sub.get("master_info", {}),)
    if kind == "OFFERS":
        return "resourceOffers", (list(event.get("offers", {}).get("offers", [])),)
    if kind == "INVERSE_OFFERS":
        return "inverseOffers", (list(event.get("inverse_offers", {}).get("inverse_offers", [])),)
    if kind == "RESCIND":
        return "offerRescinded", (event.get("rescind", {}).get("offer_id"),)
    if kind == "RESCIND_INVERSE_OFFER":
        return "inverseOfferRescinded", (event.get("rescind_inverse_offer", {}).get("inverse_offer_id"),)
    if kind == "UPDATE":
        return "statusUpdate", (event.get("update", {}).get("status", {}),)
    if kind == "UPDATE_OPERATION_STATUS":
        return "operationStatusUpdate", (event.get("update_operation_status", {}).get("status", {}),)
    if kind == "MESSAGE":
        msg = event.get("message", {})
        return "frameworkMessage", (msg.get("executor_id"), msg.get("agent_id"), decode_data(msg.get("data")))
    if kind == "FAILURE":
        failure = event.get("failure", {})
        if failure.get("executor_id"):
            return "executorLost", (failure.get("executor_id"), failure.get("agent_id"), failure.get("status"))
        if failure.get("agent_id"):
            return "slaveLost", (failure.get("agent_id"),)
        logger.warning("FAILURE event with neither agent_id nor executor_id: %r", event)
        return None
    if kind == "ERROR":
        return "error", (event.get("error", {}).get("message", ""),)
    if kind == "HEARTBEAT":
        return "heartbeat", ()
    logger.warning("ignoring an event of unknown type %r", kind)
    return None


def invoke(scheduler: Any, driver: Any, name: str, args: tuple[Any, ...]) -> bool:
    """Call ``scheduler.<name>(driver, *args)``; log (with traceback) and swallow what it raises.

    Returns True when the callback returned normally.
    """
    method = getattr(scheduler, name, None)
    if method is None:
        return True
    try:
        method(driver, *args)
    except Exception:
        logger.exception("scheduler callback %s raised; the driver carries on", name)
        return False
    return True
