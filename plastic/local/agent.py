"""An agent's executor side: every task a real process group, watched by the event loop.

A task runs as the command executor of Mesos runs it: `/bin/sh -c VALUE` when
`shell` is true (the default), else VALUE exec'd with `arguments` as argv; in
its own sandbox directory with `stdout` and `stderr` files; in its own session
(process group) so a kill reaches the whole tree.  Exits are noticed through a
pidfd registered with the event loop (no thread and no polling per task; the
asyncio child watcher of Python 3.11 would start a thread per process).

Spawning (sandbox directory, output files, vfork/exec) costs about a
millisecond and normally runs on the loop's thread: measured on this 2-core
machine, a pool of launcher threads (`launcher=`) freed the loop but cost more
CPU in thread hand-offs than it saved.  The sandbox is one directory per task
(`agents/AGENT/frameworks/FW/tasks/TASK-CONTAINER`) because directory
creation is slow on some file systems (0.5 ms in this machine's /tmp).

The agent reports TASK_STARTING, TASK_RUNNING and the terminal state through
a callback; the statuses carry a fresh uuid, executor_id and timestamp like a
real agent's.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plastic.local import protocol as P
from plastic.procs import killpg_quietly as _killpg
from plastic.procs import shell_argv
from plastic.procs import spawn_in_session as _spawn

log = logging.getLogger(__name__)

MARKER_ENV = "PLASTIC_LOCAL_CLUSTER_ID"

StatusCallback = Callable[[str, str, str, dict[str, Any]], None]  # agent_id, framework_id, task_id, status


@dataclass
class TaskProcess:
    framework_id: str
    task_id: str
    container_id: str
    sandbox: Path
    proc: subprocess.Popen | None = None
    spawning: asyncio.Future | None = None
    pidfd: int | None = None
    kill_reason: str | None = None
    killed: bool = False
    silent: bool = False
    kill_timer: asyncio.TimerHandle | None = None
    exit_waiters: list[asyncio.Future] = field(default_factory=list)


def new_uuid_b64() -> str:
    return base64.b64encode(os.urandom(16)).decode("ascii")


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.strsignal(-returncode) or f"signal {-returncode}"
        except ValueError:
            name = f"signal {-returncode}"
        return f"Command terminated with signal {name}"
    return f"Command exited with status {returncode}"


class AgentRuntime:
    """The processes of one agent."""

    def __init__(self, agent_id: str, workdir: Path, on_status: StatusCallback, *, base_env: dict[str, str],
                 launcher: Executor | None = None):
        self.agent_id = agent_id
        self.workdir = workdir
        self.on_status = on_status
        self.base_env = base_env
        self.launcher = launcher  # None: spawn on the loop's thread
        self.tasks: dict[tuple[str, str], TaskProcess] = {}
        self.alive = True
        self._made: set[Path] = set()  # task parent directories already made
        self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def close(self) -> None:
        if self._devnull >= 0:
            os.close(self._devnull)
            self._devnull = -1

    # ------------------------------------------------------------ launching
    def launch(self, framework_id: str, task_id: str, info: dict[str, Any], container_id: str) -> Path | None:
        """Start the task (on a launcher thread); returns its sandbox."""
        if not self.alive:
            return None
        parent = self.workdir / "agents" / self.agent_id / "frameworks" / framework_id / "tasks"
        if parent not in self._made:
            parent.mkdir(parents=True, exist_ok=True)
            self._made.add(parent)
        sandbox = parent / f"{task_id}-{container_id}"  # one directory per task: file systems can be slow
        tp = TaskProcess(framework_id, task_id, container_id, sandbox)
        self.tasks[(framework_id, task_id)] = tp
        cmd = info.get("command") or {}
        env = dict(self.base_env)
        env.update({"MESOS_SANDBOX": str(sandbox), "MESOS_TASK_ID": task_id, "MESOS_FRAMEWORK_ID": framework_id,
                    "MESOS_AGENT_ID": self.agent_id, "MESOS_EXECUTOR_ID": task_id,
                    "MESOS_CONTAINER_ID": container_id, "HOME": env.get("HOME", str(sandbox))})
        for var in (cmd.get("environment") or {}).get("variables") or []:
            if isinstance(var, dict) and isinstance(var.get("name"), str):
                env[var["name"]] = str(var.get("value", ""))
        argv, executable = shell_argv(cmd)
        loop = asyncio.get_running_loop()
        if self.launcher is None:
            fut: asyncio.Future = loop.create_future()
            try:
                fut.set_result(_spawn(sandbox, argv, executable, env, self._devnull))
            except OSError as exc:
                fut.set_exception(exc)
        else:
            fut = loop.run_in_executor(self.launcher, _spawn, sandbox, argv, executable, env, self._devnull)
        tp.spawning = fut
        fut.add_done_callback(lambda f: self._spawned(tp, f))
        return sandbox

    def _spawned(self, tp: TaskProcess, fut: asyncio.Future) -> None:
        tp.spawning = None
        exc = fut.exception()
        if exc is not None:
            log.info("task %s failed to start: %s", tp.task_id, exc)
            self.tasks.pop((tp.framework_id, tp.task_id), None)
            for w in tp.exit_waiters:
                if not w.done():
                    w.set_result(None)
            if not tp.killed:
                self._report(tp, "TASK_STARTING", pid=None)
                self._report(tp, "TASK_FAILED", message=f"Failed to launch command: {exc}",
                             reason="REASON_COMMAND_EXECUTOR_FAILED", pid=None)
            else:
                self._report(tp, "TASK_KILLED", message="Task killed before it was launched", reason=tp.kill_reason,
                             pid=None)
            return
        tp.proc = fut.result()
        loop = asyncio.get_running_loop()
        try:
            tp.pidfd = os.pidfd_open(tp.proc.pid)
            loop.add_reader(tp.pidfd, self._exited, tp)
        except OSError:  # no pidfd (old kernel): fall back to a blocking wait in the default executor
            loop.run_in_executor(None, tp.proc.wait).add_done_callback(lambda _f: self._exited(tp))
        if not self.alive or tp.killed:  # died or killed while the process was being started
            _killpg(tp.proc.pid, signal.SIGKILL)
            return
        self._report(tp, "TASK_STARTING")
        self._report(tp, "TASK_RUNNING")

    def _report(self, tp: TaskProcess, state: str, *, message: str | None = None, reason: str | None = None,
                pid: int | None | bool = True) -> None:
        if tp.silent or not self.alive:
            return
        executor_pid = tp.proc.pid if (pid is True and tp.proc is not None) else None
        st = P.status(tp.task_id, state, timestamp=time.time(), message=message, source="SOURCE_EXECUTOR",
                      reason=reason, agent_id=self.agent_id, executor_id=tp.task_id, uuid=new_uuid_b64(),
                      container=P.container_status(tp.container_id, executor_pid))
        self.on_status(self.agent_id, tp.framework_id, tp.task_id, st)

    def _exited(self, tp: TaskProcess) -> None:
        loop = asyncio.get_running_loop()
        if tp.pidfd is not None:
            loop.remove_reader(tp.pidfd)
            os.close(tp.pidfd)
            tp.pidfd = None
        assert tp.proc is not None
        code = tp.proc.poll()
        if code is None:
            code = tp.proc.wait()
        if tp.kill_timer is not None:
            tp.kill_timer.cancel()
        _killpg(tp.proc.pid, signal.SIGKILL)  # whatever the task left behind in its group
        self.tasks.pop((tp.framework_id, tp.task_id), None)
        for fut in tp.exit_waiters:
            if not fut.done():
                fut.set_result(code)
        if tp.killed:
            self._report(tp, "TASK_KILLED", message=describe_exit(code), reason=tp.kill_reason)
        elif code == 0:
            self._report(tp, "TASK_FINISHED", message=describe_exit(code))
        else:
            self._report(tp, "TASK_FAILED", message=describe_exit(code))

    # ------------------------------------------------------------ killing
    def kill(self, framework_id: str, task_id: str, *, reason: str | None, grace_s: float, killing_state: bool,
             silent: bool) -> None:
        tp = self.tasks.get((framework_id, task_id))
        if tp is None:
            return
        tp.silent = tp.silent or silent
        if tp.killed:
            return
        tp.killed = True
        tp.kill_reason = reason
        if tp.proc is None:  # still being started: it is SIGKILLed as soon as it exists
            return
        if killing_state:
            self._report(tp, "TASK_KILLING", reason=reason)
        _killpg(tp.proc.pid, signal.SIGTERM)
        tp.kill_timer = asyncio.get_running_loop().call_later(max(0.0, grace_s), _killpg, tp.proc.pid, signal.SIGKILL)

    def die(self) -> list[int]:
        """The agent dies: every task's process group is SIGKILLed at once and nothing more is reported."""
        self.alive = False
        pids = []
        for tp in list(self.tasks.values()):
            tp.silent = True
            if tp.proc is not None:  # (those still being started are SIGKILLed once they exist)
                pids.append(tp.proc.pid)
                _killpg(tp.proc.pid, signal.SIGKILL)
        return pids

    async def wait_all(self, timeout: float) -> None:
        """Wait until every process of this agent has been reaped (bounded)."""
        loop = asyncio.get_running_loop()
        spawning = [tp.spawning for tp in self.tasks.values() if tp.spawning is not None]
        if spawning:
            await asyncio.wait(spawning, timeout=timeout)
            await asyncio.sleep(0)  # let their done-callbacks run
        futs = []
        for tp in self.tasks.values():
            fut = loop.create_future()
            tp.exit_waiters.append(fut)
            futs.append(fut)
        if futs:
            await asyncio.wait(futs, timeout=timeout)
        for tp in list(self.tasks.values()):  # still there: reap synchronously, they were SIGKILLed
            if tp.proc is not None and tp.proc.poll() is None:
                try:
                    tp.proc.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    log.warning("task %s (pid %d) did not die", tp.task_id, tp.proc.pid)

    def pids(self) -> list[int]:
        return [tp.proc.pid for tp in self.tasks.values() if tp.proc is not None]
