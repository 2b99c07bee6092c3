"""Run a spot machine's process until the machine is interrupted (`plastic spot-run`).

On EC2 a spot instance disappears at the time its instance-action notice names, and everything on
it with it.  A Mesos agent in a container (the compose cluster) has no such fate by itself: this
supervisor starts the agent as its child, reads the IMDS notice every ``interval_s`` and at the
notice's time kills the child's whole process group with SIGKILL, then exits 137, as if the
machine had been taken.  SIGTERM/SIGINT are passed on to the child (a normal stop); the child's own
exit ends the supervisor with the child's code, unless ``restart_delay_s`` is given: then the child
is started again that long after it exits on its own, as a machine's init system restarts a crashed
agent (its executors, in sessions of their own, keep running and re-subscribe to the new agent).

The supervisor is the parent of every orphan of its machine (an executor whose agent died): as a
container's first process by nature, elsewhere as a child subreaper (Linux' PR_SET_CHILD_SUBREAPER).
It reaps them, so none lingers as a zombie that a recovering agent would take for alive.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from plastic.watch.imds_client import ImdsClient, ImdsError

log = logging.getLogger(__name__)

INTERRUPTED_EXIT = 137  # 128 + SIGKILL: what a killed machine's processes report
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def become_subreaper() -> bool:
    """Orphaned descendants become our children (Linux 3.4+); False where the call is refused."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _exit_code(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode  # killed by a signal: the shell's 128 + N


def reap_orphans(child_pid: int) -> list[int]:
    """Collect every exited process of ours except ``child_pid`` (its exit belongs to its Popen)."""
    reaped = []
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return reaped
        if info is None or info.si_pid == child_pid:
            return reaped
        os.waitpid(info.si_pid, 0)
        reaped.append(info.si_pid)


def _interrupted(imds: ImdsClient, clock: Callable[[], float]) -> bool:
    try:
        action = imds.instance_action(clock())
    except ImdsError as exc:
        log.warning("spot-run: %s", exc)
        return False
    if action is None or clock() < action.time:
        return False
    log.warning("spot-run: the instance-action time has come (%s): the machine goes now", action.action)
    return True


def _kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def run_until_interrupted(cmd: Sequence[str], imds: ImdsClient, *, interval_s: float = 1.0,
                          clock: Callable[[], float] = time.time, stop: threading.Event | None = None,
                          restart_delay_s: float | None = None) -> int:
    stop = stop or threading.Event()
    if restart_delay_s is not None and os.getpid() != 1 and not become_subreaper():
        log.warning("spot-run: cannot become a child subreaper: orphaned executors go to init")
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
            reap_orphans(child.pid)
            code = child.poll()
            if code is not None and (stop.is_set() or restart_delay_s is None):
                return _exit_code(code)
            if code is not None:
                log.warning("spot-run: %s exited with %d; starting it again in %.1f s", cmd[0], _exit_code(code),
                            restart_delay_s)
                if stop.wait(restart_delay_s):
                    return _exit_code(code)
                child = subprocess.Popen(list(cmd), start_new_session=True)
                log.info("spot-run: started %s again (pid %d)", cmd[0], child.pid)
                continue
            if not stop.is_set() and _interrupted(imds, clock):
                _kill_group(child)
                return INTERRUPTED_EXIT
            time.sleep(interval_s)
    finally:
        if child.poll() is None:
            _kill_group(child)
