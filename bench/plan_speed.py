"""Whole-process time of `plastic plan FILE --concurrent` for 10,000 tasks, side by side with a baseline.

    python bench/plan_speed.py --baseline /path/to/older/checkout [--runs 3] [--n 10000]

Held-out sets: the mixed mix of bench/synthetic.py at seeds 2-6 (seed 1 is the one the planner was
tuned on) and the wide mix at seeds 2-3, each planned with `--preempt all` (spot) and `--preempt none`
(on-demand).  Each command runs once untimed (page cache), then `--runs` times; the median is printed.
With `--baseline`, the same command runs from that checkout (`python -m plastic` with it first on
PYTHONPATH) in the same loop, and the two plans' JSON must be equal (the speed-ups change no plan).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine  # noqa: E402
from bench.synthetic import mixed_tasks, wide_tasks, write_wfcommons  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SETS = [("mixed", s) for s in (2, 3, 4, 5, 6)] + [("wide", s) for s in (2, 3)]


def command(src: Path, trace: Path, mode: str, *, json_out: Path | None = None) -> tuple[list[str], dict]:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-m", "plastic", "plan", str(trace), "--concurrent", "--preempt", mode]
    if json_out is not None:
        cmd += ["--format", "json", "-o", str(json_out)]
    return cmd, env


def timed(src: Path, trace: Path, mode: str, runs: int) -> float:
    cmd, env = command(src, trace, mode)
    subprocess.run(cmd, env=env, capture_output=True, check=True)  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def plan_json(src: Path, trace: Path, mode: str, out: Path) -> dict:
    cmd, env = command(src, trace, mode, json_out=out)
    subprocess.run(cmd, env=env, capture_output=True, check=True)
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="an older checkout to time side by side")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--n", type=int, default=10_000)
    args = ap.parse_args(argv)
    print(f"# plastic plan --concurrent, {args.n} tasks, whole process; {machine()}; "
          f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    head = "| set | mode | plastic median s |" + (" baseline median s | same plan |" if args.baseline else "")
    print(head)
    print("|---|---|--:|" + ("--:|---|" if args.baseline else ""))
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="plastic-plan-speed-") as tmp:
        for mix, seed in SETS:
            trace = Path(tmp) / f"{mix}-{seed}.json"
            write_wfcommons((wide_tasks if mix == "wide" else mixed_tasks)(args.n, seed), trace)
            for mode in ("all", "none"):
                ours = timed(REPO, trace, mode, args.runs)
                worst = max(worst, ours)
                row = f"| {mix} seed {seed} | {mode} | {ours:.3f} |"
                if args.baseline:
                    base = timed(args.baseline, trace, mode, args.runs)
                    same = plan_json(REPO, trace, mode, Path(tmp) / "a.json") == plan_json(
                        args.baseline, trace, mode, Path(tmp) / "b.json")
                    row += f" {base:.3f} | {'yes' if same else 'NO'} |"
                print(row, flush=True)
    print(f"slowest plastic median: {worst:.3f} s (target < 1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
