"""Crash-resume with adoption against crash-resume that kills and reruns (the baseline).

`plastic run` a scatter of N steps that each sleep S seconds, SIGKILL it once every scattered step
is running (and has run for `--kill-after` seconds), then `plastic run --resume`: once with the
default adopt window (the old leader's running tasks finish and their work is kept), once with
`--adopt-seconds 0` (they are killed and run again, what plastic did before adoption).  For each:
the whole run's wall time (first start to the resume's end), the resume alone, how many of the
old leader's tasks were adopted or killed, the task-seconds thrown away (time the killed tasks
had run), and whether the output is right.

    python bench/resume_adoption.py                 # 4 steps x 30 s, killed 10 s into them
    python bench/resume_adoption.py --rounds 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import decisions, machine

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "tests" / "watch" / "data" / "slow-scatter" / "slow-scatter.cwl"


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("PLASTIC_REDIS_URL", None)
    return e


def one(work: Path, steps: int, seconds: int, kill_after_s: float, adopt: bool) -> dict:
    job = work / "job.yml"
    job.write_text(f"items: [{', '.join(str(i) for i in range(1, steps + 1))}]\nseconds: {seconds}\n")
    run_dir, out = work / "run", work / "out"
    cmd = [sys.executable, "-m", "plastic", "run", str(WORKFLOW), str(job), "--outdir", str(out),
           "--run-dir", str(run_dir), "--quiet"]
    started = time.time()
    with open(work / "first.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=work, env=env(), stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 180
        while True:
            running = [d for d in decisions(run_dir) if d.get("kind") == "running"]
            if len(running) >= steps:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the first run ended or stalled before {steps} tasks ran; see {work}")
            time.sleep(0.2)
        time.sleep(kill_after_s)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    killed_at = time.time()
    time.sleep(1.0)  # the embedded Redis writes its AOF and goes
    more = [] if adopt else ["--adopt-seconds", "0"]
    t0 = time.time()
    res = subprocess.run([sys.executable, "-m", "plastic", "run", "--resume", str(run_dir), "--quiet", *more],
                         cwd=work, env=env(), capture_output=True, text=True, timeout=600, check=False)
    ended = time.time()
    expected = "".join(f"item {i}\n" for i in range(1, steps + 1))
    ok = res.returncode == 0 and (out / "joined.txt").is_file() and (out / "joined.txt").read_text() == expected
    ds = decisions(run_dir)
    running_at = {d["task"]: d["t"] for d in ds if d.get("kind") == "running" and "t" in d}
    kills = {d["task"] for d in ds if d.get("kind") == "orphan_kill"}
    adopted = {d["task"] for d in ds if d.get("kind") == "orphan_adopted"}
    lost_s = sum(max(killed_at - running_at[t], 0.0) for t in kills if t in running_at)
    return {"mode": "adopt (default)" if adopt else "kill and rerun (--adopt-seconds 0)", "ok": ok,
            "rc": res.returncode, "whole_run_s": ended - started, "resume_s": ended - t0,
            "adopted": len(adopted), "killed": len(kills), "task_s_thrown_away": lost_s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=30, help="Each step sleeps this long (default 30).")
    ap.add_argument("--kill-after", type=float, default=10.0,
                    help="SIGKILL this long after every step is running (default 10 s).")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", type=Path, help="Also write the rows here.")
    args = ap.parse_args()
    rows = []
    for r in range(args.rounds):
        for adopt in (True, False):
            with tempfile.TemporaryDirectory(prefix="plastic-resume-bench-") as tmp:
                row = one(Path(tmp), args.steps, args.seconds, args.kill_after, adopt)
            row["round"] = r + 1
            rows.append(row)
            print(f"  round {r + 1} {row['mode']}: rc {row['rc']}, {row['whole_run_s']:.1f} s", flush=True)
    print(f"\nresume with adoption vs kill-and-rerun: {args.steps} steps x {args.seconds} s, "
          f"SIGKILL {args.kill_after:g} s after all were running")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine()}")
    print(f"{'mode':38} {'round':>5} {'ok':>4} {'whole run s':>11} {'resume s':>9} {'adopted':>7} "
          f"{'killed':>6} {'task-s thrown away':>18}")
    for row in rows:
        print(f"{row['mode']:38} {row['round']:>5} {'yes' if row['ok'] else 'NO':>4} {row['whole_run_s']:>11.1f} "
              f"{row['resume_s']:>9.1f} {row['adopted']:>7} {row['killed']:>6} {row['task_s_thrown_away']:>18.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
