"""Makespans of bundled examples with plastic's executor and with Mesos' command executor, on the
local cluster (`plastic run`) and on the compose cluster of Apache Mesos 1.11 (`plastic submit` to its
manager), rounds alternating so both executors see the same machine.

    python bench/executor_runs.py                                    # dynamic-scatter, parts 200, local, 2 rounds
    python bench/executor_runs.py --example scatter-gather --rounds 3
    python bench/executor_runs.py --compose plastictest --local      # the compose cluster (up) and local, same run
    python bench/executor_runs.py --compose bench --local --local-shape both   # local also shaped like compose

`--local-shape plan` (the default) runs `plastic run` on the local cluster it shapes from its own plan
(for dynamic-scatter at 200 parts: many agents, over a hundred cpus on paper); `compose` gives it the
compose cluster's plan (deploy/compose/example-plan.json) capped at its three agents, static: the
same agents, cpus and memory as the compose cluster, so the two differ only in what runs them.

The makespan is the run's own (report.json: from the run's start to its end), so the compose figure
does not count the wait in the manager's queue.  Prints one line per run and the medians.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import cpu_model, plastic_env  # noqa: E402

IN_IMAGE = "/opt/plastic-examples"
COMPOSE_RUNS = REPO / "compose-runs"


def example_args(example: str, parts: int | None) -> list[str]:
    args = [f"{example}/{example}.cwl", f"{example}/job.yml"]
    return args + (["--parts", str(parts)] if parts and example == "dynamic-scatter" else [])


COMPOSE_SHAPE = ["--plan", str(REPO / "deploy" / "compose" / "example-plan.json"), "--max-agents", "3", "--static"]


def run_local(example: str, parts: int | None, executor: str, work: Path, shape: str = "plan") -> dict:
    wf, job, *inputs = example_args(example, parts)
    run_dir = work / f"{example}-{executor}-{time.monotonic_ns()}"
    argv = [sys.executable, "-m", "plastic", "run", str(REPO / "cwl-examples" / wf), str(REPO / "cwl-examples" / job),
            *inputs, "--outdir", str(run_dir / "out"), "--run-dir", str(run_dir / "run"),
            "--report", str(run_dir / "report.json"), "--quiet", "--executor", executor,
            *(COMPOSE_SHAPE if shape == "compose" else [])]
    t0 = time.monotonic()
    res = subprocess.run(argv, capture_output=True, text=True, env=plastic_env(), cwd=work, check=False)
    wall = time.monotonic() - t0
    if res.returncode != 0:
        return {"ok": False, "wall_s": wall, "error": res.stderr.strip().splitlines()[-1:]}
    report = json.loads((run_dir / "report.json").read_text())
    return {"ok": True, "wall_s": wall, "makespan_s": report["makespan_s"], "attempts": report["attempts"]}


def compose_cmd() -> list[str]:
    """Compose v2 (`docker compose`) when the CLI has it, else docker-compose 1.29."""
    v2 = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return ["docker", "compose"] if v2.returncode == 0 else ["docker-compose"]


def run_compose(project: str, example: str, parts: int | None, executor: str) -> dict:
    wf, job, *inputs = example_args(example, parts)
    exec_ = [*compose_cmd(), "-p", project, "-f", str(REPO / "docker-compose.yml"), "exec", "-T", "manager", "plastic"]
    out = f"/plastic-runs/bench-{example}-{executor}-{time.monotonic_ns()}"
    t0 = time.monotonic()
    sub = subprocess.run([*exec_, "submit", f"{IN_IMAGE}/{wf}", f"{IN_IMAGE}/{job}", *inputs, "--outdir", out,
                          "--executor", executor], capture_output=True, text=True, check=True, cwd=REPO)
    run_id = sub.stdout.strip().splitlines()[-1]
    while True:
        st = json.loads(subprocess.run([*exec_, "status", run_id, "--format", "json"], capture_output=True,
                                       text=True, check=True, cwd=REPO).stdout)
        if st["state"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
            break
        time.sleep(2)
    wall = time.monotonic() - t0
    if st["state"] != "SUCCEEDED":
        return {"ok": False, "wall_s": wall, "error": st}
    report = json.loads((COMPOSE_RUNS / "runs" / run_id / "report.json").read_text())
    return {"ok": True, "wall_s": wall, "makespan_s": report["makespan_s"], "attempts": report["attempts"],
            "run_id": run_id}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", default="dynamic-scatter")
    parser.add_argument("--parts", type=int, default=200, help="dynamic-scatter's scatter width")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--executors", default="plastic,command")
    parser.add_argument("--compose", metavar="PROJECT", help="also through this compose project's manager (up)")
    parser.add_argument("--local", action="store_true", help="with --compose: also on the local cluster")
    parser.add_argument("--local-shape", choices=["plan", "compose", "both"], default="plan",
                        help="the local cluster shaped by its plan, like the compose cluster, or both")
    args = parser.parse_args()
    executors = [e for e in args.executors.split(",") if e]
    shapes = {"plan": ["local"], "compose": ["local-c"], "both": ["local", "local-c"]}[args.local_shape]
    where = (["compose"] if args.compose else []) + (shapes if args.local or not args.compose else [])
    print(f"executor_runs  {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}  {os.cpu_count()} cpus "
          f"({cpu_model()}); {args.example}" + (f" parts {args.parts}" if args.example == "dynamic-scatter" else ""))
    results: dict[tuple[str, str], list[float]] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="plastic-executor-runs-") as tmp:
        for rnd in range(args.rounds):
            for cluster in where:
                for executor in executors if rnd % 2 == 0 else list(reversed(executors)):
                    r = (run_compose(args.compose, args.example, args.parts, executor) if cluster == "compose"
                         else run_local(args.example, args.parts, executor, Path(tmp),
                                        "compose" if cluster == "local-c" else "plan"))
                    ok = ok and r["ok"]
                    print(f"  round {rnd + 1} {cluster:7s} {executor:7s} " + (
                        f"makespan {r['makespan_s']:7.1f} s  wall {r['wall_s']:6.1f} s  attempts {r['attempts']}"
                        if r["ok"] else f"FAILED {r.get('error')}"), flush=True)
                    if r["ok"]:
                        results.setdefault((cluster, executor), []).append(r["makespan_s"])
    for (cluster, executor), spans in results.items():
        print(f"median makespan {cluster:7s} {executor:7s} {statistics.median(spans):7.1f} s  "
              f"(runs: {', '.join(f'{s:.1f}' for s in spans)})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
