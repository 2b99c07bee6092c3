"""The serving child of a LocalCluster (plastic.local.handle), one master incarnation at a time:
starting it with the handle's spec and options, ending it (like a crash, or cleanly), and finding
one that already serves from a workdir (to take it over)."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Protocol

import httpx

from plastic.core.errors import PortInUseError
from plastic.local import supervisor as sup

log = logging.getLogger(__name__)


class MasterSettings(Protocol):
    """What a serving child is started with: a LocalCluster's spec and options (plastic.local.handle),
    named here so this module need not import the handle that imports it."""

    workdir: Path | None
    spec: Any
    seed: int | None
    master_restarts: int
    heartbeat_s: float
    agent_ping_timeout_s: float
    interrupt_rate: float | None
    interrupt_notice_s: float
    update_retry_s: float
    kill_grace_s: float
    replace_after_s: float | None
    lease_file: Path | None
    lease_s: float | None
    verbose: int
    boot_s: float
    refuse_spot: str
    credentials_file: str | None
    start_timeout: float


def serving_state(workdir: Path, *, timeout: float) -> dict[str, Any]:
    """The state document of the cluster serving from `workdir` (its pid, address, cluster id and
    agents).  Raises RuntimeError when none answers there."""
    doc = sup.read_state(workdir / sup.STATE_FILE)
    if doc is None or not sup.pid_alive(int(doc.get("pid") or 0)):
        raise RuntimeError(f"no local cluster runs from {workdir}")
    try:
        if httpx.get(doc["master_url"] + "/version", timeout=timeout).status_code != 200:
            raise RuntimeError(f"the local cluster at {doc['master_url']} does not answer")
    except httpx.HTTPError as exc:
        raise RuntimeError(f"the local cluster at {doc['master_url']} does not answer ({exc})") from None
    return doc


def start_master(cluster: MasterSettings, *, port: int, remove_workdir: bool) -> tuple[subprocess.Popen, dict]:
    """Start a serving child with `cluster`'s spec and options in its workdir, on `port` (0: a free one);
    the process and its state document once it serves.  `remove_workdir`: the child removes the
    workdir when it stops."""
    workdir = cluster.workdir
    assert workdir is not None
    workdir.mkdir(parents=True, exist_ok=True)
    spec_file = workdir / "spec.json"
    spec_file.write_text(cluster.spec.to_json())
    state_file = workdir / sup.STATE_FILE
    # Each incarnation needs its own master id (agent and framework ids derive from it): with a seed,
    # the n-th restart runs with seed + n.
    seed = None if cluster.seed is None else cluster.seed + cluster.master_restarts
    args = sup.serve_args(source_flag="--spec", source=str(spec_file), port=port, workdir=str(workdir),
                          state_file=str(state_file), heartbeat=cluster.heartbeat_s,
                          ping_timeout=cluster.agent_ping_timeout_s, interrupt_rate=cluster.interrupt_rate,
                          notice=cluster.interrupt_notice_s, seed=seed,
                          update_retry=cluster.update_retry_s, kill_grace=cluster.kill_grace_s,
                          replace_after=cluster.replace_after_s,
                          parent_pid=None if cluster.lease_file is not None else os.getpid(),
                          remove_workdir=remove_workdir, verbose=cluster.verbose,
                          lease_file=None if cluster.lease_file is None else str(cluster.lease_file),
                          lease_s=cluster.lease_s, boot=cluster.boot_s, refuse_spot=cluster.refuse_spot,
                          credentials=cluster.credentials_file)
    deadline = time.monotonic() + cluster.start_timeout
    while True:
        try:
            return sup.spawn(args, state_file=state_file, log_file=workdir / "cluster.log",
                             timeout=max(1.0, deadline - time.monotonic()))
        except RuntimeError as exc:
            # The same port again (restart_master): another process may hold it for a moment (the child
            # says so in its last line, which spawn's error carries).
            if port == 0 or PortInUseError.PHRASE not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def end_master(proc: Any, cluster_id: str | None, *, graceful: bool) -> None:
    """End one master incarnation: SIGKILL, like a crashed master (then its tasks are swept: the
    agents died with it), or with `graceful` SIGTERM, which ends every event stream cleanly first."""
    if graceful:
        sup.terminate(proc.pid, cluster_id, timeout=10.0)
    else:
        sup.kill_hard(proc.pid)
        try:
            proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            log.warning("the local master (pid %d) is still there after SIGKILL", proc.pid)
        if cluster_id:
            sup.sweep(cluster_id)  # its tasks: the agents died with the master
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        log.warning("the local master (pid %d) did not exit", proc.pid)


def stop_child(proc: Any, cluster_id: str | None) -> None:
    """Stop the serving child and every process it started (SIGTERM, then SIGKILL)."""
    sup.terminate(proc.pid, cluster_id, timeout=10.0)
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        log.warning("the local cluster (pid %d) is still there after SIGKILL", proc.pid)
