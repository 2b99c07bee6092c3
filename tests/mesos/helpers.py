"""A scheduler that records its callbacks, for the driver tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from plastic.mesos.scheduler import Scheduler
from tests.waiting import eventually


class Recorder(Scheduler):
    """Records every callback as (name, args); acknowledges updates unless told not to."""

    def __init__(self, *, acknowledge: bool = True):
        self.acknowledge = acknowledge
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.cond = threading.Condition()
        self.hooks: dict[str, Callable[..., None]] = {}

    def _add(self, name: str, driver: Any, *args: Any) -> None:
        with self.cond:
            self.calls.append((name, args))
            self.cond.notify_all()
        hook = self.hooks.get(name)
        if hook is not None:
            hook(driver, *args)

    # -- callbacks -------------------------------------------------------------------
    def registered(self, driver, framework_id, master_info):
        self._add("registered", driver, framework_id, master_info)

    def reregistered(self, driver, master_info):
        self._add("reregistered", driver, master_info)

    def disconnected(self, driver):
        self._add("disconnected", driver)

    def resourceOffers(self, driver, offers):
        self._add("resourceOffers", driver, offers)

    def inverseOffers(self, driver, offers):
        self._add("inverseOffers", driver, offers)

    def offerRescinded(self, driver, offer_id):
        self._add("offerRescinded", driver, offer_id)

    def statusUpdate(self, driver, status):
        # Acknowledge first, so a test that saw the update can flush() the acknowledgement.
        if self.acknowledge and not driver.implicit_acknowledgements:
            driver.acknowledgeStatusUpdate(status)
        self._add("statusUpdate", driver, status)

    def frameworkMessage(self, driver, executor_id, agent_id, data):
        self._add("frameworkMessage", driver, executor_id, agent_id, data)

    def slaveLost(self, driver, agent_id):
        self._add("slaveLost", driver, agent_id)

    def executorLost(self, driver, executor_id, agent_id, status):
        self._add("executorLost", driver, executor_id, agent_id, status)

    def error(self, driver, message):
        self._add("error", driver, message)

    def heartbeat(self, driver):
        self._add("heartbeat", driver)

    # -- inspection ------------------------------------------------------------------
    def names(self) -> list[str]:
        with self.cond:
            return [n for n, _ in self.calls]

    def of(self, name: str) -> list[tuple[Any, ...]]:
        with self.cond:
            return [a for n, a in self.calls if n == name]

    def statuses(self, task_id: str | None = None) -> list[dict[str, Any]]:
        return [a[0] for a in self.of("statusUpdate") if task_id is None or a[0]["task_id"]["value"] == task_id]

    def states(self, task_id: str) -> list[str]:
        return [s["state"] for s in self.statuses(task_id)]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
        eventually(predicate, timeout, what, condition=self.cond,
                   describe=lambda: f"callbacks: {self.names()[-30:]}")

    def wait_count(self, name: str, n: int = 1, timeout: float = 10.0) -> None:
        self.wait_for(lambda: sum(1 for c, _ in self.calls if c == name) >= n, timeout, f"{n} x {name}")

    def wait_state(self, task_id: str, state: str, timeout: float = 10.0) -> dict[str, Any]:
        self.wait_for(
            lambda: any(a[0]["task_id"]["value"] == task_id and a[0]["state"] == state for n, a in self.calls if n == "statusUpdate"),
            timeout,
            f"{task_id} {state}",
        )
        return next(s for s in self.statuses(task_id) if s["state"] == state)
