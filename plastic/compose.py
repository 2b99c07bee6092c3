"""The docker-compose cluster as data: the whole file (docker-compose.yml) and a plan's agents
(`plastic plan --format compose`, an override file).

Every service uses the host's network (Mesos' libprocess then advertises 127.0.0.1 and traffic
stays on loopback), so each gets its own port: ZooKeeper 2181, the Mesos master 5050, agents from
5051, Redis 6380, a spot agent's instance-metadata emulator on 8781 + the agent's offset from 5051
(agent 5052, emulator 8782).  A spot agent is three services: the Mesos agent under `plastic
spot-run` (it dies at its interruption time, as an instance would; a crashed agent is started again
a second later and its executors keep their tasks), `<agent>-imds` (`plastic imds serve`) and
`<agent>-watch` (`plastic agent-watch`, publishing notices into the cluster's Redis).  One folder of the host, ./compose-runs, is mounted at
/plastic-runs in every container: job stores, run directories and outputs are at the same path
for the manager and the agents, and outputs appear on the host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plastic.local.config import AgentSpec
from plastic.store.urls import URL_ENV

ZK_PORT = 2181
# Mesos' INFO log is a few lines per task, formatted by the master and the agents and carried by Docker's
# log pipeline: on two cores it halved the launch rate (BENCHMARKS.md).  Warnings and errors go to the
# containers' logs and to /var/log/mesos (the web UI's LOG); --logging_level=INFO brings the rest back.
MESOS_LOGGING = ("--logging_level=WARNING", "--log_dir=/var/log/mesos")
MASTER_PORT = 5050
FIRST_AGENT_PORT = 5051
REDIS_PORT = 6380
FIRST_IMDS_PORT = 8781
FIRST_TASK_PORT = 31000
TASK_PORTS_PER_AGENT = 100
RUNS_IN_CONTAINER = "/plastic-runs"
RUNS_ON_HOST = "./compose-runs"
MESOS_IMAGE = "plastic/mesos:1.11"
AGENT_IMAGE = "plastic/agent:latest"
MANAGER_IMAGE = "plastic/manager:latest"
ZOOKEEPER_IMAGE = "plastic/zookeeper:latest"
ZK_URL = f"zk://127.0.0.1:{ZK_PORT}/mesos"
REDIS_PASSWORD = "${PLASTIC_REDIS_PASSWORD:-plastic}"
REDIS_URL = f"redis://:{REDIS_PASSWORD}@127.0.0.1:{REDIS_PORT}/0"
REDIS_PING = f"redis-cli --no-auth-warning -p {REDIS_PORT} -a '{REDIS_PASSWORD}' ping | grep -q PONG"  # a C client: cheap
MASTER_URL = f"http://127.0.0.1:{MASTER_PORT}"
BASE_AGENTS_PROFILE = "example-agents"  # the override puts the example's agents out of the way
# docker-compose.yml's agents (the example plan's clusters, one agent each): name -> spot
EXAMPLE_AGENTS = {"core": False, "burst-large": True, "burst-small": True}


def _build(dockerfile: str, target: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"context": ".", "dockerfile": dockerfile, "network": "host"}
    if target:
        out["target"] = target
    return out


def _health(test: str, *, interval_s: int = 5, retries: int = 30, start_s: int = 10) -> dict[str, Any]:
    return {"test": ["CMD-SHELL", test], "interval": f"{interval_s}s", "timeout": "5s", "retries": retries,
            "start_period": f"{start_s}s"}


def _healthy(*names: str) -> dict[str, Any]:
    return {n: {"condition": "service_healthy"} for n in names}


def instance_id(service: str) -> str:
    """The EC2-like instance id a compose agent advertises (attribute instance_id, and its IMDS)."""
    return f"i-compose-{service}"


def imds_port(agent_port: int) -> int:
    """The port of a spot agent's instance-metadata emulator: agent 505N, emulator 878N."""
    return FIRST_IMDS_PORT + agent_port - FIRST_AGENT_PORT


