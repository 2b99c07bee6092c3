"""The agents' processes on this machine: per agent, its command tasks (plastic.local.agent.AgentRuntime)
and its executors (plastic.local.executor_host.ExecutorHost), started and signalled as the master's
effects ask, and killed with their agent.  The sandboxes of the latest tasks are kept for the
operator's sandbox lookups."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from plastic.local.agent import AgentRuntime, StatusCallback
from plastic.local.effects import Kill, Launch, LaunchExecutor, ToExecutor
from plastic.local.executor_host import ExecutorHost

MAX_SANDBOXES = 20000


class AgentProcesses:
    """Every agent's task runtime and executor host, by agent id."""

    def __init__(self, host: str, launcher_threads: int):
        self.host = host
        self.runtimes: dict[str, AgentRuntime] = {}
        self.executor_hosts: dict[str, ExecutorHost] = {}
        self.sandboxes: dict[tuple[str, str], str] = {}  # (framework id, task id) -> sandbox, the latest tasks'
        self._launcher = (ThreadPoolExecutor(max_workers=launcher_threads, thread_name_prefix="plastic-launch")
                          if launcher_threads > 0 else None)

    def add(self, agent_id: str, port: int, workdir: Path, base_env: dict[str, str],
            on_status: StatusCallback, agent_info: Callable[[str], dict[str, Any]],
            on_executor_exit: Callable[[str, str, str, int | None], None]) -> ExecutorHost:
        """The new agent's runtime and executor host (whose executor API the agent's port serves)."""
        self.runtimes[agent_id] = AgentRuntime(agent_id, workdir, on_status, base_env=base_env,
                                               launcher=self._launcher)
        self.executor_hosts[agent_id] = ExecutorHost(
            agent_id, self.host, port, workdir, base_env,
            lambda: agent_info(agent_id),
            lambda fid, tid, st: on_status(agent_id, fid, tid, st),
            lambda fid, eid, code: on_executor_exit(agent_id, fid, eid, code))
        return self.executor_hosts[agent_id]

    def carry_out(self, eff: Any) -> None:
        """Launch, Kill, LaunchExecutor, ToExecutor on the agent they name."""
        if isinstance(eff, Launch):
            rt = self.runtimes[eff.agent_id]
            sandbox = rt.launch(eff.framework_id, eff.task_id, eff.task_info, eff.container_id)
            if sandbox is not None:
                self.sandboxes[(eff.framework_id, eff.task_id)] = str(sandbox)
                while len(self.sandboxes) > MAX_SANDBOXES:
                    del self.sandboxes[next(iter(self.sandboxes))]
        elif isinstance(eff, Kill):
            self.runtimes[eff.agent_id].kill(eff.framework_id, eff.task_id, reason=eff.reason, grace_s=eff.grace_s,
                                             killing_state=eff.killing_state, silent=eff.silent)
        elif isinstance(eff, LaunchExecutor):
            self.executor_hosts[eff.agent_id].launch(eff.framework_id, eff.executor_id, eff.executor_info,
                                                     eff.container_id, eff.framework_info)
        elif isinstance(eff, ToExecutor):
            self.executor_hosts[eff.agent_id].send(eff.framework_id, eff.executor_id, eff.event)

    def die(self, agent_id: str) -> list[int]:
        """SIGKILL the agent's tasks and executors: their pids."""
        return self.runtimes[agent_id].die() + self.executor_hosts[agent_id].die()

    def pids(self, agent_id: str) -> list[int]:
        return self.runtimes[agent_id].pids() + self.executor_hosts[agent_id].pids()

    async def stop(self) -> None:
        """Kill every agent's processes, wait for them (5 s at most), close the runtimes and the launcher."""
        for rt in self.runtimes.values():
            rt.die()
        for host in self.executor_hosts.values():
            host.die()
        await asyncio.gather(*(rt.wait_all(timeout=5.0) for rt in self.runtimes.values()))
        for rt in self.runtimes.values():
            rt.close()
        for host in self.executor_hosts.values():
            host.close()
        if self._launcher is not None:
            self._launcher.shutdown(wait=True)
