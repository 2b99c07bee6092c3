"""Run a spot machine's process until the machine is interrupted (`plastic spot-run`).

On EC2 a spot instance disappears at the time its instance-action notice names, and everything on
it with it.  A Mesos agent in a container (the compose cluster) has no such fate by itself: this
supervisor starts the agent as its child, reads the IMDS notice every ``interval_s`` and at the
notice's time kills the child's whole process group with SIGKILL, then exits 137, as if the
machine had been taken.  SIGTERM/SIGINT are passed on to the child (a normal stop); the child's own
exit ends the supervisor with the child's code.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from plastic.watch.imds import ImdsClient, ImdsError

log = logging.getLogger(__name__)

INTERRUPTED_EXIT = 137  # 128 + SIGKILL: what a killed machine's processes report


def run_until_interrupted(cmd: Sequence[str], imds: ImdsClient, *, interval_s: float = 1.0,
                          clock: Callable[[], float] = time.time, stop: threading.Event | None = None) -> int:
    stop = stop or threading.Event()
    child = subprocess.Popen(list(cmd), start_new_session=True)
    log.info("spot-run: started %s (pid %d)", cmd[0], child.pid)

    def pass_on(signum: int, _frame) -> None:
        stop.set()
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, pass_on)
    try:
        while True:
            code = child.poll()
            if code is not None:
                return code if code >= 0 else 128 - code  # killed by a signal: the shell's 128 + N
            if not stop.is_set():
                try:
                    action = imds.instance_action(clock())
                except ImdsError as exc:
                    log.warning("spot-run: %s", exc)
                    action = None
                if action is not None and clock() >= action.time:
                    log.warning("spot-run: the instance-action time has come (%s): the machine goes now",
                                action.action)
                    try:
                        os.killpg(child.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    child.wait()
                    return INTERRUPTED_EXIT
            time.sleep(interval_s)
    finally:
        if child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait()
