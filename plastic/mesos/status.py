"""The driver's status values (those of the old libmesos driver)."""

from __future__ import annotations

from enum import IntEnum


class DriverStatus(IntEnum):
    """The old libmesos driver's Status values."""

    DRIVER_NOT_STARTED = 1
    DRIVER_RUNNING = 2
    DRIVER_ABORTED = 3
    DRIVER_STOPPED = 4