def agent_services(agents: Sequence[tuple[str, AgentSpec]], *, first: int = 0) -> dict[str, dict[str, Any]]:
    """The services of named agents: the Mesos agent and, for a spot one, its IMDS and watcher."""
    out: dict[str, dict[str, Any]] = {}
    for k, (name, spec) in enumerate(agents, start=first):
        port = FIRST_AGENT_PORT + k
        low = FIRST_TASK_PORT + k * TASK_PORTS_PER_AGENT
        market = "spot" if spec.preemptible else "on-demand"
        attributes = ";".join([f"preemptible:{str(spec.preemptible).lower()}", f"cluster:{spec.cluster}",
                               f"instance_type:{spec.instance_type or 'local'}", f"market:{market}",
                               f"instance_id:{instance_id(name)}"])
        resources = (f"cpus:{spec.cpus:g};mem:{spec.ram_mib:g};disk:{spec.disk_mib:g};"
                     f"ports:[{low}-{low + TASK_PORTS_PER_AGENT - 1}]")
        agent = ["mesos-agent", f"--master={ZK_URL}", "--ip=127.0.0.1", f"--port={port}", "--hostname=127.0.0.1",
                 "--work_dir=/var/lib/mesos/agent", "--runtime_dir=/var/run/mesos/agent",
                 f"--resources={resources}", f"--attributes={attributes}", "--launcher=posix",
                 "--isolation=posix/cpu,posix/mem", "--no-systemd_enable_support", "--containerizers=mesos",
                 "--launcher_dir=/opt/mesos/libexec/mesos", *MESOS_LOGGING]
        service: dict[str, Any] = {
            "image": AGENT_IMAGE, "network_mode": "host", "init": True,
            "volumes": [f"{RUNS_ON_HOST}:{RUNS_IN_CONTAINER}"],
            "depends_on": _healthy("master"),
            # registered with the master (the agent's metrics, 2 KB; its /state grows with every task it ran)
            "healthcheck": _health(f"curl -fsS http://127.0.0.1:{port}/metrics/snapshot"
                                   f" | grep -q '\"slave/registered\":1'"),
            "labels": {"plastic.cluster": spec.cluster, "plastic.market": market,
                       "plastic.instance_type": spec.instance_type or "local"},
        }
        if spec.preemptible:
            imds_url = f"http://127.0.0.1:{imds_port(port)}"
            service["command"] = ["plastic", "spot-run", "--imds", imds_url, "--restart-seconds", "1", "--",
                                  *agent]
            service["depends_on"] = _healthy("master", f"{name}-imds")
            service["restart"] = "no"  # an interrupted spot machine does not come back
            out[name] = service
            out[f"{name}-imds"] = {
                "image": MANAGER_IMAGE, "network_mode": "host",
                "command": ["plastic", "imds", "serve", "--port", str(imds_port(port)),
                            "--instance-id", instance_id(name), "--instance-type", spec.instance_type or "local"],
                "healthcheck": _health(f"curl -fsS {imds_url}/plastic/state"),
            }
            out[f"{name}-watch"] = {
                "image": MANAGER_IMAGE, "network_mode": "host",
                "command": ["plastic", "agent-watch", "--imds", imds_url, "--redis", REDIS_URL, "--interval", "2"],
                "depends_on": _healthy("redis", f"{name}-imds"),
                "restart": "on-failure",
            }
        else:
            service["command"] = agent
            service["restart"] = "unless-stopped"
            out[name] = service
    return out


