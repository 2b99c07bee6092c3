"""Short spot notices: does a task that can end inside the notice's window get to end?

A notice's margin is the time the JobBook keeps between a task's expected end and its machine's
termination (plastic.core.book.notices).  It was 30 s whatever the window, so a notice shorter
than 30 s (the local cluster's `--notice-seconds 10`) killed every task at once, even one about to
end; it is now 30 s or a quarter of the window, whichever is less (AWS's 120 s: 30 s, unchanged).

Everything is real: `plastic run` (elastic, the default) of a scatter of `--tasks` steps that each
sleep `--task-seconds` (1 vCPU, preempt: true) on the local cluster with random spot interruptions,
one Redis for all the runs of a code version so that the tool's runtime history (what the book's
estimates come from) is there from the first task: a calm run first, then one run per seed with
`--interrupt-rate` and `--notice-seconds`.  Each run's outputs are checked and its report read:
notices, tasks killed at a notice, tasks let run on through one, requeues, makespan, cost.

    python bench/notice_margin.py                       # seeds 1-6, 10 s notices
    python bench/notice_margin.py --plastic-from DIR    # the same runs with plastic imported from DIR
                                                        # (a worktree of an older commit: the baseline)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]

NAP_TOOL = """\
cwlVersion: v1.2
class: CommandLineTool
baseCommand: [sh, -c, 'sleep "$0"; echo "nap $1 done"']
inputs:
  seconds: {type: int, inputBinding: {position: 1}}
  index: {type: int, inputBinding: {position: 2}}
stdout: nap.txt
outputs:
  done: stdout
"""

SCATTER = """\
cwlVersion: v1.2
class: Workflow
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
requirements:
  ScatterFeatureRequirement: {}
inputs:
  seconds: int
  index: int[]
outputs:
  naps:
    type: File[]
    outputSource: nap/done
steps:
  nap:
    run: nap.cwl
    scatter: index
    in: {seconds: seconds, index: index}
    out: [done]
    hints:
      plastic:Plasticity: {vcpus: 1, vram: 256, preempt: true}
"""


def run_once(label: str, wf: Path, job: Path, tmp: Path, redis_url: str, tasks: int, env: dict[str, str],
             *extra: str) -> dict[str, Any]:
    where = tmp / "".join(c if c.isalnum() else "-" for c in label)
    cmd = [sys.executable, "-m", "plastic", "run", str(wf), str(job), "--redis", redis_url,
           "--outdir", str(where / "out"), "--run-dir", str(where / "run"), "--report", str(where / "report.json"),
           "--quiet", *extra]
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=HERE, timeout=900, check=False)
    row: dict[str, Any] = {"label": label, "rc": res.returncode, "wall_s": time.monotonic() - t0}
    if res.returncode == 0:
        naps = json.loads(res.stdout)["naps"]
        lines = sorted(Path(f["path"]).read_text().strip() for f in naps)
        row["outputs_ok"] = lines == sorted(f"nap {i} done" for i in range(tasks))
    else:
        row["error"] = res.stderr[-1500:]
    report = where / "report.json"
    row["report"] = json.loads(report.read_text()) if report.exists() else {}
    print(f"  {label}: rc {res.returncode}, {row['wall_s']:.0f} s" + ("" if res.returncode == 0 else
                                                                    f"\n{res.stderr[-1500:]}"),
          file=sys.stderr, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--task-seconds", type=int, default=12)
    ap.add_argument("--interrupt-rate", type=float, default=4.0, help="per spot agent per minute (default 4)")
    ap.add_argument("--notice-seconds", type=float, default=10.0)
    ap.add_argument("--plastic-from", type=Path, default=None, help="import plastic from this checkout")
    ap.add_argument("--json", type=Path, help="also write every row here")
    args = ap.parse_args()
    source = (args.plastic_from or HERE).resolve()
    sys.path.insert(0, str(source))
    sys.path.insert(1, str(HERE))
    from bench.common import machine
    from plastic.store import start_embedded

    env = dict(os.environ, PYTHONPATH=str(source))
    env.pop("PLASTIC_REDIS_URL", None)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="plastic-notice-margin-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "nap.cwl").write_text(NAP_TOOL)
        (tmp / "naps.cwl").write_text(SCATTER)
        job = tmp / "job.json"
        job.write_text(json.dumps({"seconds": args.task_seconds, "index": list(range(args.tasks))}))
        server = start_embedded(tmp / "redis", transport="tcp")
        try:
            rows = [run_once("calm (history)", tmp / "naps.cwl", job, tmp, server.url, args.tasks, env)]
            if rows[0]["rc"] != 0:
                raise SystemExit("the calm run failed: nothing to measure")
            for seed in args.seeds:
                rows.append(run_once(f"seed {seed}", tmp / "naps.cwl", job, tmp, server.url, args.tasks, env,
                                     "--interrupt-rate", f"{args.interrupt_rate:g}",
                                     "--notice-seconds", f"{args.notice_seconds:g}", "--seed", str(seed)))
        finally:
            server.stop()
    print(f"\nshort notices: plastic from {source}; {args.tasks} tasks of {args.task_seconds} s, "
          f"interruptions {args.interrupt_rate:g}/spot agent/min, {args.notice_seconds:g} s notices")
    print(f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {machine()}; {time.monotonic() - started:.0f} s wall")
    print(f"{'run':<16}{'done':>5}{'makespan s':>11}{'cost USD':>10}{'notices':>8}{'killed':>7}{'let end':>8}"
          f"{'requeues':>9}")
    totals = {"notices": 0, "drain_kills": 0, "let_finish": 0, "requeues": 0}
    for row in rows:
        r = row["report"]
        done = row["rc"] == 0 and row.get("outputs_ok") and r.get("outcome") == "succeeded"
        print(f"{row['label']:<16}{'yes' if done else 'NO':>5}{r.get('makespan_s', float('nan')):>11.1f}"
              f"{r.get('cost_usd', float('nan')):>10.6f}{r.get('notices', 0):>8}{r.get('drain_kills', 0):>7}"
              f"{r.get('let_finish', 0):>8}{r.get('requeues', 0):>9}")
        if not row["label"].startswith("calm"):
            for key in totals:
                totals[key] += r.get(key, 0)
    print(f"{'seeds in all':<16}{'':>5}{'':>11}{'':>10}{totals['notices']:>8}{totals['drain_kills']:>7}"
          f"{totals['let_finish']:>8}{totals['requeues']:>9}")
    print("killed / let end: tasks a notice killed at once / let run on through it")
    if args.json:
        args.json.write_text(json.dumps({"source": str(source), "rows": rows}, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
