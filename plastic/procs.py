"""Small facts about processes, shared by the local cluster, the embedded Redis and `plastic run`."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return fields[0] != "Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def process_started(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat), None where /proc cannot
    tell: with the pid it names one process, not a later one that got the same pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def stop_process(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM a child still running, SIGKILL it after ``grace_s``, and reap it."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cmdline_mentions(pid: int, text: str) -> bool | None:
    """Whether the command line of process ``pid`` has ``text`` in one of its arguments (None where
    /proc cannot tell): a recorded pid may belong to another process after a reboot."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return None
    return any(text.encode() in arg for arg in argv)


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A preexec_fn asking Linux to send the child ``sig`` when its parent (thread) dies; None elsewhere.

    SIGTERM (the default) lets the child clean up; `plastic run` gives Toil's leader SIGKILL, so it
    dies like a crash (its batch system kills no task) and can be resumed."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), sig)

    return preexec


def killpg_quietly(pgid: int, sig: int) -> None:
    """Signal a process group that may be gone already."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def spawn_in_session(directory: Path, argv: list[str], executable: str, env: dict[str, str], devnull: int, *,
                     make_directory: bool = True) -> subprocess.Popen:
    """Start a task as Mesos runs one: in ``directory`` (made here unless told otherwise) with its
    ``stdout`` and ``stderr`` files there, standard input from ``devnull``, in a session (and process
    group) of its own so a signal reaches the whole tree."""
    if make_directory:
        os.mkdir(directory)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    out = os.open(directory / "stdout", flags, 0o644)
    try:
        err = os.open(directory / "stderr", flags, 0o644)
        try:
            return subprocess.Popen(argv, executable=executable, stdin=devnull, stdout=out, stderr=err,
                                    cwd=directory, env=env, start_new_session=True)
        finally:
            os.close(err)
    finally:
        os.close(out)


def shell_argv(command: dict) -> tuple[list[str], str]:
    """(argv, executable) of a Mesos CommandInfo: `/bin/sh -c VALUE` when `shell` is true (the default),
    else VALUE exec'd with `arguments` as its argv."""
    if command.get("shell", True) is not False:
        return ["/bin/sh", "-c", str(command.get("value", ""))], "/bin/sh"
    executable = str(command.get("value"))
    args = [str(a) for a in command.get("arguments") or []]
    return args or [executable], executable
