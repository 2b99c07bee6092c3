"""Mesos v1 operator API (``POST /api/v1``): call builders and a small synchronous client.

Answers are ``200 OK`` with a JSON body for GET_* calls and an empty body for
DRAIN_AGENT / REACTIVATE_AGENT; errors are text/plain.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from plastic.mesos import calls
from plastic.mesos.calls import IdLike
from plastic.mesos.connection import JSON_HEADERS, OPERATOR_PATH, error_for_status, post
from plastic.mesos.masters import MasterEndpoint

logger = logging.getLogger(__name__)


def simple(call_type: str) -> dict[str, Any]:
    """A call without arguments: GET_AGENTS, GET_TASKS, GET_FRAMEWORKS, GET_STATE, GET_HEALTH, GET_VERSION..."""
    return {"type": call_type}


def drain_agent(agent_id: IdLike, max_grace_period_s: float | None = None, mark_gone: bool = False) -> dict[str, Any]:
    """DRAIN_AGENT; the grace period travels as a DurationInfo in nanoseconds."""
    body: dict[str, Any] = {"agent_id": calls.as_id(agent_id)}
    if max_grace_period_s is not None:
        body["max_grace_period"] = {"nanoseconds": round(max_grace_period_s * 1e9)}
    if mark_gone:
        body["mark_gone"] = True
    return {"type": "DRAIN_AGENT", "drain_agent": body}


def reactivate_agent(agent_id: IdLike) -> dict[str, Any]:
    return {"type": "REACTIVATE_AGENT", "reactivate_agent": {"agent_id": calls.as_id(agent_id)}}


def deactivate_agent(agent_id: IdLike) -> dict[str, Any]:
    return {"type": "DEACTIVATE_AGENT", "deactivate_agent": {"agent_id": calls.as_id(agent_id)}}


def mark_agent_gone(agent_id: IdLike) -> dict[str, Any]:
    return {"type": "MARK_AGENT_GONE", "mark_agent_gone": {"agent_id": calls.as_id(agent_id)}}


class OperatorClient:
    """Synchronous operator calls against the leading master (follows 307s)."""

    def __init__(self, endpoint: MasterEndpoint, client: httpx.Client):
        self._endpoint = endpoint
        self._client = client

    def call(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """Send one operator call; the decoded JSON answer, or None for an empty body.

        Raises MesosError (with the master's text) for an error answer.
        """
        call_type = str(body.get("type"))
        response = post(
            self._client, self._endpoint, OPERATOR_PATH, calls.encode(body), JSON_HEADERS, call_type=call_type
        )
        if response.status_code not in (200, 202):
            error = error_for_status(response.status_code, response.text, call_type, str(response.url))
            logger.error("operator call %s failed: %s", call_type, error.message)
            raise error
        if not response.content:
            return None
        return json.loads(response.content)

    def get_agents(self) -> dict[str, Any]:
        return self.call(simple("GET_AGENTS")) or {}

    def get_tasks(self) -> dict[str, Any]:
        return self.call(simple("GET_TASKS")) or {}

    def get_frameworks(self) -> dict[str, Any]:
        return self.call(simple("GET_FRAMEWORKS")) or {}

    def get_state(self) -> dict[str, Any]:
        return self.call(simple("GET_STATE")) or {}

    def drain_agent(self, agent_id: IdLike, max_grace_period_s: float | None = None, mark_gone: bool = False) -> None:
        self.call(drain_agent(agent_id, max_grace_period_s, mark_gone))

    def reactivate_agent(self, agent_id: IdLike) -> None:
        self.call(reactivate_agent(agent_id))
