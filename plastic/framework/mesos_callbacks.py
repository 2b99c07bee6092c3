"""The Framework's face to the driver (plastic.framework.adapter): each Mesos callback becomes one
JobBook event, applied through the Framework; nothing is decided here.

    registered     -> Registered (and Reconnected when it is not the first), then AgentSeen per agent
    reregistered   -> Reconnected        resourceOffers -> OffersReceived    offerRescinded -> OfferRescinded
    statusUpdate   -> StatusReceived (with what plastic's executor measured)  slaveLost -> AgentLost

A mixin of `Framework`, whose state it uses: ``lock``, ``apply``, ``launcher`` (the offers as sent),
``statuses`` (for the acknowledgements), ``executor_agents``, and the registration flags.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from plastic.core.book import events as evt
from plastic.executor.protocol import usage_of
from plastic.framework.task_info import EXECUTOR_ID
from plastic.mesos.offers import agent_of_listing, offer_of, status_event, value_of
from plastic.mesos.scheduler import Scheduler

if TYPE_CHECKING:
    from plastic.core.book.decisions import Decisions
    from plastic.framework.launcher import Launcher

log = logging.getLogger(__name__)


class MesosCallbacks(Scheduler):
    """Driver callbacks -> JobBook events (see the module docstring)."""

    lock: threading.RLock
    launcher: Launcher
    statuses: dict[str, Mapping[str, Any]]
    executor_agents: set[str]
    framework_id: str | None
    registered_event: threading.Event
    failed_event: threading.Event
    last_error: str | None
    apply: Callable[[evt.Event], Decisions]

    def registered(self, driver: Any, framework_id: Mapping[str, Any], master_info: Mapping[str, Any]) -> None:
        self.framework_id = value_of(framework_id)
        log.info("registered as framework %s", self.framework_id)
        self.apply(evt.Registered(self.framework_id or ""))
        self._load_agents(driver)
        if self.registered_event.is_set():
            self.apply(evt.Reconnected())  # a new framework id: reconcile what we think is live
        self.registered_event.set()

    def reregistered(self, driver: Any, master_info: Mapping[str, Any]) -> None:
        log.info("re-registered as framework %s", self.framework_id)
        self.apply(evt.Reconnected())

    def disconnected(self, driver: Any) -> None:
        log.warning("disconnected from the Mesos master; the driver reconnects")

    def error(self, driver: Any, message: str) -> None:  # type: ignore[override]
        log.error("Mesos driver error: %s", message)
        self.last_error = message
        self.failed_event.set()

    def resourceOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:
        with self.lock:
            for o in offers:
                self.launcher.offered(o)
            running = EXECUTOR_ID if self.launcher.task_infos.kind == "plastic" else None
            self.apply(evt.OffersReceived(tuple(offer_of(o, running) for o in offers)))

    def offerRescinded(self, driver: Any, offer_id: Mapping[str, Any]) -> None:
        with self.lock:
            oid = value_of(offer_id) or ""
            self.launcher.forget(oid)
            self.apply(evt.OfferRescinded(oid))

    def statusUpdate(self, driver: Any, status: dict[str, Any]) -> None:
        ev = replace(status_event(status), usage=usage_of(status))  # (what plastic's executor measured)
        with self.lock:
            if value_of(status.get("executor_id")) == EXECUTOR_ID and ev.agent_id:
                self.executor_agents.add(ev.agent_id)
            if ev.uuid:
                self.statuses[ev.uuid] = status
            self.apply(ev)

    def slaveLost(self, driver: Any, agent_id: Mapping[str, Any]) -> None:
        self.apply(evt.AgentLost(value_of(agent_id) or ""))

    def _load_agents(self, driver: Any) -> None:
        """Feed AgentSeen for the master's agents (GET_AGENTS), so the book knows the whole cluster
        (capacities) before the first offer; best effort."""
        try:
            answer = driver.operator.get_agents() or {}
        except Exception as exc:  # an operator API the master does not have, a network hiccup...
            log.info("GET_AGENTS failed (%s); agents are learnt from offers", exc)
            return
        for entry in (answer.get("get_agents") or {}).get("agents") or ():
            agent = agent_of_listing(entry)
            if agent is not None:
                self.apply(evt.AgentSeen(agent))
