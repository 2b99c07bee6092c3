"""The running local cluster: one asyncio loop holding the master state, the agents' processes,
the subscription streams and the IMDS servers, and carrying out the state machine's effects.

Time: the state machine keeps every deadline in one heap; the cluster arms a
single loop timer for the earliest one and calls `state.advance()` when it
fires.  Offers: after anything that frees or changes resources the cluster
runs one allocation pass a couple of milliseconds later, so a burst of task
exits becomes one OFFERS event covering every agent.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aiohttp import web

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from plastic.local import protocol as P
from plastic.local.agent import MARKER_ENV, AgentRuntime
from plastic.local.config import AgentSpec, ClusterSpec
from plastic.local.effects import (
    EndStream,
    Kill,
    KillAgent,
    Launch,
    LaunchExecutor,
    Send,
    ToExecutor,
)
from plastic.local.executor_host import ExecutorHost
from plastic.local.imds import InstanceMetadata
from plastic.local.nodes import (
    CapacityRefused,
    Node,
    agent_request,
    new_instance_id,
    node_doc,
)
from plastic.local.state import MasterState
from plastic.local.streams import Stream, frame
from plastic.mesos.credential import Credential

log = logging.getLogger(__name__)


@dataclass
class Options:
    host: str = "127.0.0.1"
    port: int = 5050
    heartbeat_s: float = 15.0
    agent_ping_timeout_s: float = 15.0
    update_retry_s: float = 10.0
    interrupt_rate_per_min: float | None = None
    interrupt_notice_s: float = INTERRUPTION_NOTICE_S
    seed: int | None = None
    kill_grace_s: float = 3.0
    allocation_delay_s: float = 0.002
    replace_after_s: float | None = None  # a lost agent is replaced by a new one (new id) after this delay
    boot_s: float = 0.0  # an agent created while the cluster runs registers this long after it is asked for
    refuse_spot: tuple[str, ...] = ()  # instance types ("*": all) whose spot creations are refused (a shortage)
    launcher_threads: int = 0  # >0: fork/exec on a pool of threads (costs more CPU on 2 cores; see agent.py)
    workdir: Path | None = None  # None: the per-user default, keyed by the port actually bound
    credentials: tuple[Credential, ...] = ()  # non-empty: frameworks must authenticate (HTTP basic)


def bind_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(512)
    sock.setblocking(False)
    return sock


class RunningCluster:
    """Master + agents in one process."""

    def __init__(self, spec: ClusterSpec, options: Options):
        self.spec = spec
        self.options = options
        self.cluster_id = uuid.uuid4().hex[:12]
        self.state: MasterState | None = None
        self.agents: dict[str, AgentRuntime] = {}
        self.executor_hosts: dict[str, ExecutorHost] = {}
        self.imds: dict[str, tuple[web.AppRunner, str]] = {}
        self.agent_runners: list[web.AppRunner] = []
        self.streams: dict[str, Stream] = {}
        self.runner: web.AppRunner | None = None
        self._base_env: dict[str, str] = {}
        self._launcher = (ThreadPoolExecutor(max_workers=options.launcher_threads, thread_name_prefix="plastic-launch")
                          if options.launcher_threads > 0 else None)
        self.port = options.port
        self.stopped = asyncio.Event()
        self.shutdown_requested = asyncio.Event()
        self._pending: deque = deque()
        self._applying = False
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._alloc_scheduled = False
        self._background: set[asyncio.Task] = set()
        self.sandboxes: dict[tuple[str, str], str] = {}
        self.nodes: dict[str, Node] = {}  # every agent ever, as a provider's node (plastic.local.nodes)

    @property
    def master_url(self) -> str:
        return f"http://{self.options.host}:{self.port}"

    # ================================================================ start / stop
    async def start(self) -> None:
        from plastic.local.master import make_app
        from plastic.local.supervisor import default_workdir

        opts = self.options
        sock = bind_socket(opts.host, opts.port)
        self.port = sock.getsockname()[1]
        if opts.workdir is None:
            opts.workdir = default_workdir(self.port)
        opts.workdir.mkdir(parents=True, exist_ok=True)
        import random

        rng = random.Random(opts.seed) if opts.seed is not None else random.Random()
        now = time.time()
        master_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.state = MasterState(master_id=master_id, host=opts.host, port=self.port, heartbeat_s=opts.heartbeat_s,
                                 agent_ping_timeout_s=opts.agent_ping_timeout_s, update_retry_s=opts.update_retry_s,
                                 interrupt_rate_per_min=opts.interrupt_rate_per_min,
                                 interrupt_notice_s=opts.interrupt_notice_s, kill_grace_s=opts.kill_grace_s,
                                 rng=rng, now=now)
        self._base_env = dict(os.environ)
        self._base_env[MARKER_ENV] = self.cluster_id
        for spec in self.spec.agents:
            await self.add_agent(spec)
        for agent_id, node in self.nodes.items():
            node.state_since = now
        self.runner = web.AppRunner(make_app(self), handler_cancellation=True, access_log=None,
                                    shutdown_timeout=1.0)
        await self.runner.setup()
        await web.SockSite(self.runner, sock).start()
        self._rearm()
        log.info("local master at %s with %d agents", self.master_url, len(self.agents))

    async def add_agent(self, spec: AgentSpec, *, agent_id: str | None = None, instance_id: str | None = None) -> str:
        """Register one more agent (at start, replacing an interrupted one, or a node created while the
        cluster runs, under the id reserved for it)."""
        assert self.state is not None and self.options.workdir is not None
        if spec.preemptible or instance_id:  # an EC2-like instance id, advertised as the attribute instance_id
            instance_id = instance_id or new_instance_id()
            spec = replace(spec, attributes=(*(a for a in spec.attributes if a[0] != "instance_id"),
                                             ("instance_id", instance_id)))
        agent_sock = bind_socket(self.options.host, 0)
        agent_id = self.state.add_agent(spec, port=agent_sock.getsockname()[1], now=time.time(), agent_id=agent_id)
        if agent_id not in self.nodes:
            market = "spot" if spec.preemptible else "on-demand"
            self.nodes[agent_id] = Node(agent_id, spec, time.time(), instance_id, market=market,
                                        state_since=time.time())
        self.agents[agent_id] = AgentRuntime(agent_id, self.options.workdir, self._on_status, base_env=self._base_env,
                                             launcher=self._launcher)
        self.executor_hosts[agent_id] = ExecutorHost(
            agent_id, self.options.host, agent_sock.getsockname()[1], self.options.workdir, self._base_env,
            lambda: self._agent_info(agent_id),
            lambda fid, tid, st: self._on_status(agent_id, fid, tid, st),
            lambda fid, eid, code: self._on_executor_exit(agent_id, fid, eid, code))
        await self._serve_agent(agent_id, agent_sock)
        if instance_id is not None:
            await self._serve_imds(agent_id, instance_id)
        return agent_id

    # ================================================================ nodes created and terminated while running
    def create_agents(self, body: Any) -> list[dict[str, Any]]:
        """Agents asked for (POST /plastic/v1/agents): their ids at once, registered after the boot delay.
        Raises RequestError for a wrong body, CapacityRefused for an emulated spot shortage."""
        assert self.state is not None
        request = agent_request(body, self.options.boot_s)
        itype = request.specs[0].instance_type or "*"
        if request.market == "spot" and ("*" in self.options.refuse_spot or itype in self.options.refuse_spot):
            raise CapacityRefused(f"InsufficientInstanceCapacity: no spot capacity for {itype} (emulated)")
        now = time.time()
        out = []
        for n, spec in enumerate(request.specs):
            agent_id = self.state.reserve_agent_id()
            instance_id = request.instance_ids[n] if request.instance_ids else new_instance_id()
            self.nodes[agent_id] = Node(agent_id, spec, now, instance_id, dict(request.tags), request.market,
                                        booted=False, state_since=now)
            self._spawn(self._boot(agent_id, request.boot_s))
            out.append({"agent_id": agent_id, "instance_id": instance_id, "state": "pending"})
        log.info("%d %s agent(s) asked for in %s (%s); booting for %.1f s", len(out), request.market,
                 request.specs[0].cluster, ", ".join(a["agent_id"] for a in out), request.boot_s)
        return out

    async def _boot(self, agent_id: str, boot_s: float) -> None:
        await asyncio.sleep(boot_s)
        node = self.nodes[agent_id]
        if node.terminated_at is not None or self.shutdown_requested.is_set():
            return
        spec = node.spec  # a spot agent gets its random interruptions (--interrupt-rate) when it registers
        await self.add_agent(spec, agent_id=agent_id, instance_id=node.instance_id)
        node.booted = True
        node.state_since = time.time()
        log.info("agent %s (%s, %s) registered after booting", agent_id, spec.cluster, node.market)
        self.apply([])  # offer it

    def terminate_agent(self, agent_id: str) -> bool:
        """Terminate a node (DELETE /plastic/v1/agents/ID): it goes away like a terminated instance.
        False when no such node exists; terminating a gone one again is harmless."""
        node = self.nodes.get(agent_id)
        if node is None:
            return False
        if node.terminated_at is None:
            node.terminated_at = time.time()
            if node.booted:
                self.kill_agent(agent_id, "terminated")
            log.info("agent %s terminated", agent_id)
        return True

    def node_list(self) -> list[dict[str, Any]]:
        assert self.state is not None
        return [node_doc(n, self.state.agents.get(a), self.imds.get(a, (None, None))[1] if a in self.imds
                         else getattr(self.state.agents.get(a), "imds_url", None))
                for a, n in sorted(self.nodes.items(), key=lambda kv: kv[1].created_at)]

    async def _replace(self, spec: AgentSpec, delay: float) -> None:
        await asyncio.sleep(delay)
        if not self.shutdown_requested.is_set():
            agent_id = await self.add_agent(spec)
            log.info("agent %s joined in place of a lost %s agent", agent_id, spec.cluster)
            self.apply([])  # offer it

    async def _serve_agent(self, agent_id: str, sock: socket.socket) -> None:
        """A minimal agent endpoint (health and state) so the port in offers answers."""
        app = web.Application()

        async def health(_request: web.Request) -> web.Response:
            return web.Response(status=200)

        async def state(_request: web.Request) -> web.Response:
            return web.json_response(self.agent_summary(agent_id))

        app.router.add_get("/health", health)
        app.router.add_get("/state", state)
        app.router.add_route("*", "/api/v1/executor", self.executor_hosts[agent_id].handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        self.agent_runners.append(runner)

    async def _serve_imds(self, agent_id: str, instance_id: str) -> None:
        assert self.state is not None
        agent = self.state.agents[agent_id]
        meta = InstanceMetadata(instance_id, agent.spec.instance_type or "local.preemptible",
                                lambda: (agent.notice_time, agent.rebalance_time))
        runner = web.AppRunner(meta.app(), access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        sock = bind_socket(self.options.host, 0)
        url = f"http://{self.options.host}:{sock.getsockname()[1]}"
        await web.SockSite(runner, sock).start()
        self.imds[agent_id] = (runner, url)
        agent.imds_url = url
        agent.instance_id = meta.instance_id  # type: ignore[attr-defined]

    def request_shutdown(self) -> None:
        self.shutdown_requested.set()

    async def stop(self) -> None:
        """Kill every task, end every stream, close every server."""
        self.shutdown_requested.set()
        if self._timer is not None:
            self._timer.cancel()
        from plastic.local.supervisor import sweep

        for rt in self.agents.values():
            rt.die()
        for host in self.executor_hosts.values():
            host.die()
        await asyncio.gather(*(rt.wait_all(timeout=5.0) for rt in self.agents.values()))
        for rt in self.agents.values():
            rt.close()
        for host in self.executor_hosts.values():
            host.close()
        if self._launcher is not None:
            self._launcher.shutdown(wait=True)
        sweep(self.cluster_id)
        for stream in list(self.streams.values()):
            stream.push(None)
        await asyncio.sleep(0)
        for runner, _ in self.imds.values():
            await runner.cleanup()
        self.imds.clear()
        for runner in self.agent_runners:
            await runner.cleanup()
        if self.runner is not None:
            await self.runner.cleanup()
        for t in list(self._background):
            t.cancel()
        self.stopped.set()

    # ================================================================ effects
    def apply(self, effects: list) -> None:
        """Carry out effects in order; effects produced meanwhile (agent callbacks) queue behind."""
        self._pending.extend(effects)
        if self._applying:
            return
        self._applying = True
        try:
            while self._pending:
                self._do(self._pending.popleft())
        finally:
            self._applying = False
        self._rearm()
        assert self.state is not None
        if self.state.needs_allocation and not self._alloc_scheduled:
            self._alloc_scheduled = True
            asyncio.get_running_loop().call_later(self.options.allocation_delay_s, self._allocate)

    def _do(self, eff: Any) -> None:
        if isinstance(eff, Send):
            stream = self.streams.get(eff.stream_id)
            if stream is not None and not stream.ended:
                stream.push(frame(eff.event))
        elif isinstance(eff, EndStream):
            stream = self.streams.get(eff.stream_id)
            if stream is not None and not stream.ended:
                stream.ended = True
                stream.push(None)
        elif isinstance(eff, Launch):
            rt = self.agents[eff.agent_id]
            sandbox = rt.launch(eff.framework_id, eff.task_id, eff.task_info, eff.container_id)
            if sandbox is not None:
                self.sandboxes[(eff.framework_id, eff.task_id)] = str(sandbox)
                while len(self.sandboxes) > 20000:
                    del self.sandboxes[next(iter(self.sandboxes))]
        elif isinstance(eff, Kill):
            self.agents[eff.agent_id].kill(eff.framework_id, eff.task_id, reason=eff.reason, grace_s=eff.grace_s,
                                           killing_state=eff.killing_state, silent=eff.silent)
        elif isinstance(eff, KillAgent):
            self.kill_agent(eff.agent_id, eff.cause)
        elif isinstance(eff, LaunchExecutor):
            self.executor_hosts[eff.agent_id].launch(eff.framework_id, eff.executor_id, eff.executor_info,
                                                     eff.container_id, eff.framework_info)
        elif isinstance(eff, ToExecutor):
            self.executor_hosts[eff.agent_id].send(eff.framework_id, eff.executor_id, eff.event)

    def restart_agent(self, agent_id: str, down_s: float) -> bool:
        """The agent's process restarts (plastic.local.executor_host.ExecutorHost.restart); False if it is dead."""
        assert self.state is not None
        agent = self.state.agents.get(agent_id)
        if agent is None or not agent.connected:
            return False
        self.executor_hosts[agent_id].restart(down_s)
        log.info("agent %s restarts: back in %.1f s", agent_id, down_s)
        return True

    def _on_executor_exit(self, agent_id: str, framework_id: str, executor_id: str, code: int | None) -> None:
        assert self.state is not None
        self.apply(self.state.executor_exited(agent_id, framework_id, executor_id, code, time.time()))

    def _agent_info(self, agent_id: str) -> dict[str, Any]:
        assert self.state is not None
        a = self.state.agents[agent_id]
        return {"id": {"value": a.id}, "hostname": self.options.host, "port": a.port,
                "resources": a.total.to_json(role=False),
                "attributes": P.attributes_json(a.spec.all_attributes())}

    def _on_status(self, agent_id: str, framework_id: str, task_id: str, st: dict[str, Any]) -> None:
        assert self.state is not None
        self.apply(self.state.task_status(agent_id, framework_id, task_id, st, time.time()))

    def _allocate(self) -> None:
        self._alloc_scheduled = False
        assert self.state is not None
        self.apply(self.state.allocate(time.time()))

    def _rearm(self) -> None:
        assert self.state is not None
        deadline = self.state.next_deadline()
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = None
        if deadline is not None:
            delay = max(0.0, deadline - time.time())
            self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def _fire(self) -> None:
        assert self.state is not None
        self._timer = None
        self._timer_at = None
        self.apply(self.state.advance(time.time()))

    # ================================================================ agent deaths
    def kill_agent(self, agent_id: str, cause: str = "killed") -> list[str]:
        """The agent dies without notice: its process groups are SIGKILLed, its IMDS goes away.  Returns the
        ids of the tasks it was running at that moment."""
        assert self.state is not None
        rt = self.agents.get(agent_id)
        if rt is None or not rt.alive:
            return []
        running = sorted(task_id for _, task_id in rt.tasks)
        running += sorted(t for f, t in self.state.agents[agent_id].tasks
                          if self.state.frameworks[f].tasks[t].executor_id and not self.state.frameworks[f].tasks[t].terminal)
        pids = rt.die() + self.executor_hosts[agent_id].die()
        from plastic.local.supervisor import sweep

        strays = sweep(self.cluster_id, agent_id)
        log.info("agent %s died (%s); killed %d task(s) and %d stray process(es)", agent_id, cause, len(pids),
                 strays)
        entry = self.imds.pop(agent_id, None)
        if entry is not None:
            self._spawn(entry[0].cleanup())
        self.apply(self.state.agent_lost(agent_id, time.time(), cause))
        if self.options.replace_after_s is not None and cause != "terminated":
            self._spawn(self._replace(self.state.agents[agent_id].spec, self.options.replace_after_s))
        return running

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ================================================================ views
    def agent_summary(self, agent_id: str) -> dict[str, Any]:
        assert self.state is not None
        a = self.state.agents[agent_id]
        status = "removed" if a.removed else "dead" if not a.connected else (
            ("draining" if a.drain["state"] == "DRAINING" else "drained") if a.drain else
            "deactivated" if a.deactivated else "active")
        free = (a.total - a.used).ordered_like(a.total)
        return {
            "id": a.id, "cluster": a.spec.cluster, "instance_type": a.spec.instance_type,
            "preemptible": a.spec.preemptible, "node_id": a.spec.node_id, "status": status,
            "port": a.port, "imds_url": a.imds_url, "instance_id": getattr(a, "instance_id", None),
            "attributes": {k: v for k, v in a.spec.all_attributes()},
            "resources": {"total": a.total.summary(), "used": a.used.summary(), "offered": a.offered.summary(),
                          "free": free.summary()},
            "tasks": sum(1 for f, t in a.tasks if not self.state.frameworks[f].tasks[t].terminal),
            "interruption": {
                "notice_time": a.notice_time, "rebalance_time": a.rebalance_time,
                "died_at": a.died_at, "death_cause": a.death_cause,
            },
            "pids": self.agents[agent_id].pids() + self.executor_hosts[agent_id].pids(),
        }

    def status(self) -> dict[str, Any]:
        assert self.state is not None
        st = self.state
        frameworks = []
        counts: dict[str, int] = {}
        for fw in list(st.frameworks.values()):
            for t in fw.tasks.values():
                counts[t.state] = counts.get(t.state, 0) + 1
            frameworks.append({"id": fw.id, "name": fw.info.get("name"), "connected": fw.connected,
                               "suppressed": fw.suppressed, "active_tasks": len(fw.tasks),
                               "unreachable_tasks": len(fw.unreachable), "offers": len(fw.offers),
                               "capabilities": sorted(c for c in fw.capabilities if c)})
        return {
            "master_url": self.master_url, "master_id": st.master_id, "pid": os.getpid(),
            "cluster_id": self.cluster_id, "workdir": str(self.options.workdir),
            "heartbeat_seconds": st.heartbeat_s, "agent_ping_timeout_seconds": st.agent_ping_timeout_s,
            "interrupt_rate_per_min": st.interrupt_rate_per_min,
            "agents": [self.agent_summary(a) for a in st.agents],
            "frameworks": frameworks,
            "completed_frameworks": [{"id": f.id, "name": f.info.get("name")} for f in st.completed_frameworks.values()],
            "task_states": counts, "tasks_launched": st.launched,
            "interruptions": [{"agent_id": a.id, "notice_time": a.notice_time, "rebalance_time": a.rebalance_time}
                              for a in st.agents.values() if a.notice_time or a.rebalance_time],
        }
