"""An agent's side of the Mesos v1 executor API: it starts executors and serves /api/v1/executor.

As a Mesos 1.11 agent does: an executor is started with the environment agents give executors
(MESOS_AGENT_ENDPOINT, MESOS_FRAMEWORK_ID, MESOS_EXECUTOR_ID, MESOS_DIRECTORY, MESOS_CHECKPOINT,
MESOS_RECOVERY_TIMEOUT, ...) in a sandbox of its own, in a process group of its own; it SUBSCRIBEs and
gets SUBSCRIBED, then the LAUNCH, KILL, ACKNOWLEDGED and SHUTDOWN events held for it; its UPDATEs are
answered 202 and go to the master's status handling.  Calls are checked as the agent checks them
(plastic.local.executor_calls) with the same answers.  The bookkeeping (which tasks an executor has,
its resources, what its end means) is the master state's (plastic.local.executors).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from plastic.local.executor_calls import ExecutorCallError, check_executor_call
from plastic.local.streams import Stream, frame
from plastic.procs import killpg_quietly, shell_argv, spawn_in_session

log = logging.getLogger(__name__)

UpdateCallback = Callable[[str, str, dict[str, Any]], None]  # framework id, task id, status
ExitCallback = Callable[[str, str, int | None], None]  # framework id, executor id, exit status


@dataclass
class RunningExecutor:
    framework_id: str
    executor_id: str
    info: dict[str, Any]
    framework_info: dict[str, Any]
    container_id: str
    sandbox: Path
    pid: int | None = None
    pidfd: int | None = None
    stream: Stream | None = None
    held: list[dict[str, Any]] = field(default_factory=list)  # events before it subscribed
    shutdown_timer: asyncio.TimerHandle | None = None


class ExecutorHost:
    """The executors of one agent."""

    def __init__(self, agent_id: str, host: str, port: int, workdir: Path, base_env: dict[str, str],
                 agent_info: Callable[[], dict[str, Any]], on_update: UpdateCallback, on_exit: ExitCallback,
                 *, shutdown_grace_s: float = 5.0):
        self.agent_id = agent_id
        self.endpoint = f"{host}:{port}"
        self.workdir = workdir
        self.base_env = base_env
        self.agent_info = agent_info
        self.on_update = on_update
        self.on_exit = on_exit
        self.shutdown_grace_s = shutdown_grace_s
        self.executors: dict[tuple[str, str], RunningExecutor] = {}
        self.alive = True
        self.recovering_until = 0.0  # an agent restart: calls are refused (503) until then
        self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    # ------------------------------------------------------------ the master's effects

    def launch(self, framework_id: str, executor_id: str, info: dict[str, Any], container_id: str,
               framework_info: dict[str, Any]) -> None:
        if not self.alive:
            return
        sandbox = (self.workdir / "agents" / self.agent_id / "frameworks" / framework_id / "executors" / executor_id
                   / "runs" / container_id)
        ex = RunningExecutor(framework_id, executor_id, info, framework_info, container_id, sandbox)
        self.executors[(framework_id, executor_id)] = ex
        command = info.get("command") or {}
        env = dict(self.base_env)
        env.update({
            "MESOS_AGENT_ENDPOINT": self.endpoint, "MESOS_FRAMEWORK_ID": framework_id,
            "MESOS_EXECUTOR_ID": executor_id, "MESOS_DIRECTORY": str(sandbox), "MESOS_SANDBOX": str(sandbox),
            "MESOS_SLAVE_ID": self.agent_id, "MESOS_AGENT_ID": self.agent_id,
            "MESOS_CHECKPOINT": "1" if framework_info.get("checkpoint") else "0",
            "MESOS_RECOVERY_TIMEOUT": "15mins", "MESOS_SUBSCRIPTION_BACKOFF_MAX": "2secs",
            "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD": f"{self.shutdown_grace_s:g}secs",
            "MESOS_CONTAINER_ID": container_id,
        })
        for var in (command.get("environment") or {}).get("variables") or []:
            if isinstance(var, dict) and isinstance(var.get("name"), str):
                env[var["name"]] = str(var.get("value", ""))
        argv, executable = shell_argv(command)
        try:
            sandbox.mkdir(parents=True, exist_ok=True)
            proc = spawn_in_session(sandbox, argv, executable, env, self._devnull, make_directory=False)
        except OSError as exc:
            log.warning("executor %s could not start: %s", executor_id, exc)
            asyncio.get_running_loop().call_soon(self._ended, ex, None)
            return
        proc.returncode = 0  # reaped here, by pid
        ex.pid = proc.pid
        loop = asyncio.get_running_loop()
        try:
            ex.pidfd = os.pidfd_open(proc.pid)
            loop.add_reader(ex.pidfd, self._reap, ex)
        except OSError:
            loop.run_in_executor(None, os.waitpid, proc.pid, 0).add_done_callback(
                lambda f: self._ended(ex, os.waitstatus_to_exitcode(f.result()[1])))

    def send(self, framework_id: str, executor_id: str, event: dict[str, Any]) -> None:
        ex = self.executors.get((framework_id, executor_id))
        if ex is None or not self.alive:
            return
        if event.get("type") == "SHUTDOWN" and ex.pid is not None and ex.shutdown_timer is None:
            ex.shutdown_timer = asyncio.get_running_loop().call_later(
                self.shutdown_grace_s, killpg_quietly, ex.pid, signal.SIGKILL)
        if ex.stream is not None and not ex.stream.ended:
            ex.stream.push(frame(event))
        else:
            ex.held.append(event)

    def restart(self, down_s: float) -> None:
        """The agent's process restarts: executors lose their streams (events for them are held) and their
        calls are refused until it is back, when they re-subscribe; the executors and tasks live on."""
        self.recovering_until = time.monotonic() + down_s
        for ex in self.executors.values():
            if ex.stream is not None and not ex.stream.ended:
                ex.stream.push(None)
                ex.stream.ended = True  # what comes meanwhile is held for the next subscription

    def die(self) -> list[int]:
        """The agent's machine dies: every executor's group is SIGKILLed (their tasks are swept by marker)."""
        self.alive = False
        pids = [ex.pid for ex in self.executors.values() if ex.pid is not None]
        for pid in pids:
            killpg_quietly(pid, signal.SIGKILL)
        return pids

    def pids(self) -> list[int]:
        return [ex.pid for ex in self.executors.values() if ex.pid is not None]

    def close(self) -> None:
        if self._devnull >= 0:
            os.close(self._devnull)
            self._devnull = -1

    # ------------------------------------------------------------ processes

    def _reap(self, ex: RunningExecutor) -> None:
        assert ex.pid is not None
        try:
            pid, status = os.waitpid(ex.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = ex.pid, 0
        if pid == 0:
            return
        self._ended(ex, os.waitstatus_to_exitcode(status))

    def _ended(self, ex: RunningExecutor, code: int | None) -> None:
        if ex.pidfd is not None:
            asyncio.get_running_loop().remove_reader(ex.pidfd)
            os.close(ex.pidfd)
            ex.pidfd = None
        if ex.shutdown_timer is not None:
            ex.shutdown_timer.cancel()
        if ex.pid is not None:
            killpg_quietly(ex.pid, signal.SIGKILL)
        if ex.stream is not None and not ex.stream.ended:
            ex.stream.push(None)
        if self.executors.get((ex.framework_id, ex.executor_id)) is ex:
            del self.executors[(ex.framework_id, ex.executor_id)]
        log.info("executor %s of %s on %s ended (%s)", ex.executor_id, ex.framework_id, self.agent_id, code)
        if self.alive:
            self.on_exit(ex.framework_id, ex.executor_id, code)

    # ------------------------------------------------------------ /api/v1/executor

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            if time.monotonic() < self.recovering_until:
                raise ExecutorCallError(503, "Agent has not finished recovery")
            call = check_executor_call(request.method, request.headers.getall("Content-Type", []),
                                       request.headers.getall("Accept", []), await request.read())
            ex = self.executors.get((call["framework_id"]["value"], call["executor_id"]["value"]))
            if not any(f == call["framework_id"]["value"] for f, _ in self.executors):
                raise ExecutorCallError(400, "Framework cannot be found")
            if ex is None:
                raise ExecutorCallError(400, "Executor cannot be found")
            if call["type"] == "SUBSCRIBE":
                return await self._subscribe(request, ex, call.get("subscribe") or {})
            if ex.stream is None:
                raise ExecutorCallError(403, "Executor is not subscribed")
            if call["type"] == "UPDATE":
                status = dict(call["update"]["status"], agent_id={"value": self.agent_id})
                self.on_update(ex.framework_id, status["task_id"]["value"], status)
            return web.Response(status=202)
        except ExecutorCallError as err:
            return web.Response(status=err.status, text=err.message,
                                headers={"Allow": "POST"} if err.status == 405 else None)

    async def _subscribe(self, request: web.Request, ex: RunningExecutor,
                         subscribe: dict[str, Any]) -> web.StreamResponse:
        if ex.stream is not None and not ex.stream.ended:
            ex.stream.push(None)  # a second subscription replaces the first
        stream = Stream(f"{ex.executor_id}-{ex.container_id}")
        ex.stream = stream
        for update in subscribe.get("unacknowledged_updates") or []:
            status = dict((update or {}).get("status") or {}, agent_id={"value": self.agent_id})
            if status.get("task_id"):
                self.on_update(ex.framework_id, status["task_id"]["value"], status)
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        stream.push(frame({"type": "SUBSCRIBED", "subscribed": {
            "executor_info": ex.info, "framework_info": ex.framework_info, "agent_info": self.agent_info(),
            "container_id": {"value": ex.container_id}}}))
        held, ex.held = ex.held, []
        for event in held:
            stream.push(frame(event))
        try:
            await stream.pump(resp)
        finally:
            if ex.stream is stream:
                ex.stream = None
        return resp
