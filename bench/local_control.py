"""bench/local_control.py: what one call to the local cluster's control API costs its caller in CPU.

The elastic provisioner of `plastic run` on the local cluster lists the nodes (`LocalCluster.nodes()`)
at every look, from the runner's process; on a machine starved by hundreds of task processes, CPU the
poll loop spends there is CPU it does not have to renew the cluster's lease or follow the leader.

    python bench/local_control.py                    # this checkout
    python bench/local_control.py --baseline DIR     # and another checkout (git worktree), side by side

Each checkout is measured in a process of its own: a one-agent local cluster, one untimed call, then
``--calls`` calls of nodes(); the CPU time of the calling process (time.process_time) per call.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import machine  # noqa: E402

MEASURE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from plastic.local.handle import LocalCluster
spec = {"clusters": [{"name": "core", "count": 1, "cpus": 1, "ram_mib": 1024, "preemptible": False}]}
with LocalCluster(spec) as cluster:
    cluster.nodes()
    calls = int(sys.argv[2])
    t0, w0 = time.process_time(), time.perf_counter()
    for _ in range(calls):
        cluster.nodes()
    print((time.process_time() - t0) / calls * 1000, (time.perf_counter() - w0) / calls * 1000)
"""


def measure(checkout: Path, calls: int) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", MEASURE, str(checkout), str(calls)], capture_output=True, text=True,
                         check=True, timeout=600, cwd=checkout)
    cpu_ms, wall_ms = map(float, out.stdout.split())
    return cpu_ms, wall_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, help="another checkout, measured the same way")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"LocalCluster.nodes(), {args.calls} calls a round; {machine()}")
    for r in range(1, args.rounds + 1):
        for name, checkout in (("this checkout", ROOT), ("baseline", args.baseline)):
            if checkout is None:
                continue
            cpu_ms, wall_ms = measure(checkout.resolve(), args.calls)
            print(f"round {r}  {name:14} {cpu_ms:7.2f} ms CPU a call  {wall_ms:7.2f} ms wall a call  ({checkout})")


if __name__ == "__main__":
    main()
