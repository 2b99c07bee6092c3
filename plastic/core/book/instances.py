"""Which Mesos agent runs on an EC2 instance, pure: the one rule the JobBook, the elastic provisioner
and the SQS notice poller share.

An instance can carry more than one agent id over its life (its Mesos agent restarted without its
work directory registers anew).  The agent of an instance is then the newest one not gone, else the
newest: a notice for the instance reaches the agent that runs there now.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AgentSighting:
    agent_id: str
    gone: bool
    since: float  # when it was first seen (any clock, or an order: only compared)


def agent_of_instance(sightings: Iterable[AgentSighting]) -> str | None:
    """The agent of an instance among the agents seen on it (see the module docstring)."""
    best = max(sightings, key=lambda s: (not s.gone, s.since, s.agent_id), default=None)
    return None if best is None else best.agent_id
