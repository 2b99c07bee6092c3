"""plastic's own client of the Mesos v1 scheduler HTTP API (pymesos does not install on Python 3.11+).

``MesosSchedulerDriver`` (driver.py) with the pymesos-style ``Scheduler``
callback interface (scheduler.py); call builders in calls.py, event decoding
and dispatch in events.py, the event stream and backoff in connection.py,
master URL resolution (including ``zk://``) in masters.py, operator API calls
in operator.py, RecordIO framing in recordio.py.
"""

from plastic.mesos.driver import DriverStatus, MesosSchedulerDriver
from plastic.mesos.errors import (
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
