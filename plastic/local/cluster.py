"""The running local cluster: one asyncio loop holding the master state, the agents' processes,
the subscription streams and the IMDS servers, and carrying out the state machine's effects.

Time: the state machine keeps every deadline in one heap; the cluster's EffectLoop
(plastic.local.effect_loop) arms a single loop timer for the earliest one and calls
`state.advance()` when it fires.  Offers: after anything that frees or changes resources it
runs one allocation pass a couple of milliseconds later, so a burst of task exits becomes one
OFFERS event covering every agent.

Its parts: the agents' processes (plastic.local.agent_processes), their endpoints
(plastic.local.agent_endpoints), the nodes a provider sees (plastic.local.node_pool), and what
the cluster says about itself (plastic.local.cluster_status).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aiohttp import web

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from plastic.local import protocol as P
from plastic.local.agent import MARKER_ENV
from plastic.local.agent_endpoints import bind_socket, serve_agent, serve_imds
from plastic.local.agent_processes import AgentProcesses
from plastic.local.cluster_status import agent_summary, cluster_status
from plastic.local.config import AgentSpec, ClusterSpec
from plastic.local.effect_loop import EffectLoop
from plastic.local.effects import EndStream, KillAgent, Send
from plastic.local.instance_metadata import InstanceMetadata
from plastic.local.node_pool import NodePool
from plastic.local.nodes import new_instance_id
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


class RunningCluster:
    """Master + agents in one process."""

    def __init__(self, spec: ClusterSpec, options: Options):
        self.spec = spec
        self.options = options
        self.cluster_id = uuid.uuid4().hex[:12]
        self.state: MasterState | None = None
        self.effects: EffectLoop | None = None  # with the state, at start()
        self.processes = AgentProcesses(options.host, options.launcher_threads)
        self.imds: dict[str, tuple[web.AppRunner, str]] = {}
        self.agent_runners: list[web.AppRunner] = []
        self.streams: dict[str, Stream] = {}
        self.runner: web.AppRunner | None = None
        self._base_env: dict[str, str] = {}
        self.port = options.port
        self.stopped = asyncio.Event()
        self.shutdown_requested = asyncio.Event()
        self._background: set[asyncio.Task] = set()
        self.node_pool = NodePool(options.boot_s, options.refuse_spot)  # every agent ever, as a provider's node

    @property
    def master_url(self) -> str:
        return f"http://{self.options.host}:{self.port}"

    @property
    def sandboxes(self) -> dict[tuple[str, str], str]:
        """(framework id, task id) -> the sandbox of each of the latest tasks."""
        return self.processes.sandboxes

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
        self.effects = EffectLoop(self.state, self._do, opts.allocation_delay_s)
        self._base_env = dict(os.environ)
        self._base_env[MARKER_ENV] = self.cluster_id
        for spec in self.spec.agents:
            await self.add_agent(spec)
        for node in self.node_pool.nodes.values():
            node.state_since = now
        self.runner = web.AppRunner(make_app(self), handler_cancellation=True, access_log=None,
                                    shutdown_timeout=1.0)
        await self.runner.setup()
        await web.SockSite(self.runner, sock).start()
        self.effects.rearm()
        log.info("local master at %s with %d agents", self.master_url, len(self.processes.runtimes))

    async def add_agent(self, spec: AgentSpec, *, agent_id: str | None = None, instance_id: str | None = None) -> str:
        """Register one more agent (at start, replacing an interrupted one, or a node created while the
        cluster runs, under the id reserved for it)."""
        assert self.state is not None and self.options.workdir is not None
        if spec.preemptible or instance_id:  # an EC2-like instance id, advertised as the attribute instance_id
            instance_id = instance_id or new_instance_id()
            spec = replace(spec, attributes=(*(a for a in spec.attributes if a[0] != "instance_id"),
                                             ("instance_id", instance_id)))
        agent_sock = bind_socket(self.options.host, 0)
        port = agent_sock.getsockname()[1]
        agent_id = self.state.add_agent(spec, port=port, now=time.time(), agent_id=agent_id)
        self.node_pool.registered(agent_id, spec, instance_id)
        executors = self.processes.add(agent_id, port, self.options.workdir, self._base_env, self._on_status,
                                       self._agent_info, self._on_executor_exit)
        self.agent_runners.append(await serve_agent(agent_sock, lambda: self.agent_summary(agent_id),
                                                    executors.handle))
        if instance_id is not None:
            await self._serve_imds(agent_id, instance_id)
        return agent_id

    # ================================================================ nodes created and terminated while running
    def create_agents(self, body: Any) -> list[dict[str, Any]]:
        """Agents asked for (POST /plastic/v1/agents): their ids at once, registered after the boot delay.
        Raises RequestError for a wrong body, CapacityRefused for an emulated spot shortage."""
        assert self.state is not None
        request, created = self.node_pool.create(body, self.state.reserve_agent_id, time.time())
        out = []
        for node in created:
            self._spawn(self._boot(node.agent_id, request.boot_s))
            out.append({"agent_id": node.agent_id, "instance_id": node.instance_id, "state": "pending"})
        log.info("%d %s agent(s) asked for in %s (%s); booting for %.1f s", len(out), request.market,
                 request.specs[0].cluster, ", ".join(a["agent_id"] for a in out), request.boot_s)
        return out

    async def _boot(self, agent_id: str, boot_s: float) -> None:
        await asyncio.sleep(boot_s)
        node = self.node_pool.nodes[agent_id]
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
        node = self.node_pool.nodes.get(agent_id)
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
        return self.node_pool.docs(self.state.agents, {a: url for a, (_, url) in self.imds.items()})

    async def _replace(self, spec: AgentSpec, delay: float) -> None:
        await asyncio.sleep(delay)
        if not self.shutdown_requested.is_set():
            agent_id = await self.add_agent(spec)
            log.info("agent %s joined in place of a lost %s agent", agent_id, spec.cluster)
            self.apply([])  # offer it

    async def _serve_imds(self, agent_id: str, instance_id: str) -> None:
        assert self.state is not None
        agent = self.state.agents[agent_id]
        meta = InstanceMetadata(instance_id, agent.spec.instance_type or "local.preemptible",
                                lambda: (agent.notice_time, agent.rebalance_time))
        runner, url = await serve_imds(self.options.host, meta)
        self.imds[agent_id] = (runner, url)
        agent.imds_url = url
        agent.instance_id = meta.instance_id  # type: ignore[attr-defined]

    def request_shutdown(self) -> None:
        self.shutdown_requested.set()

    async def stop(self) -> None:
        """Kill every task, end every stream, close every server."""
        self.shutdown_requested.set()
        if self.effects is not None:
            self.effects.cancel_timer()
        from plastic.local.supervisor import sweep

        await self.processes.stop()
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
        assert self.effects is not None
        self.effects.apply(effects)

    def _do(self, eff: Any) -> None:
        """Carry out one effect."""
        if isinstance(eff, Send):
            stream = self.streams.get(eff.stream_id)
            if stream is not None and not stream.ended:
                stream.push(frame(eff.event))
        elif isinstance(eff, EndStream):
            stream = self.streams.get(eff.stream_id)
            if stream is not None and not stream.ended:
                stream.ended = True
                stream.push(None)
        elif isinstance(eff, KillAgent):
            self.kill_agent(eff.agent_id, eff.cause)
        else:  # the agents' processes: Launch, Kill, LaunchExecutor, ToExecutor
            self.processes.carry_out(eff)

    def restart_agent(self, agent_id: str, down_s: float) -> bool:
        """The agent's process restarts (plastic.local.executor_host.ExecutorHost.restart); False if it is dead."""
        assert self.state is not None
        agent = self.state.agents.get(agent_id)
        if agent is None or not agent.connected:
            return False
        self.processes.executor_hosts[agent_id].restart(down_s)
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

    # ================================================================ agent deaths
    def kill_agent(self, agent_id: str, cause: str = "killed") -> list[str]:
        """The agent dies without notice: its process groups are SIGKILLed, its IMDS goes away.  Returns the
        ids of the tasks it was running at that moment."""
        assert self.state is not None
        rt = self.processes.runtimes.get(agent_id)
        if rt is None or not rt.alive:
            return []
        running = sorted(task_id for _, task_id in rt.tasks)
        running += sorted(t for f, t in self.state.agents[agent_id].tasks
                          if self.state.frameworks[f].tasks[t].executor_id and not self.state.frameworks[f].tasks[t].terminal)
        pids = self.processes.die(agent_id)
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
        return agent_summary(self.state, agent_id, self.processes.pids(agent_id))

    def status(self) -> dict[str, Any]:
        assert self.state is not None
        return cluster_status(self.state, [self.agent_summary(a) for a in self.state.agents],
                              master_url=self.master_url, cluster_id=self.cluster_id,
                              workdir=str(self.options.workdir))
