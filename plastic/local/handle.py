"""LocalCluster: the handle on a local Mesos-API cluster running as a child process (every `plastic run`
without --master runs on one; tests and benchmarks start theirs the same way).

    from plastic.local.handle import LocalCluster

    spec = {"clusters": [
        {"name": "core", "count": 1, "cpus": 4, "ram_mib": 8192, "preemptible": False},
        {"name": "burst-small", "count": 2, "cpus": 1, "ram_mib": 2048, "preemptible": True},
    ]}
    with LocalCluster(spec, agent_ping_timeout_s=1.0) as cluster:
        cluster.master_url            # "http://127.0.0.1:PORT": POST /api/v1/scheduler, /api/v1, GET /version
        cluster.agents                # [LocalAgent(id, cluster, preemptible, instance_type, attributes,
                                      #            imds_url, port, node_id, total, instance_id)], in agent-id order
        cluster.agents_in("burst-small")
        cluster.interrupt(agent_id, notice_seconds=2.0)   # IMDS shows the notice; the agent dies at that time
        cluster.interrupt(agent_id, rebalance_only=True)  # only a rebalance recommendation
        cluster.kill_agent(agent_id)  # dies now, without notice: offers rescinded at once, tasks reported
                                      # TASK_UNREACHABLE / TASK_LOST after agent_ping_timeout_s
        cluster.status()              # the /plastic/status document (agents, resources, tasks, frameworks)
        cluster.sandbox(task_id)      # Path of the task's sandbox (stdout, stderr files)
        cluster.refresh()             # re-read agents (with replace_after_s, lost agents come back
                                      # as new agents with new ids)
        cluster.log_tail()            # the cluster's log (verbose=1|2 for more)
        cluster.restart_master(downtime_s=0.5)  # master failover: SIGKILL, then a new master on the same
                                      # port; agents come back fresh (new ids), old tasks are gone
    # leaving the block stops the child: every task process group is killed

The workdir (sandboxes, log, state file) is a throw-away directory in
$XDG_RUNTIME_DIR or /dev/shm (RAM: creating sandboxes in this machine's /tmp
is 50x slower), removed when the cluster stops; pass `workdir=` for another
place (then it is kept), e.g. when tasks write large outputs.

`spec_or_yaml` is a CLUSTER.yaml mapping, a path to CLUSTER.yaml or to a plan
JSON, YAML text, or a plastic.local.config.ClusterSpec.  The child runs
`python -m plastic.local serve` in its own session on a free port, watches the
test process (it stops by itself if that dies), and is stopped with
SIGTERM (then SIGKILL of its process group and of any task left) by `stop()`.

With `lease_file=F, lease_s=N` the child does not watch its parent: it stops by itself when
F is not touched (`touch_lease()`) for N seconds, so it outlives an owner that is killed and
restarted within N seconds (`plastic run --resume`).  `LocalCluster.attach(workdir)` takes over
such a running cluster from its state file; its `stop()` stops it like the original owner would.

Defaults are those of a real master except where tests need speed: pass
`agent_ping_timeout_s=1.0` to see agent losses after one second, and
`heartbeat_s` to see HEARTBEAT events more often.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import httpx

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from plastic.core.errors import PlasticError
from plastic.local import supervisor as sup
from plastic.local.config import ClusterSpec, coerce_spec
from plastic.local.master_process import end_master, serving_state, start_master, stop_child

__all__ = ["LocalAgent", "LocalCluster", "LocalClusterError"]

class LocalClusterError(PlasticError):
    """The local cluster refused a control call, or does not answer."""


@dataclass(frozen=True)
class LocalAgent:
    id: str
    cluster: str
    preemptible: bool
    instance_type: str | None
    attributes: dict[str, Any]
    imds_url: str | None  # EC2 instance-metadata endpoint (preemptible agents only)
    port: int
    node_id: str | None = None  # the planned node, for clusters made from a plan
    total: dict[str, float] = field(default_factory=dict)  # cpus, mem, disk
    instance_id: str | None = None  # EC2-like id (preemptible agents only; also the attribute instance_id)


class LocalCluster:
    """A running local cluster in a child process (see the module docstring)."""

    def __init__(self, spec_or_yaml: Any, *, heartbeat_s: float = 15.0,
                 agent_ping_timeout_s: float = 15.0, interrupt_rate: float | None = None,
                 interrupt_notice_s: float = INTERRUPTION_NOTICE_S, seed: int | None = None,
                 update_retry_s: float = 10.0, kill_grace_s: float = 3.0,
                 replace_after_s: float | None = None,
                 workdir: str | os.PathLike[str] | None = None, start_timeout: float = 30.0,
                 verbose: int = 0, lease_file: str | os.PathLike[str] | None = None,
                 lease_s: float | None = None, boot_s: float = 0.0, refuse_spot: str = "",
                 credentials_file: str | os.PathLike[str] | None = None):
        self.spec: ClusterSpec = coerce_spec(spec_or_yaml)
        self.heartbeat_s = heartbeat_s
        self.agent_ping_timeout_s = agent_ping_timeout_s
        self.interrupt_rate = interrupt_rate
        self.interrupt_notice_s = interrupt_notice_s
        self.seed = seed
        self.update_retry_s = update_retry_s
        self.kill_grace_s = kill_grace_s
        self.replace_after_s = replace_after_s
        self.start_timeout = start_timeout
        self.verbose = verbose
        self.workdir = Path(workdir) if workdir is not None else None
        self.lease_file = Path(lease_file) if lease_file is not None else None
        self.lease_s = lease_s if lease_file is not None else None
        self.boot_s = boot_s
        self.refuse_spot = refuse_spot
        self.credentials_file = None if credentials_file is None else str(Path(credentials_file).resolve())
        self.master_url: str = ""
        self.port: int = 0
        self.pid: int | None = None
        self.cluster_id: str | None = None
        self.agents: list[LocalAgent] = []
        self.master_restarts = 0
        self._proc: Any = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._attached = False  # taken over with attach(): a process that is not our child
        # one HTTP client for every call to the master (thread-safe; made on first use, closed by stop()):
        # httpx.request builds a client, SSL context included, each time: about 22 ms of CPU a call
        # against 2.5 ms, and the elastic provisioner lists the nodes at every look
        self._http: httpx.Client | None = None
        self._http_lock = threading.Lock()

    @classmethod
    def attach(cls, workdir: str | os.PathLike[str], *, lease_file: str | os.PathLike[str] | None = None,
               lease_s: float | None = None, timeout: float = 5.0) -> LocalCluster:
        """Take over a cluster already serving from `workdir` (started by another process, e.g. a
        `plastic run` that was killed).  Raises RuntimeError when none answers there."""
        wd = Path(workdir)
        doc = serving_state(wd, timeout=timeout)
        spec = ClusterSpec.from_json((wd / "spec.json").read_text())
        self = cls(spec, workdir=wd, lease_file=lease_file, lease_s=lease_s)
        self._attached = True
        self._take(doc)
        if self.lease_file is not None:
            self.touch_lease()
        return self

    # ------------------------------------------------------------ nodes created and terminated while running
    def add_agents(self, *, cluster: str, cpus: float, ram_mib: float, preemptible: bool = False,
                   instance_type: str | None = None, count: int = 1, boot_s: float | None = None,
                   tags: dict[str, str] | None = None, instance_ids: list[str] | None = None) -> list[dict[str, Any]]:
        """New agents (pending, registered after their boot delay): [{agent_id, instance_id, state}];
        ``instance_ids``: the ids they advertise (instances created elsewhere), one per agent."""
        body: dict[str, Any] = {"cluster": cluster, "cpus": cpus, "ram_mib": ram_mib, "preemptible": preemptible,
                                "instance_type": instance_type, "count": count, "tags": tags or {}}
        if instance_ids:
            body["instance_ids"] = list(instance_ids)
        if boot_s is not None:
            body["boot_seconds"] = boot_s
        return self._control("POST", "/plastic/v1/agents", json=body)["agents"]

    def terminate_agent(self, agent_id: str) -> None:
        self._control("DELETE", f"/plastic/v1/agents/{agent_id}")

    def nodes(self) -> list[dict[str, Any]]:
        """Every agent the cluster ever had, with its node state (plastic.local.nodes)."""
        return self._control("GET", "/plastic/v1/agents")["agents"]

    def _client(self) -> httpx.Client:
        with self._http_lock:
            if self._http is None:
                self._http = httpx.Client(timeout=10.0)
            return self._http

    def _control(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            resp = self._client().request(method, self.master_url + path, **kwargs)
        except httpx.HTTPError as exc:
            raise LocalClusterError(f"does not answer ({type(exc).__name__})", source=self.master_url) from None
        if resp.status_code >= 400:
            raise LocalClusterError(f"{method} {path}: HTTP {resp.status_code}: {resp.text.strip()}",
                                    source=self.master_url)
        return resp.json() if resp.content else {}

    def touch_lease(self) -> None:
        """Renew the lease (with lease_file): the cluster lives lease_s more."""
        if self.lease_file is not None:
            sup.touch_lease(self.lease_file)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> Self:
        if self._proc is not None or self._attached:
            return self
        if self.lease_file is not None:
            self.touch_lease()
        if self.workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="plastic-local-", dir=sup.scratch_dir(),
                                                    ignore_cleanup_errors=True)
            self.workdir = Path(self._tmp.name)
        try:
            self._spawn(port=0)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, *, port: int) -> None:
        """Start a serving child (one master incarnation) and take its address and agents."""
        self._proc, doc = start_master(self, port=port, remove_workdir=self._tmp is not None)
        self._take(doc)

    def _take(self, doc: dict[str, Any]) -> None:
        """Take a serving master's pid, address, cluster id and agents from its state document."""
        self.pid = int(doc["pid"])
        self.master_url = doc["master_url"]
        self.port = int(doc["port"])
        self.cluster_id = doc["cluster_id"]
        self.agents = [_agent_info(a) for a in doc["agents"]]

    def restart_master(self, *, downtime_s: float = 0.5, graceful: bool = False) -> Self:
        """A master failover: stop the master and, after `downtime_s`, start a new one on the same port.

        The new master has the same cluster spec and options but a new master id, and it knows nothing
        of the old one (Mesos with an in-memory registry).  The agents run in the master's process, so
        they come back fresh too: new processes with new agent ids, every task of the old master killed
        and forgotten, as after a real master failover in which no agent re-registered.  Frameworks
        re-subscribe with their framework id and are adopted under that id; explicit reconciliation of
        an old task (with its old agent id) answers TASK_UNKNOWN (TASK_LOST without PARTITION_AWARE),
        implicit reconciliation does not mention it.

        By default the master process is SIGKILLed, like a crashed master: event streams break without
        a terminating chunk and in-flight calls get no answer.  With `graceful=True` it is stopped with
        SIGTERM and ends every event stream cleanly first.  Returns when the new master answers
        /version; `master_url` and `port` stay the same, `pid`, `cluster_id` and `agents` are the new
        master's.  `master_restarts` counts the restarts.
        """
        if self._proc is None:
            raise RuntimeError("the local cluster is not running")
        assert self.workdir is not None
        proc, cluster_id = self._proc, self.cluster_id
        keep = self.workdir / sup.KEEP_WORKDIR
        keep.touch()  # a throw-away workdir outlives this master
        try:
            end_master(proc, cluster_id, graceful=graceful)
        finally:
            self._proc = None
            keep.unlink(missing_ok=True)
        self.master_restarts += 1
        time.sleep(max(0.0, downtime_s))
        try:
            self._spawn(port=self.port)
        except BaseException:
            self.stop()
            raise
        return self

    def refresh(self) -> list[LocalAgent]:
        """Re-read the agents (replacements of lost agents join with new ids); dead ones are left out."""
        self.agents = [_agent_info(a | {"total": a["resources"]["total"]}) for a in self.status()["agents"]
                       if a["status"] not in ("dead", "removed")]
        return self.agents

    def stop(self) -> None:
        """Stop the cluster and every process it started (idempotent)."""
        if self._proc is not None:
            stop_child(self._proc, self.cluster_id)
            self._proc = None
        if self._attached and self.pid is not None:
            sup.terminate(self.pid, self.cluster_id, timeout=10.0, master_url=self.master_url)
            self._attached = False
        if self.lease_file is not None:
            self.lease_file.unlink(missing_ok=True)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        with self._http_lock:
            if self._http is not None:
                self._http.close()
                self._http = None

    @property
    def running(self) -> bool:
        if self._attached:
            return self.pid is not None and sup.pid_alive(self.pid)
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __del__(self) -> None:  # a forgotten cluster must not outlive its owner
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()

    # ------------------------------------------------------------ queries and chaos
    def agent(self, agent_id: str) -> LocalAgent:
        for a in self.agents:
            if a.id == agent_id:
                return a
        raise KeyError(agent_id)

    def agents_in(self, cluster: str) -> list[LocalAgent]:
        return [a for a in self.agents if a.cluster == cluster]

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = self._client().post(self.master_url + path, json=body)
        if resp.status_code >= 400:
            raise RuntimeError(f"{path}: {resp.status_code} {resp.text}")
        return resp.json()

    def status(self) -> dict[str, Any]:
        resp = self._client().get(self.master_url + "/plastic/status")
        resp.raise_for_status()
        return resp.json()

    def interrupt(self, agent_id: str, notice_seconds: float = INTERRUPTION_NOTICE_S, *, rebalance_only: bool = False) -> dict:
        """Schedule a spot interruption: the agent's IMDS shows it now, the agent dies after notice_seconds."""
        return self._post("/plastic/interrupt", {"agent_id": agent_id, "notice_seconds": notice_seconds,
                                                 "rebalance_only": rebalance_only})["interrupted"][0]

    def interrupt_cluster(self, cluster: str, notice_seconds: float = INTERRUPTION_NOTICE_S) -> list[dict]:
        return self._post("/plastic/interrupt", {"cluster": cluster, "notice_seconds": notice_seconds})["interrupted"]

    def kill_agent(self, agent_id: str) -> None:
        """The agent dies now, without notice, with all its tasks."""
        self._post("/plastic/kill-agent", {"agent_id": agent_id})

    def restart_agent(self, agent_id: str, down_seconds: float) -> None:
        """The agent's process restarts and is back after ``down_seconds``; its executors and tasks live on."""
        self._post("/plastic/restart-agent", {"agent_id": agent_id, "down_seconds": down_seconds})

    def sandbox(self, task_id: str, framework_id: str | None = None) -> Path:
        params = {"task_id": task_id} | ({"framework_id": framework_id} if framework_id else {})
        resp = self._client().get(self.master_url + "/plastic/sandbox", params=params)
        if resp.status_code == 404:
            raise KeyError(task_id)
        resp.raise_for_status()
        return Path(resp.json()["sandbox"])

    def log_tail(self, lines: int = 50) -> str:
        """The end of the cluster's log (start it with verbose=1 or 2 for more)."""
        assert self.workdir is not None
        return sup.tail(self.workdir / "cluster.log", lines)

    def task_pids(self) -> list[int]:
        """Pids of the task processes the cluster still runs."""
        return [p for a in self.status()["agents"] for p in a["pids"]]


def _agent_info(a: dict[str, Any]) -> LocalAgent:
    return LocalAgent(id=a["id"], cluster=a["cluster"], preemptible=a["preemptible"],
                     instance_type=a["instance_type"], attributes=a["attributes"], imds_url=a["imds_url"],
                     port=a["port"], node_id=a.get("node_id"), total=a.get("total", {}),
                     instance_id=a.get("instance_id"))
