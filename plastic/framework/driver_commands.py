"""The JobBook's commands that are one driver call each (plastic.framework.adapter carries out the
others: launches, job ends, questions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plastic.core.book import commands as cmd


def send(driver: Any, command: cmd.Command, statuses: dict[str, Mapping[str, Any]]) -> bool:
    """Make ``command``'s driver call; False when it is not one of these.  ``statuses`` holds the status
    updates as received, by uuid: an acknowledgement returns the one it acknowledges (and drops it)."""
    match command:
        case cmd.DeclineOffers():
            driver.declineOffer([{"value": o} for o in command.offer_ids], {"refuse_seconds": command.refuse_seconds})
        case cmd.KillTask():
            driver.killTask({"value": command.mesos_task_id}, {"value": command.agent_id} if command.agent_id else None)
        case cmd.Acknowledge():
            status = statuses.pop(command.uuid, None) or {
                "task_id": {"value": command.mesos_task_id}, "uuid": command.uuid,
                **({"agent_id": {"value": command.agent_id}} if command.agent_id else {})}
            driver.acknowledgeStatusUpdate(status)
        case cmd.ReviveOffers():
            driver.reviveOffers()
        case cmd.SuppressOffers():
            driver.suppressOffers()
        case cmd.Reconcile():
            driver.reconcileTasks([{"task_id": {"value": t}, **({"agent_id": {"value": a}} if a else {})}
                                   for t, a in command.tasks])
        case _:
            return False
    return True
