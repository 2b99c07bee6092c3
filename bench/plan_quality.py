"""Planning benchmark: plastic's cost against the LP lower bound and three baselines.

    .venv/bin/python bench/plan_quality.py            # full run (Markdown)
    .venv/bin/python bench/plan_quality.py --quick    # n <= 1000, one seed
    .venv/bin/python bench/plan_quality.py --json     # the same figures for machines

Inputs: every WfCommons trace in data/wfinstances and seeded
synthetic mixed sets (bench/synthetic.py), each planned twice: `--preempt none`
(every task reliable) and `--preempt all` (every task preemptible).  Catalog:
the embedded default (load_catalog(None)), every type on both markets, no
per-node reserve.  Every cost is in $/h and divided by the same lower bound
(the LP relaxation of the input, plastic.core.planning.lower_bound); every packing is
checked (capacity, each task once, reliable never on spot) before it is counted.

Columns:
- plastic: `solve(tasks, shapes, effort=2)`; time = in-process wall time of
  that call (lower bound included), median of 3 runs for n <= 1000, one run above.
- seeds: `solve(..., effort=1)`, the seeds' algorithm alone.
- naive FFD, Toil BinPackedFit, all on-demand: see bench/baselines.py.
Then the whole-process time of `plastic plan FILE --concurrent --format json
-o /dev/null` on a synthetic WfCommons file (median of 5 runs).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.baselines import (  # noqa: E402
    all_on_demand,
    cheapest_on_demand,
    check_packing,
    ensure_on_demand_node,
    naive_ffd,
    toil_binpacked_fit,
)
from bench.common import WFINSTANCES  # noqa: E402
from bench.reference_bound import per_task_lower_bound  # noqa: E402
from bench.synthetic import mixed_tasks, write_wfcommons  # noqa: E402
from plastic.catalogs import load_catalog  # noqa: E402
from plastic.core.model import PREEMPTIBLE, RELIABLE, NodeShape, TaskSpec, node_shapes  # noqa: E402
from plastic.core.planning.lower_bound import lower_bound  # noqa: E402
from plastic.core.planning.packing import PackedNode  # noqa: E402
from plastic.core.planning.planner import solve  # noqa: E402

MODES = ("none", "all")
SIZES = (50, 200, 1000, 10000)
QUICK_MAX_N = 1000
MEAN_MAX_N = 1000
CLI_N = 10000
COLUMNS = ("plastic", "seeds", "naive_ffd", "toil_bpf", "all_on_demand")


# ---------------------------------------------------------------- machine

def machine() -> dict[str, object]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


# ---------------------------------------------------------------- one row

def cost(nodes: Sequence[PackedNode]) -> float:
    return sum(n.shape.usd_per_hour for n in nodes)


def with_mode(tasks: Sequence[TaskSpec], mode: str) -> list[TaskSpec]:
    p = RELIABLE if mode == "none" else PREEMPTIBLE
    return [t if t.preempt == p else replace(t, preempt=p) for t in tasks]


@dataclass
class Row:
    input: str
    mode: str
    n: int
    lb: float
    ratio: dict[str, float]
    plastic_ms: float
    added_on_demand: dict[str, bool] = field(default_factory=dict)
    ratio_without_added: dict[str, float] = field(default_factory=dict)  # naive/Toil before the added node
    seeds: int = 1  # how many seeds a mean row averages
    tight_lb: float | None = None  # the per-task LP (bench/reference_bound.py), when SciPy is there


def _timed_solve(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], repeats: int):
    times = []
    sol = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        sol = solve(tasks, shapes, effort=2)
        times.append((time.perf_counter() - t0) * 1000.0)
    return sol, statistics.median(times)


def measure(name: str, tasks: Sequence[TaskSpec], mode: str, shapes: Sequence[NodeShape]) -> Row:
    tasks = list(tasks)
    lb = lower_bound(tasks, shapes).usd_per_hour
    sol, ms = _timed_solve(tasks, shapes, 3 if len(tasks) <= 1000 else 1)
    results: dict[str, list[PackedNode]] = {"plastic": list(sol.nodes)}
    results["seeds"] = list(solve(tasks, shapes, effort=1).nodes)
    added: dict[str, bool] = {}
    bare: dict[str, float] = {}
    for key, fn in (("naive_ffd", naive_ffd), ("toil_bpf", toil_binpacked_fit)):
        packed = fn(tasks, shapes, ensure_on_demand=False)
        bare[key] = cost(packed) / lb
        nodes, added[key] = ensure_on_demand_node(packed, shapes)
        results[key] = nodes
    if all(not t.preempt.preemptible for t in tasks):
        results["all_on_demand"] = results["plastic"]  # identical input, deterministic planner
    else:
        results["all_on_demand"] = all_on_demand(tasks, shapes)
    reliable_view = [replace(t, preempt=RELIABLE) for t in tasks]
    for key, nodes in results.items():
        check_packing(reliable_view if key == "all_on_demand" else tasks, nodes)
        if not any(n.shape.reliable for n in nodes):
            raise AssertionError(f"{key} on {name}/{mode}: no on-demand node")
    ratio = {k: cost(v) / lb for k, v in results.items()}
    tight = per_task_lower_bound(tasks, shapes)
    return Row(name, mode, len(tasks), lb, ratio, ms, added, bare, tight_lb=tight)


def mean_row(name: str, rows: Sequence[Row]) -> Row:
    return Row(
        input=name,
        mode=rows[0].mode,
        n=rows[0].n,
        lb=statistics.fmean(r.lb for r in rows),
        ratio={k: statistics.fmean(r.ratio[k] for r in rows) for k in COLUMNS},
        plastic_ms=statistics.fmean(r.plastic_ms for r in rows),
        added_on_demand={k: any(r.added_on_demand.get(k, False) for r in rows) for k in ("naive_ffd", "toil_bpf")},
        ratio_without_added={k: statistics.fmean(r.ratio_without_added[k] for r in rows)
                             for k in ("naive_ffd", "toil_bpf")},
        seeds=len(rows),
        tight_lb=None if any(r.tight_lb is None for r in rows) else statistics.fmean(r.tight_lb for r in rows),
    )


# ---------------------------------------------------------------- CLI timing

def cli_timing(n: int, runs: int) -> dict[str, object]:
    exe = REPO / ".venv" / "bin" / "plastic"
    out: dict[str, object] = {"n": n, "runs": runs, "command": "plastic plan FILE --concurrent --format json -o /dev/null"}
    if not exe.exists():
        return {**out, "status": "CLI not ready", "reason": f"{exe} missing"}
    with tempfile.TemporaryDirectory(prefix="plastic-bench-") as tmp:
        path = Path(tmp) / f"mixed-{n}.json"
        write_wfcommons(mixed_tasks(n, 1), path)
        cmd = [str(exe), "plan", str(path), "--concurrent", "--format", "json", "-o", os.devnull]
        warm = subprocess.run(cmd, capture_output=True, text=True)  # also warms the page cache
        if warm.returncode != 0:
            err = (warm.stderr or warm.stdout).strip().splitlines()
            return {**out, "status": "CLI not ready",
                    "reason": f"exit {warm.returncode}: {err[-1] if err else ''}"[:160]}
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
            if r.returncode != 0:
                return {**out, "status": "CLI not ready", "reason": f"exit {r.returncode} on a timed run"}
    return {**out, "status": "ok", "median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


# ---------------------------------------------------------------- output

def fmt_ratio(r: Row, key: str) -> str:
    s = f"{r.ratio[key]:.3f}"
    return s + " †" if r.added_on_demand.get(key) else s


def markdown(meta: dict, rows: Sequence[Row], cli: dict, shapes: Sequence[NodeShape]) -> str:
    od = cheapest_on_demand(shapes)
    lines = [
        "# plastic planning benchmark",
        "",
        f"- Date: {meta['date']}",
        f"- Machine: {meta['cpu']}, {meta['cores']} cores ({meta['usable_cores']} usable), "
        f"Python {meta['python']}",
        f"- Catalog: {meta['catalog']}; {len(shapes)} node shapes (every type on-demand and spot), no per-node reserve",
        "- Costs are $/h of the plan divided by the LP lower bound of the same input (1.000 = provably optimal).",
        "",
        "| input | mode | n tasks | lower bound $/h | plastic cost/LB | plastic time ms | seeds (effort=1) cost/LB "
        "| naive FFD cost/LB | Toil BinPackedFit cost/LB | all on-demand cost/LB | per-task LP/LB "
        "| plastic cost/per-task LP |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.input} | {r.mode} | {r.n} | {r.lb:.4f} | {fmt_ratio(r, 'plastic')} | {r.plastic_ms:.1f} | "
            f"{fmt_ratio(r, 'seeds')} | {fmt_ratio(r, 'naive_ffd')} | {fmt_ratio(r, 'toil_bpf')} | "
            f"{fmt_ratio(r, 'all_on_demand')} | {_tight(r)} |")
    lines += [
        "",
        "mode `none`: every task reliable (on-demand only); mode `all`: every task preemptible.",
        f"† the baseline's packing had no on-demand node, so one empty {od.name} on-demand node "
        f"(${od.usd_per_hour}/h, the cheapest) was added for the paper's at-least-one-reliable-node rule "
        "(plastic and all on-demand meet it themselves, plastic possibly by turning a spot node into an "
        "on-demand one, which can cost less than adding a node; `--json` also gives the baselines' "
        "ratios without the added node).",
        "per-task LP: the LP relaxation that keeps each task whole and on shapes that can hold it "
        "(bench/reference_bound.py, SciPy HiGHS); also a valid lower bound, tighter where big "
        "memory-hungry tasks fit only dear shapes.",
        "plastic time: in-process `solve(effort=2)` wall time including the lower bound; median of 3 runs "
        "for n <= 1000, one run above; mean rows average it over the seeds.",
        "",
        "## Whole-process time of the CLI",
        "",
        "| command | tasks | runs | median s | min s | max s |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    if cli.get("status") == "ok":
        lines.append(f"| `{cli['command']}` | {cli['n']} | {cli['runs']} | {cli['median_s']:.3f} | "
                     f"{cli['min_s']:.3f} | {cli['max_s']:.3f} |")
    else:
        lines.append(f"| `{cli['command']}` | {cli['n']} | {cli['runs']} | CLI not ready | | |")
        lines.append("")
        lines.append(f"CLI not ready: {cli.get('reason', '')}")
    lines.append("")
    lines.append("Measured with time.perf_counter around subprocess.run of <repo>/.venv/bin/plastic on a "
                 "synthetic WfCommons file (bench/synthetic.py, seed 1, preemptible tasks), after one "
                 "untimed warm-up run.")
    return "\n".join(lines)


def _tight(r: Row) -> str:
    if r.tight_lb is None:
        return "n/a | n/a"
    return f"{r.tight_lb / r.lb:.3f} | {r.ratio['plastic'] * r.lb / r.tight_lb:.3f}"


def row_json(r: Row) -> dict:
    return {"input": r.input, "mode": r.mode, "n_tasks": r.n, "seeds_averaged": r.seeds,
            "lower_bound_usd_per_hour": r.lb, "plastic_ms": r.plastic_ms,
            "cost_over_lb": r.ratio, "added_on_demand_node": r.added_on_demand,
            "cost_over_lb_without_added_node": r.ratio_without_added,
            "per_task_lp_usd_per_hour": r.tight_lb}


# ---------------------------------------------------------------- main

def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"synthetic n <= {QUICK_MAX_N} only, one seed")
    ap.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    ap.add_argument("--data", type=Path, default=WFINSTANCES, help=f"WfCommons traces (default {WFINSTANCES})")
    ap.add_argument("--cli-runs", type=int, default=5, help="timed runs of the CLI (default 5)")
    args = ap.parse_args(argv)

    from plastic.traces import load_trace

    catalog = load_catalog(None)
    shapes = node_shapes(catalog)
    meta = machine()
    meta["catalog"] = f"embedded default, {len(catalog.instance_types)} types, {catalog.region}"

    rows: list[Row] = []
    traces = sorted(args.data.glob("*.json")) if args.data.is_dir() else []
    for path in traces:
        for mode in MODES:
            tasks = load_trace(path, preempt_mode=mode).tasks
            rows.append(measure(path.stem, tasks, mode, shapes))

    sizes = [n for n in SIZES if not args.quick or n <= QUICK_MAX_N]
    for n in sizes:
        for mode in MODES:
            rows.append(measure(f"mixed-{n} (seed 1)", with_mode(mixed_tasks(n, 1), mode), mode, shapes))
    if not args.quick:
        for n in (n for n in sizes if n <= MEAN_MAX_N):
            for mode in MODES:
                per_seed = [measure(f"mixed-{n}", with_mode(mixed_tasks(n, s), mode), mode, shapes)
                            for s in range(1, 6)]
                rows.append(mean_row(f"mixed-{n} (mean of seeds 1-5)", per_seed))

    cli = cli_timing(CLI_N if not args.quick else QUICK_MAX_N, args.cli_runs)

    if args.json:
        print(json.dumps({"machine": meta, "rows": [row_json(r) for r in rows], "cli": cli}, indent=2))
    else:
        print(markdown(meta, rows, cli, shapes))
        if not traces:
            print(f"\n(no WfCommons traces found in {args.data})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
