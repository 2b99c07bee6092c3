"""The free space of the run directory's file system, watched while a run goes.

Toil's job store, the decisions log and the embedded Redis's AOF all live in the run directory; a
write that fails there for want of space leaves a job half-saved.  So `plastic run` stops the run
when the free space falls below a floor (FLOOR_MIB, or $PLASTIC_MIN_FREE_MIB), before writes fail,
and a leader that failed while the disk was full is a stopped run, not a failed workflow: it stays
RUNNING and `plastic run --resume RUN_DIR` goes on once there is space again.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from plastic.core.book.run_end import EXIT_STOPPED
from plastic.core.errors import PlasticError
from plastic.fileio import write_atomically

FLOOR_MIB = 32.0
CHECK_EVERY_S = 2.0
MIB = 1024 * 1024


class OutOfSpaceError(PlasticError):
    """The run directory's disk is (nearly) full: nothing lost, the run stopped (exit 75)."""

    exit_code = EXIT_STOPPED

    def __init__(self, message: str, *, source: str, free_bytes: int | None = None):
        super().__init__(message, source=source)
        self.free_bytes = free_bytes


def floor_bytes() -> int:
    try:
        return int(float(os.environ.get("PLASTIC_MIN_FREE_MIB", FLOOR_MIB)) * MIB)
    except ValueError:
        return int(FLOOR_MIB * MIB)


def is_out_of_space(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def write_unless_full(path: Path, text: str, notes: list[str]) -> None:
    """Write ``path`` (atomically); on a full disk, say so in ``notes`` instead of failing."""
    try:
        write_atomically(path, text)
    except OSError as error:
        if not is_out_of_space(error):
            raise
        notes.append(f"{path.name} not written: no space left on its device")


class DiskWatch:
    """Is the run directory's file system below the floor? (checked at most every CHECK_EVERY_S)."""

    def __init__(self, run_dir: Path, *, floor: int | None = None, clock: Callable[[], float] = time.monotonic):
        self.run_dir = run_dir
        self.floor = floor_bytes() if floor is None else floor
        self.clock = clock
        self._checked_at: float | None = None
        self.free: int | None = None

    def free_bytes(self) -> int | None:
        try:
            self.free = shutil.disk_usage(self.run_dir).free
        except OSError:
            self.free = None
        return self.free

    def low(self, *, now: bool = False) -> bool:
        if not now and self._checked_at is not None and self.clock() - self._checked_at < CHECK_EVERY_S:
            return self.free is not None and self.free < self.floor
        self._checked_at = self.clock()
        free = self.free_bytes()
        return free is not None and free < self.floor

    def message(self, run_id: str | None = None) -> str:
        free = "?" if self.free is None else f"{self.free / MIB:.1f} MiB"
        resume = f"plastic run --resume {self.run_dir}"
        return (f"no space left for the run ({free} free, below {self.floor / MIB:g} MiB): the run "
                f"{run_id + ' ' if run_id else ''}is stopped and nothing is lost; free some space, then `{resume}`")

    def error(self, run_id: str | None = None) -> OutOfSpaceError:
        self.low(now=True)
        return OutOfSpaceError(self.message(run_id), source=str(self.run_dir), free_bytes=self.free)

    def start_error(self, run_dir: Path) -> OutOfSpaceError:
        """Not enough space to start (or resume) a run in ``run_dir``: nothing was written."""
        free = "?" if self.free is None else f"{self.free / MIB:.1f} MiB"
        return OutOfSpaceError(f"no space for a run: {free} free, below {self.floor / MIB:g} MiB "
                               f"($PLASTIC_MIN_FREE_MIB); nothing was started", source=str(run_dir),
                               free_bytes=self.free)
