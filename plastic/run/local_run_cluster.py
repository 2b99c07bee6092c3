"""The local cluster a `plastic run` runs on: started shaped like the plan (its first nodes when the
cluster is elastic), or re-attached after a crash of the `plastic run` that started it, with a spot-notice
watcher on each spot agent (plastic.run.watchers).

The cluster runs under a lease (run_dir/cluster-PID.lease, renewed at every poll of the runner, LEASE_S)
instead of watching the process that started it, and its workdir is in run_dir/cluster.json, so that
`plastic run --resume` finds it again."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plastic.catalogs import load_catalog
from plastic.core.elastic.first_wave import sized_by_controller, starting_nodes
from plastic.core.elastic.model import ElasticPolicy
from plastic.core.model import node_shapes
from plastic.core.planning.local_shape import LocalShape, local_shape
from plastic.core.planning.plan import Plan
from plastic.fileio import write_atomically
from plastic.run.request import Display, RunRequest
from plastic.run.watchers import SpotWatchers

log = logging.getLogger(__name__)

WATCHERS_EVERY_S = 2.0
LEASE_S = 60.0
CLUSTER_FILE = "cluster.json"
LEASE_FILE = "cluster-{pid}.lease"  # the pid of the `plastic run` that started the cluster


def machine_size() -> tuple[int, int]:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        ram_mib = int(pages // 2**20)
    except (ValueError, OSError, AttributeError):
        ram_mib = 4096
    return cpus, ram_mib


def cluster_spec(shape: LocalShape, source: str):
    from plastic.core.model import Market
    from plastic.local.config import AgentSpec, ClusterSpec

    agents = tuple(AgentSpec(cluster=n.cluster, cpus=float(n.capacity.vcpus), ram_mib=float(n.capacity.ram_mib),
                             preemptible=n.market is Market.SPOT, instance_type=n.instance_type, node_id=n.id)
                   for n in shape.nodes)
    return ClusterSpec(agents, source, tuple(dict.fromkeys(a.cluster for a in agents)))


def follow_new_agents(cluster: Any) -> None:
    """Every few seconds, a notice watcher for each spot agent an elastic cluster gained (best effort)."""
    watchers = getattr(cluster, "watchers", None)
    if watchers is None or time.monotonic() - watchers.looked_at < WATCHERS_EVERY_S:
        return
    watchers.looked_at = time.monotonic()
    try:
        nodes = cluster.nodes()
    except Exception as exc:  # the cluster is busy or going away: next time
        log.debug("could not list the local cluster's nodes: %s", exc)
        return
    watchers.add([n for n in nodes if n.get("state") in ("ready", "draining")])  # draining: a notice is up


def _sized_later(request: RunRequest, plan: Plan) -> frozenset[str]:
    """The plan's first-wave tasks whose nodes the elastic controller sizes itself (their runtimes spread,
    or they are short under --makespan-allowance: plastic.core.elastic.first_wave), with
    the batch system's policy: a boot of --boot-seconds looked ahead."""
    if request.boot_s <= 0:
        return frozenset()
    shapes = node_shapes(load_catalog(request.catalog_path))
    policy = ElasticPolicy(lead_s=request.boot_s, makespan_allowance=request.makespan_allowance)
    return sized_by_controller(plan.tasks, shapes, policy)


def start_cluster(request: RunRequest, plan: Plan, run_dir: Path, redis_url: str, notes: list[str],
                  display: Display, cleanups: list[Callable[[], None]], *,
                  attach: bool = False) -> tuple[str, list[Any], Any]:
    """The Mesos master to use: --master, or a local cluster shaped like the plan under a lease (with
    attach: the one a killed `plastic run` left, if it still serves), with its spot-notice watchers."""
    if request.master:
        return request.master, [], None
    from plastic.local.handle import LocalCluster

    cluster = None
    if attach:
        try:
            doc = json.loads((run_dir / CLUSTER_FILE).read_text(encoding="utf-8"))
            cluster = LocalCluster.attach(doc["workdir"], lease_file=run_dir / doc["lease"], lease_s=LEASE_S)
            display.note(f"re-attached to the local cluster at {cluster.master_url}")
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            display.note(f"the run's local cluster is gone ({exc}); starting a new one")
            cluster = None
    if cluster is None:
        cpus, ram = machine_size()
        nodes = starting_nodes(plan.nodes, plan.tasks, _sized_later(request, plan)) if request.elastic else plan.nodes
        shape = local_shape(nodes, machine_vcpus=cpus, machine_ram_mib=ram, max_agents=request.max_agents)
        if request.elastic:
            notes.append(f"elastic cluster: starts with {len(shape.nodes)} of the plan's {len(plan.nodes)} node(s) "
                         f"(the on-demand ones and the first wave's) and grows with the queued work")
        notes.extend(shape.notes)
        # a lease of its own: a cluster this process starts and is killed before naming in cluster.json
        # is renewed by no one (not by the resume's new cluster) and stops within LEASE_S
        lease = run_dir / LEASE_FILE.format(pid=os.getpid())
        cluster = LocalCluster(cluster_spec(shape, str(run_dir / "plan.json")), agent_ping_timeout_s=5.0,
                               interrupt_rate=request.interrupt_rate,
                               interrupt_notice_s=request.notice_seconds, seed=request.seed,
                               lease_file=lease, lease_s=LEASE_S, boot_s=request.boot_s,
                               refuse_spot=request.refuse_spot)
        cluster.start()
        write_atomically(run_dir / CLUSTER_FILE, json.dumps({"workdir": str(cluster.workdir), "pid": cluster.pid,
                                                             "master_url": cluster.master_url,
                                                             "lease": lease.name}) + "\n")
    cleanups.append(cluster.stop)
    master = cluster.master_url
    local_agents = list(cluster.agents)
    watchers = SpotWatchers(redis_url, run_dir / "watch")
    started = watchers.add(local_agents)
    cleanups.append(watchers.stop)
    if started:
        display.note(f"{started} spot-notice watcher(s) on the spot agents' IMDS")
    if request.elastic:
        cluster.watchers = watchers  # new spot agents get theirs as they come (follow_new_agents)
    display.note(f"local cluster at {master}: " + ", ".join(
        f"{c} x{sum(1 for a in local_agents if a.cluster == c)}"
        for c in dict.fromkeys(a.cluster for a in local_agents)))
    return master, local_agents, cluster