def cluster_services() -> dict[str, dict[str, Any]]:
    """ZooKeeper, the Mesos master, Redis and the manager (`plastic serve`)."""
    return {
        "zookeeper": {
            "build": _build("deploy/zookeeper/Dockerfile"), "image": ZOOKEEPER_IMAGE, "network_mode": "host",
            "environment": {"ZOO_PORT": str(ZK_PORT)},
            "volumes": ["zookeeper-data:/var/lib/zookeeper"],
            "healthcheck": _health(f"echo ruok | nc -w 2 127.0.0.1 {ZK_PORT} | grep -q imok"),
            "restart": "unless-stopped",
        },
        "master": {
            "build": _build("deploy/mesos/Dockerfile", "runtime"), "image": MESOS_IMAGE, "network_mode": "host",
            "command": ["mesos-master", "--ip=127.0.0.1", f"--port={MASTER_PORT}", "--hostname=127.0.0.1",
                        f"--zk={ZK_URL}", "--quorum=1", "--registry=replicated_log",
                        "--work_dir=/var/lib/mesos/master", "--agent_ping_timeout=5secs",
                        "--max_agent_ping_timeouts=3", "--cluster=plastic-compose", *MESOS_LOGGING],
            "volumes": ["mesos-master:/var/lib/mesos/master"],
            "depends_on": _healthy("zookeeper"),
            "healthcheck": _health(f"curl -fsS {MASTER_URL}/master/health"),
            "restart": "unless-stopped",
        },
        "redis": {
            "image": MANAGER_IMAGE, "network_mode": "host",
            "command": ["redis-server", "--bind", "127.0.0.1", "--port", str(REDIS_PORT), "--requirepass",
                        REDIS_PASSWORD, "--appendonly", "yes", "--dir", "/data"],
            "volumes": ["redis-data:/data"],
            "healthcheck": _health(REDIS_PING),
            "restart": "unless-stopped",
        },
        "manager": {
            "build": _build("deploy/plastic/Dockerfile", "manager"), "image": MANAGER_IMAGE, "network_mode": "host",
            # an init as the first process reaps orphans: Toil's leader waits for each of its local jobs'
            # process groups to be gone, and an unreaped zombie kept it waiting 5 s per job
            "init": True,
            "command": ["plastic", "-v", "serve", "--master", ZK_URL, "--redis", REDIS_URL, "--runs-dir",
                        f"{RUNS_IN_CONTAINER}/runs"],
            # its home on the shared folder: a submission's job order made from flags outlives the container
            "environment": {URL_ENV: REDIS_URL, "PLASTIC_HOME": f"{RUNS_IN_CONTAINER}/home"},
            "volumes": [f"{RUNS_ON_HOST}:{RUNS_IN_CONTAINER}"],
            "depends_on": _healthy("master", "redis"),
            # cheap: a check runs every 5 s beside the work (`plastic status` cost 0.23 s of CPU each time)
            "healthcheck": _health(f"pgrep -f 'plastic -v serve' >/dev/null && {REDIS_PING}"),
            "restart": "unless-stopped",
        },
    }


def agent_image_build() -> dict[str, Any]:
    """The agent image is built by the first agent service that names it."""
    return _build("deploy/plastic/Dockerfile", "agent")


def compose_document(agents: Sequence[tuple[str, AgentSpec]]) -> dict[str, Any]:
    """The whole cluster: infrastructure, then the named agents."""
    services = cluster_services()
    services.update(agent_services(agents))
    first_agent = agents[0][0]
    services[first_agent] = {"build": agent_image_build(), **services[first_agent]}
    return {"services": services,
            "volumes": {"zookeeper-data": {}, "mesos-master": {}, "redis-data": {}}}


def override_document(agents: Sequence[tuple[str, AgentSpec]]) -> dict:
    """The agents of a plan instead of the example's: theirs switched off (a profile nobody starts),
    the plan's added after them (ports after theirs, so both sets never collide)."""
    if not agents:
        raise ValueError("no agents")
    services: dict[str, dict[str, Any]] = {}
    for name, spot in EXAMPLE_AGENTS.items():
        for service in (name, f"{name}-imds", f"{name}-watch") if spot else (name,):
            services[service] = {"profiles": [BASE_AGENTS_PROFILE]}
    planned = agent_services(agents, first=len(EXAMPLE_AGENTS))
    first = agents[0][0]
    planned[first] = {"build": agent_image_build(), **planned[first]}
    clash = set(planned) & set(services)
    if clash:
        raise ValueError(f"plan agents named like the example's: {sorted(clash)}")
    services.update(planned)
    return {"services": services}


def one_per_cluster(agents: Sequence[AgentSpec]) -> list[tuple[str, AgentSpec]]:
    """One agent per cluster, named after it (the example cluster of docker-compose.yml)."""
    seen: dict[str, AgentSpec] = {}
    for a in agents:
        seen.setdefault(a.cluster, a)
    return list(seen.items())


def one_per_node(agents: Sequence[AgentSpec]) -> list[tuple[str, AgentSpec]]:
    """Every planned node an agent, named <cluster>-<n>."""
    counts: dict[str, int] = {}
    out = []
    for a in agents:
        counts[a.cluster] = counts.get(a.cluster, 0) + 1
        out.append((f"{a.cluster}-{counts[a.cluster]}", a))
    return out
