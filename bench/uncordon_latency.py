"""An agent given back while work waits: from `unignore` (Toil's unignoreNode, the elastic controller's
UncordonNode) to the waiting task RUNNING on it.

Everything real, as in `plastic run`: a local Mesos-API cluster (plastic.local) with one reliable agent
and the Toil plugin's Mesos side (a Framework and its JobBook).  Each round: the agent is ignored, a
task (`sleep 3600`, 1 vCPU) is issued and waits (the agent's offers are declined with the book's
filter, 5 s), after a random 1-6 s (so the filter is at any phase) the agent is given back and the
bench measures until the task is RUNNING; then the task is killed.

    python bench/uncordon_latency.py                     # 20 rounds
    python bench/uncordon_latency.py --plastic-from DIR  # the same rounds with plastic imported from DIR
                                                         # (a worktree of an older commit: the baseline)
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plastic-from", type=Path, default=None, help="import plastic from this checkout")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    if args.plastic_from is not None:
        sys.path.insert(0, str(args.plastic_from.resolve()))
    import plastic
    from bench.common import machine, percentile
    from plastic.core.book.jobbook import JobBook
    from plastic.core.model import RELIABLE, Resources
    from plastic.framework.adapter import Framework
    try:
        from plastic.framework.launcher import TaskCommand
        from plastic.local.handle import LocalCluster
    except ImportError:  # --plastic-from a checkout of before 2026-11-29
        from plastic.local.testing import LocalCluster  # type: ignore[no-redef]

        from plastic.framework.adapter import TaskCommand  # type: ignore[attr-defined,no-redef]

    rng = random.Random(args.seed)
    spec = {"clusters": [{"name": "core", "count": 1, "cpus": 2, "ram_mib": 4096, "preemptible": False}]}
    waits: list[float] = []
    with LocalCluster(spec, agent_ping_timeout_s=5.0) as cluster:
        fw = Framework(cluster.master_url, name="uncordon-latency", book=JobBook())
        fw.start()
        try:
            deadline = time.monotonic() + 20
            while not fw.agents() and time.monotonic() < deadline:
                time.sleep(0.05)
            (agent_id,) = fw.agents()
            address = fw.address_of(agent_id)
            for i in range(args.rounds):
                fw.ignore(address)
                job = f"j{i}"
                fw.issue(job, TaskCommand("sleep 3600"), Resources(1, 256), RELIABLE, tool="long", name="long")
                time.sleep(rng.uniform(1.0, 6.0))
                assert job not in fw.running(), "the task started on an ignored agent"
                start = time.monotonic()
                fw.unignore(address)
                while job not in fw.running():
                    if time.monotonic() - start > 30:
                        raise SystemExit(f"round {i}: the task did not start within 30 s")
                    time.sleep(0.005)
                waits.append(time.monotonic() - start)
                fw.kill(job)
        finally:
            fw.stop(kill_tasks=True)
    print(f"unignore -> RUNNING, {args.rounds} rounds; plastic from {Path(plastic.__file__).parents[1]}; {machine()}")
    print(f"  median {percentile(waits, 50):.3f} s, p90 {percentile(waits, 90):.3f} s, "
          f"min {min(waits):.3f} s, max {max(waits):.3f} s")


if __name__ == "__main__":
    main()
