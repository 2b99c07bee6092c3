"""plastic's own client of the Mesos v1 scheduler HTTP API (pymesos does not install on Python 3.11+).

``MesosSchedulerDriver`` (driver.py) with the pymesos-style ``Scheduler``
callback interface (scheduler.py); call builders in calls.py, event decoding
and dispatch in events.py, the event stream and backoff in connection.py,
master URL resolution (including ``zk://``) in masters.py, operator API calls
in operator.py, RecordIO framing in recordio.py.
"""

from typing import Any

from plastic.mesos.driver_errors import (
    DriverNotRunningError,
    DriverQueueFullError,
    MesosAuthError,
    MesosConnectionError,
    MesosError,
    MesosFrameworkError,
    OfferExpiredError,
)
from plastic.mesos.scheduler import Scheduler

__all__ = [
    "DriverNotRunningError",
    "DriverQueueFullError",
    "DriverStatus",
    "MesosAuthError",
    "MesosConnectionError",
    "MesosError",
    "MesosFrameworkError",
    "MesosSchedulerDriver",
    "OfferExpiredError",
    "Scheduler",
]


def __getattr__(name: str) -> Any:
    """The driver, loaded on first use: plastic's executor reads RecordIO from this package and needs
    neither the driver nor httpx (a sixth of a second of its start on every agent)."""
    if name in ("DriverStatus", "MesosSchedulerDriver"):
        from plastic.mesos import driver

        return getattr(driver, name)
    raise AttributeError(f"module 'plastic.mesos' has no attribute {name!r}")
