"""Whole-process time of `plastic plan FILE --concurrent` for 10,000 tasks, side by side with a baseline.

    python bench/plan_speed.py --baseline /path/to/older/checkout [--runs 3] [--n 10000]

Held-out sets: the mixed mix of bench/synthetic.py at seeds 2-6 (seed 1 is the one the planner was
tuned on) and the wide mix at seeds 2-3, each planned with `--preempt all` (spot) and `--preempt none`
(on-demand).  Each command runs once untimed (page cache), then `--runs` times; the median is printed.
With `--baseline`, the same command runs from that checkout (`python -m plastic` with it as the
working directory and on PYTHONPATH) in the same loop, and the two plans' JSON must be equal (the speed-ups change no plan).
Beside each median wall time, the median CPU time of the run (every process: from 2,000 tasks the
planner's strategies run in forked workers, so the CPU time can exceed the wall time).

`--instructions` also counts the machine instructions of one run of each command under valgrind's
callgrind (about 40 s a run): unlike seconds, the count does not move with the host's load or the
hour, so it compares two checkouts on a noisy machine.  `--sets mixed-5,wide-2` picks sets.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
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
    """The command and subprocess.run's env and cwd for planning `trace` with the checkout `src`.

    The checkout is the working directory too: `python -m` puts the working directory before
    PYTHONPATH, so run from this repository it would import this checkout's plastic whatever
    PYTHONPATH says (until 2026-11-26 the "baseline" column was this checkout run twice)."""
    where = {"env": dict(os.environ, PYTHONPATH=str(src)), "cwd": src}
    cmd = [sys.executable, "-m", "plastic", "plan", str(trace), "--concurrent", "--preempt", mode]
    if json_out is not None:
        cmd += ["--format", "json", "-o", str(json_out)]
    return cmd, where


def timed(src: Path, trace: Path, mode: str, runs: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (user + system, every process of the run)."""
    cmd, where = command(src, trace, mode)
    subprocess.run(cmd, **where, capture_output=True, check=True)  # warm-up
    times, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, **where, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), statistics.median(cpu)


def instructions(src: Path, trace: Path, mode: str) -> int:
    """Machine instructions the main `plastic plan` process executes (valgrind's callgrind).

    From 2,000 tasks the planner's strategies run in forked workers too; valgrind counts each
    process apart, and the main one (the first to speak) is the one the run waits for."""
    cmd, where = command(src, trace, mode)
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], **where,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True).stderr
    first = re.search(r"^==(\d+)==", out, re.MULTILINE)
    found = first and re.search(rf"^=={first.group(1)}== Collected : (\d+)", out, re.MULTILINE)
    if not found:
        raise SystemExit(f"plan_speed: no instruction count in valgrind's output for {trace.name} --preempt {mode}")
    return int(found.group(1))


def plan_json(src: Path, trace: Path, mode: str, out: Path) -> dict:
    cmd, where = command(src, trace, mode, json_out=out)
    subprocess.run(cmd, **where, capture_output=True, check=True)
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="an older checkout to time side by side")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--instructions", action="store_true", help="also count instructions (valgrind)")
    ap.add_argument("--sets", help="comma-separated sets, e.g. mixed-5,wide-2 (default: all)")
    args = ap.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        ap.error("--instructions needs valgrind on PATH")
    sets = SETS
    if args.sets:
        wanted = {name.strip() for name in args.sets.split(",")}
        sets = [(mix, seed) for mix, seed in SETS if f"{mix}-{seed}" in wanted]
        if not sets:
            ap.error(f"--sets: none of {sorted(wanted)} is a set (have {', '.join(f'{m}-{s}' for m, s in SETS)})")
    print(f"# plastic plan --concurrent, {args.n} tasks, whole process; {machine()}; "
          f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    head = "| set | mode | plastic median s | plastic CPU s |" + (
        " baseline median s | baseline CPU s | same plan |" if args.baseline else "")
    rule = "|---|---|--:|--:|" + ("--:|--:|---|" if args.baseline else "")
    if args.instructions:
        head += " plastic G instr |" + (" baseline G instr |" if args.baseline else "")
        rule += "--:|" + ("--:|" if args.baseline else "")
    print(head)
    print(rule)
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="plastic-plan-speed-") as tmp:
        for mix, seed in sets:
            trace = Path(tmp) / f"{mix}-{seed}.json"
            write_wfcommons((wide_tasks if mix == "wide" else mixed_tasks)(args.n, seed), trace)
            for mode in ("all", "none"):
                ours, ours_cpu = timed(REPO, trace, mode, args.runs)
                worst = max(worst, ours)
                row = f"| {mix} seed {seed} | {mode} | {ours:.3f} | {ours_cpu:.3f} |"
                if args.baseline:
                    base, base_cpu = timed(args.baseline, trace, mode, args.runs)
                    same = plan_json(REPO, trace, mode, Path(tmp) / "a.json") == plan_json(
                        args.baseline, trace, mode, Path(tmp) / "b.json")
                    row += f" {base:.3f} | {base_cpu:.3f} | {'yes' if same else 'NO'} |"
                if args.instructions:
                    row += f" {instructions(REPO, trace, mode) / 1e9:.3f} |"
                    if args.baseline:
                        row += f" {instructions(args.baseline, trace, mode) / 1e9:.3f} |"
                print(row, flush=True)
    print(f"slowest plastic median: {worst:.3f} s (target < 1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
