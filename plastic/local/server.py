"""Serving a local cluster in this process until it is asked to stop (`plastic local up`, and the child
`python -m plastic.local serve` that LocalCluster and `up --detach` start): signals, the parent's
death or an abandoned lease (expired, and its holder gone) stop it; its address and agents go to a
state file while it serves."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

from plastic.local.cluster import RunningCluster
from plastic.local.supervisor import (
    KEEP_WORKDIR,
    STATE_FILE,
    lease_abandoned,
    lease_expired,
    lease_holder,
    read_state,
    write_json_atomically,
)

log = logging.getLogger(__name__)


async def _watch_lease(lease_file: Path, lease_s: float, on_expired: Any) -> None:
    """Stop (``on_expired``) once the lease is abandoned (plastic.local.supervisor.lease_abandoned)."""
    every = max(0.05, min(1.0, lease_s / 4))
    spared: int | None = None  # the holder an expired lease was last left to (said once)
    while True:
        await asyncio.sleep(every)
        if not lease_expired(lease_file, lease_s):
            spared = None
            continue
        if lease_abandoned(lease_file, lease_s):
            log.warning("lease %s not renewed for %.1f s and its holder is gone: stopping", lease_file, lease_s)
            on_expired()
            return
        holder = lease_holder(lease_file)
        if holder is not None and holder != spared:
            log.warning("lease %s not renewed for %.1f s, but its holder (pid %d) still runs: serving on",
                        lease_file, lease_s, holder)
            spared = holder


async def serve(spec: Any, options: Any, *, state_file: Path | None, parent_pid: int | None,
                on_ready: Any = None, remove_workdir: bool = False, lease_file: Path | None = None,
                lease_s: float | None = None) -> None:
    """Run the cluster until asked to stop."""
    cluster = RunningCluster(spec, options)
    loop = asyncio.get_running_loop()
    await cluster.start()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, cluster.request_shutdown)
    pidfd = None
    if parent_pid:
        try:
            pidfd = os.pidfd_open(parent_pid)
            loop.add_reader(pidfd, cluster.request_shutdown)
        except OSError:
            cluster.request_shutdown()
    lease_task = None
    if lease_file is not None and lease_s:
        lease_task = asyncio.ensure_future(_watch_lease(Path(lease_file), lease_s, cluster.request_shutdown))
    assert options.workdir is not None
    path = state_file or Path(options.workdir) / STATE_FILE
    status = cluster.status()
    doc = {"pid": os.getpid(), "pgid": os.getpgid(0), "master_url": cluster.master_url, "port": cluster.port,
           "cluster_id": cluster.cluster_id, "workdir": str(options.workdir), "started": time.time(),
           "log": os.environ.get("PLASTIC_LOCAL_LOG"),
           "agents": [{k: a[k] for k in ("id", "cluster", "instance_type", "preemptible", "node_id", "port",
                                          "imds_url", "instance_id", "attributes")} | {"total": a["resources"]["total"]}
                      for a in status["agents"]]}
    write_json_atomically(path, doc)
    if on_ready is not None:
        on_ready(cluster, doc)
    try:
        await cluster.shutdown_requested.wait()
    finally:
        log.info("stopping the local cluster at %s", cluster.master_url)
        if lease_task is not None:
            lease_task.cancel()
        if pidfd is not None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
        await cluster.stop()
        current = read_state(path)
        if current is not None and current.get("pid") == os.getpid():
            try:
                path.unlink()
            except OSError:
                pass
        if remove_workdir and not (Path(options.workdir) / KEEP_WORKDIR).exists():
            # a throw-away workdir (LocalCluster's), even if its owner died; kept across restart_master()
            import shutil

            shutil.rmtree(options.workdir, ignore_errors=True)


