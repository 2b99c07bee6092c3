"""The spot-notice watchers of a run on a local cluster: one `plastic agent-watch` per spot agent.

Each watcher (python -m plastic.watch) polls its agent's emulated IMDS and publishes notices into the
run's Redis, where the batch system's notices thread picks them up; they die with the run (SIGTERM at
the end, and the kernel's parent-death signal if `plastic run` itself is killed).  An elastic cluster
gains spot agents while it runs: `add` starts a watcher for each spot agent it has not seen yet.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from plastic.procs import die_with_parent
from plastic.store.urls import URL_ENV

log = logging.getLogger(__name__)

WATCH_INTERVAL_S = 2.0
WATCH_STOP_S = 5.0


def _get(agent: Any, name: str) -> Any:
    return agent.get(name) if isinstance(agent, dict) else getattr(agent, name, None)


class SpotWatchers:
    def __init__(self, redis_url: str, log_dir: Path):
        self.redis_url = redis_url
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen] = {}
        self.looked_at = 0.0

    def add(self, agents: Iterable[Any]) -> int:
        """A watcher for each spot agent with an IMDS endpoint not watched yet; returns how many started.
        An agent is a LocalCluster AgentInfo (``id``) or a node of ``LocalCluster.nodes()`` (``agent_id``)."""
        started = 0
        for a in agents:
            agent_id = _get(a, "agent_id") or _get(a, "id")
            imds = _get(a, "imds_url")
            if not _get(a, "preemptible") or not imds or not agent_id or agent_id in self.procs:
                continue
            self.log_dir.mkdir(parents=True, exist_ok=True)
            argv = [sys.executable, "-m", "plastic.watch", "-v", "--imds", imds,
                    "--agent-id", agent_id, "--interval", f"{WATCH_INTERVAL_S:g}"]
            env = {**os.environ, URL_ENV: self.redis_url}  # not on the command line
            with open(self.log_dir / f"{agent_id}.log", "ab") as out:
                self.procs[agent_id] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                                        cwd=self.log_dir, env=env,
                                                        preexec_fn=die_with_parent())  # noqa: PLW1509
            started += 1
        return started

    def stop(self, grace_s: float = WATCH_STOP_S) -> None:
        """SIGTERM every watcher still running (they exit 0 at once), then wait; SIGKILL stragglers."""
        procs = list(self.procs.values())
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for p in procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("watcher %d did not stop within %.0f s; killing it", p.pid, grace_s)
                p.kill()
                p.wait()
