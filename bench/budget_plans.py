"""What `plastic plan --budget-per-hour` buys: cost, nodes and vCPUs for a few workflows and budgets.

For each workload and budget it runs `plastic plan ... --budget-per-hour B --format json` and prints
the plan's cost, its nodes (type x count, market), its vCPUs (on-demand + spot) and how many tasks
the plan's own note says queue behind others.  With `--baseline-src DIR` the same plans are also
made by another checkout of plastic (e.g. `git worktree add /tmp/before COMMIT`), side by side:
the way to compare a change of the budget planner in one run.  The baseline's queue figure is
whatever its own note said (earlier versions counted every task at once, not per wave).

    python bench/budget_plans.py
    git worktree add /tmp/before HEAD~1 && python bench/budget_plans.py --baseline-src /tmp/before
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import WFINSTANCES, machine

REPO = Path(__file__).resolve().parents[1]
QUEUED = re.compile(r"(\d+) of (\d+) tasks queue")


def workloads(tmp: Path) -> list[tuple[str, list[str], list[float]]]:
    job = tmp / "square-sum-50.yml"
    job.write_text("items: [" + ", ".join(str(i) for i in range(1, 51)) + "]\nseconds: 1\n")
    square = [str(REPO / "tests" / "chaos" / "data" / "square-sum" / "square-sum.cwl"), str(job)]
    out = [("square-sum, 50 items (CWL)", square, [0.17, 0.2, 0.3, 0.5, 0.78])]
    for name, budgets in (("montage-chameleon-2mass-01d-001", [0.12, 0.2, 0.3]), ("rnaseq-dirt02-001", [0.15, 0.3, 0.45])):
        trace = WFINSTANCES / f"{name}.json"
        if trace.is_file():
            out.append((f"{name} (trace)", [str(trace)], budgets))
    return out


def plan(src: Path, inputs: list[str], budget: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    res = subprocess.run([sys.executable, "-m", "plastic", "plan", *inputs, "--budget-per-hour", str(budget),
                          "--format", "json"], capture_output=True, text=True, env=env, cwd=src, check=False)
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit {res.returncode}"}
    doc = json.loads(res.stdout)
    nodes: dict[tuple[str, str], int] = {}
    vcpus = {"on-demand": 0, "spot": 0}
    for n in doc["nodes"]:
        nodes[(n["instance_type"], n["market"])] = nodes.get((n["instance_type"], n["market"]), 0) + 1
        vcpus[n["market"]] = vcpus.get(n["market"], 0) + int(n["capacity"]["vcpus"])
    queued = next((int(m.group(1)) for a in doc.get("assumptions", []) if (m := QUEUED.search(a))), 0)
    return {"usd_per_hour": doc["cost_per_hour"], "vcpus_on_demand": vcpus["on-demand"], "vcpus_spot": vcpus["spot"],
            "nodes": " + ".join(f"{c} {t}{'*' if m == 'spot' else ''}" for (t, m), c in sorted(nodes.items())),
            "queued": queued}


def cell(p: dict) -> str:
    if "error" in p:
        return f"error: {p['error'][:60]}"
    return (f"{p['usd_per_hour']:.4f} $/h, {p['vcpus_on_demand']}+{p['vcpus_spot']} vCPUs, "
            f"{p['queued']} queued: {p['nodes']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-src", type=Path, help="Another checkout of plastic to plan with, side by side.")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="plastic-budget-bench-") as tmp:
        for name, inputs, budgets in workloads(Path(tmp)):
            for budget in budgets:
                row = {"workload": name, "budget": budget, "plastic": plan(REPO, inputs, budget)}
                if args.baseline_src:
                    row["baseline"] = plan(args.baseline_src.resolve(), inputs, budget)
                rows.append(row)
    print(f"budget plans ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine()}); "
          "vCPUs on-demand+spot; * spot")
    for r in rows:
        print(f"{r['workload']}, budget {r['budget']} $/h")
        print(f"    plastic : {cell(r['plastic'])}")
        if "baseline" in r:
            print(f"    baseline: {cell(r['baseline'])}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
