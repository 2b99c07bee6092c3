"""The scheduler callback interface, with pymesos' names so Mesos users recognise it.

Subclass :class:`Scheduler` and override what you need; every callback has a
no-op default.  Callbacks run on one thread of the driver, in event order, and
receive the master's JSON decoded as plain dicts (offers, statuses, ids as
``{"value": ...}``), as pymesos passes them.  A callback that raises is logged
with its traceback and the driver carries on; with implicit acknowledgements an
update whose ``statusUpdate`` raised is not acknowledged, so the agent sends it
again later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plastic.mesos.driver import MesosSchedulerDriver


class Scheduler:
    """Base class of a Mesos scheduler: override the callbacks you need."""

    def registered(self, driver: MesosSchedulerDriver, framework_id: dict[str, Any], master_info: dict[str, Any]) -> None:
        """Subscribed with a (new or failed-over) framework id: the first SUBSCRIBED of this driver,
        or a later one that brought a different framework id."""

    def reregistered(self, driver: MesosSchedulerDriver, master_info: dict[str, Any]) -> None:
        """Subscribed again with the same framework id after a lost connection, also when the master
        failed over (a new master adopts the framework under its id).  A new master may not know the
        framework's tasks: reconcile them explicitly to learn which are gone."""

    def disconnected(self, driver: MesosSchedulerDriver) -> None:
        """The event stream was lost; the driver is reconnecting (calls are queued meanwhile)."""

    def resourceOffers(self, driver: MesosSchedulerDriver, offers: list[dict[str, Any]]) -> None:
        """New offers; accept (launchTasks/acceptOffers) or decline them."""

    def inverseOffers(self, driver: MesosSchedulerDriver, offers: list[dict[str, Any]]) -> None:
        """Resources the operator wants back (maintenance)."""

    def offerRescinded(self, driver: MesosSchedulerDriver, offer_id: dict[str, Any]) -> None:
        """An offer is no longer valid."""

    def inverseOfferRescinded(self, driver: MesosSchedulerDriver, offer_id: dict[str, Any]) -> None:
        """An inverse offer is no longer valid."""

    def statusUpdate(self, driver: MesosSchedulerDriver, status: dict[str, Any]) -> None:
        """A task changed state.  With explicit acknowledgements (the default) call
        ``driver.acknowledgeStatusUpdate(status)`` once the update is recorded."""

    def operationStatusUpdate(self, driver: MesosSchedulerDriver, status: dict[str, Any]) -> None:
        """An offer operation (RESERVE, CREATE...) with an id changed state."""

    def frameworkMessage(
        self, driver: MesosSchedulerDriver, executor_id: dict[str, Any], agent_id: dict[str, Any], data: bytes
    ) -> None:
        """An executor sent a message (``data`` already base64-decoded)."""

    def slaveLost(self, driver: MesosSchedulerDriver, agent_id: dict[str, Any]) -> None:
        """An agent was removed (FAILURE carrying only ``agent_id``)."""

    def executorLost(
        self, driver: MesosSchedulerDriver, executor_id: dict[str, Any], agent_id: dict[str, Any], status: int | None
    ) -> None:
        """An executor terminated (FAILURE carrying ``executor_id``; ``status`` may be None)."""

    def error(self, driver: MesosSchedulerDriver, message: str) -> None:
        """An unrecoverable error (ERROR event, failed over by another scheduler,
        authentication refused...); the driver has aborted when this runs."""

    def heartbeat(self, driver: MesosSchedulerDriver) -> None:
        """A HEARTBEAT event arrived (the driver's watchdog needs nothing from you).
        Calls ``processHeartBeat`` so pymesos-style subclasses keep working."""
        self.processHeartBeat(driver)

    def processHeartBeat(self, driver: MesosSchedulerDriver) -> None:
        """pymesos' name for :meth:`heartbeat`."""
