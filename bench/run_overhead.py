"""What plastic adds to a Toil run: a 200-task scatter through plastic vs Toil's single_machine.

The workflow (bench/workflows/scatter-echo.cwl) echoes each of N integers into a file: every
element is one Toil job doing almost nothing, so the wall time per task is the cost of the
batch system plus Toil's own per-job work.  Measured, same machine, same session, alternating:

* ``single_machine``: ``toil-cwl-runner --batchSystem single_machine --no-container`` (the baseline;
  it runs as many 1-core jobs at once as the machine has cores);
* ``plastic``: ``toil-cwl-runner --batchSystem plastic --plasticMaster URL`` on a local cluster
  whose agents hold exactly this machine's cores (one on-demand agent, the rest spot), with
  ``--plasticRedis`` recording every decision in a real Redis server;
* ``plastic run --master URL`` (informational): the whole user command on the same cluster, which
  also plans, lowers, starts Redis and agent watchers, and writes the report.

The baseline and the batch system run the same lowered workflow (`plastic lower`: the scatter's
`plastic:Plasticity` becomes ResourceRequirement + arv:UsePreemptible), so both see the same
cores, memory and preemptibility.

Printed per system: wall time of the whole command, wall time per task, and the ratio to
single_machine (target: plastic <= 1.1x).

    python bench/run_overhead.py                 # 200 tasks, 1 round
    python bench/run_overhead.py --tasks 50 --rounds 2
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import plastic_env  # noqa: E402
from plastic.local.handle import LocalCluster  # noqa: E402
from plastic.store import start_embedded  # noqa: E402

WORKFLOW = REPO / "bench" / "workflows" / "scatter-echo.cwl"
BIN = Path(sys.executable).parent
TARGET_RATIO = 1.1


def _job_file(tmp: Path, tasks: int) -> Path:
    path = tmp / f"items-{tasks}.json"
    path.write_text(json.dumps({"items": list(range(1, tasks + 1))}))
    return path


def _timed(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> float:
    t0 = time.monotonic()
    with open(log, "wb") as fh:
        res = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=fh, check=False)
    wall = time.monotonic() - t0
    if res.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"{cmd[0]} failed with {res.returncode}; log {log}:\n{tail}")
    return wall


def lower(tmp: Path) -> tuple[Path, Path]:
    from plastic.cwl.lower import lower_workflow

    lowered = lower_workflow(str(WORKFLOW), str(tmp / "lowered"))
    return Path(lowered.workflow_path), Path(lowered.policy_path)


def run_single_machine(tmp: Path, job: Path, i: int, workflow: Path) -> float:
    work = tmp / f"sm-{i}"
    work.mkdir()
    cmd = [str(BIN / "toil-cwl-runner"), "--batchSystem", "single_machine", "--no-container",
           "--jobStore", f"file:{work / 'js'}", "--outdir", str(work / "out"), "--clean", "always",
           str(workflow), str(job)]
    return _timed(cmd, work, plastic_env(), work / "toil.log")


def run_plastic(tmp: Path, job: Path, i: int, workflow: Path, policy: Path, master: str, redis_url: str) -> float:
    work = tmp / f"pl-{i}"
    work.mkdir()
    cmd = [str(BIN / "toil-cwl-runner"), "--batchSystem", "plastic", "--plasticMaster", master,
           "--plasticRedis", redis_url, "--plasticPolicy", str(policy), "--no-container",
           "--jobStore", f"file:{work / 'js'}", "--outdir", str(work / "out"), "--clean", "always",
           str(workflow), str(job)]
    return _timed(cmd, work, plastic_env(), work / "toil.log")


def run_plastic_run(tmp: Path, job: Path, i: int, master: str) -> float:
    work = tmp / f"pr-{i}"
    work.mkdir()
    cmd = [sys.executable, "-m", "plastic", "run", str(WORKFLOW), str(job), "--outdir", str(work / "out"),
           "--run-dir", str(work / "run"), "--master", master, "--quiet"]
    return _timed(cmd, work, plastic_env(), work / "plastic.log")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-plastic-run", action="store_true", help="Skip the informational `plastic run` row.")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    spec = {"clusters": [
        {"name": "core", "count": 1, "cpus": 1, "ram_mib": 4096, "preemptible": False},
        {"name": "burst", "count": max(cores - 1, 1), "cpus": 1, "ram_mib": 4096, "preemptible": True},
    ]}
    walls: dict[str, list[float]] = {"single_machine": [], "plastic": [], "plastic run": []}
    with tempfile.TemporaryDirectory(prefix="plastic-overhead-") as tmp_name:
        tmp = Path(tmp_name)
        job = _job_file(tmp, args.tasks)
        workflow, policy = lower(tmp)
        server = start_embedded(tmp / "redis")
        try:
            with LocalCluster(spec) as cluster:
                for i in range(args.rounds):
                    walls["single_machine"].append(run_single_machine(tmp, job, i, workflow))
                    walls["plastic"].append(run_plastic(tmp, job, i, workflow, policy, cluster.master_url,
                                                        server.url))
                    line = (f"round {i + 1}: single_machine {walls['single_machine'][-1]:.1f} s, "
                            f"plastic {walls['plastic'][-1]:.1f} s")
                    if not args.no_plastic_run:
                        walls["plastic run"].append(run_plastic_run(tmp, job, i, cluster.master_url))
                        line += f", plastic run {walls['plastic run'][-1]:.1f} s"
                    print(line, flush=True)
        finally:
            server.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(walls["single_machine"])
    print(f"\nrun overhead, {args.tasks}-task scatter, {args.rounds} round(s), {platform.processor() or platform.machine()}"
          f", {cores} cores, {dt.date.today().isoformat()}")
    print(f"{'system':<16}{'wall s (median)':>16}{'s per task':>12}{'x single_machine':>18}")
    for name, values in walls.items():
        if not values:
            continue
        wall = statistics.median(values)
        print(f"{name:<16}{wall:>16.1f}{wall / args.tasks:>12.3f}{wall / base:>18.2f}")
    ratio = statistics.median(walls["plastic"]) / base
    print(f"target: plastic <= {TARGET_RATIO}x single_machine: {'met' if ratio <= TARGET_RATIO else 'MISSED'} "
          f"({ratio:.2f}x)")


if __name__ == "__main__":
    main()
