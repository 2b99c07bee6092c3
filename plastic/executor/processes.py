"""The executor's task processes: started in a directory and process group of their own, reaped
through a pidfd on the event loop with wait4, which gives what each used (CPU time, peak RSS)."""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plastic.core.executor.messages import Usage
from plastic.procs import killpg_quietly, shell_argv, spawn_in_session

log = logging.getLogger(__name__)

ExitCallback = Callable[[str, int, Usage, str], None]  # task_id, returncode, usage, stderr tail


@dataclass
class RunningTask:
    task_id: str
    pid: int
    directory: Path
    started: float
    pidfd: int | None = None


def stderr_tail(path: Path, max_bytes: int = 4096) -> str:
    """The last non-empty line of a file (its last ``max_bytes``), or ""."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line for line in tail.splitlines() if line.strip()]
    return lines[-1][:500] if lines else ""


class TaskProcesses:
    """Every task process of one executor."""

    def __init__(self, sandbox: Path, base_env: dict[str, str], on_exit: ExitCallback):
        self.root = sandbox / "tasks"
        self.base_env = base_env
        self.on_exit = on_exit
        self.running: dict[str, RunningTask] = {}
        self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def start(self, task_id: str, command: dict[str, Any]) -> None:
        """Start the task's command; raises OSError when it cannot be started."""
        self.root.mkdir(parents=True, exist_ok=True)
        directory = self.root / task_id
        env = dict(self.base_env)
        env.update({"MESOS_SANDBOX": str(directory), "MESOS_TASK_ID": task_id})
        for var in (command.get("environment") or {}).get("variables") or []:
            if isinstance(var, dict) and isinstance(var.get("name"), str):
                env[var["name"]] = str(var.get("value", ""))
        argv, executable = shell_argv(command)
        proc = spawn_in_session(directory, argv, executable, env, self._devnull)
        # the Popen object is dropped: the process is reaped here, by wait4, for its resource usage
        proc.returncode = 0  # (so Popen's finaliser never waits for it)
        task = RunningTask(task_id, proc.pid, directory, time.monotonic())
        self.running[task_id] = task
        loop = asyncio.get_running_loop()
        try:
            task.pidfd = os.pidfd_open(proc.pid)
            loop.add_reader(task.pidfd, self._reap, task)
        except OSError:  # no pidfd: a blocking wait4 on a thread
            loop.run_in_executor(None, self._wait_blocking, task, loop)

    def signal(self, task_id: str, sig: int) -> None:
        task = self.running.get(task_id)
        if task is not None:
            killpg_quietly(task.pid, sig)

    def pids(self) -> list[int]:
        return [t.pid for t in self.running.values()]

    def _reap(self, task: RunningTask) -> None:
        try:
            pid, status, rusage = os.wait4(task.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status, rusage = task.pid, 0, None
        if pid == 0:
            return  # not yet (a spurious wake-up)
        self._ended(task, status, rusage)

    def _wait_blocking(self, task: RunningTask, loop: asyncio.AbstractEventLoop) -> None:
        _, status, rusage = os.wait4(task.pid, 0)  # (on a thread: it has no event loop of its own)
        loop.call_soon_threadsafe(self._ended, task, status, rusage)

    def _ended(self, task: RunningTask, status: int, rusage: resource.struct_rusage | None) -> None:
        if task.pidfd is not None:
            asyncio.get_running_loop().remove_reader(task.pidfd)
            os.close(task.pidfd)
            task.pidfd = None
        self.running.pop(task.task_id, None)
        killpg_quietly(task.pid, 9)  # whatever the task left behind in its group
        wall = time.monotonic() - task.started
        if rusage is None:
            usage = Usage(0.0, 0.0, wall)
        else:  # ru_maxrss: KiB on Linux
            usage = Usage(rusage.ru_utime + rusage.ru_stime, rusage.ru_maxrss / 1024.0, wall)
        returncode = os.waitstatus_to_exitcode(status)
        self.on_exit(task.task_id, returncode, usage, stderr_tail(task.directory / "stderr") if returncode else "")

    def close(self) -> None:
        if self._devnull >= 0:
            os.close(self._devnull)
            self._devnull = -1
