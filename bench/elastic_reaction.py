"""How soon the elastic cluster answers work issued at run time: the bundled dynamic scatter
(`cwl-examples/dynamic-scatter`: split a file, sort each chunk on spot, merge) through `plastic run`.

Per run it prints: from the scatter's first job issued to the first node asked for; how many of
the scatter's tasks ran on spot nodes; the makespan; the saving against all on-demand; the wall time
of the whole command.  Rounds alternate between this checkout and, with --baseline DIR, the plastic
package of another checkout (a worktree of an older commit), so both see the machine alike.

    python bench/elastic_reaction.py                          # 4 rounds of this checkout
    python bench/elastic_reaction.py --baseline /tmp/base     # and of /tmp/base, alternating
    python bench/elastic_reaction.py --parts 24               # a wider scatter
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
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
EXAMPLE = HERE / "cwl-examples" / "dynamic-scatter"


def one_run(plastic_from: Path, work: Path, job: Path, extra: list[str]) -> dict[str, float]:
    from bench.common import decisions as read_decisions

    run_dir = work / "run"
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    env["PYTHONPATH"] = str(plastic_from)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "plastic", "run", str(EXAMPLE / "dynamic-scatter.cwl"), str(job),
                           "--run-dir", str(run_dir), *extra], cwd=work, env=env, capture_output=True, text=True)
    wall_s = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"plastic run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    decisions = read_decisions(run_dir)
    report = json.loads((run_dir / "report.json").read_text())
    scatter_issued = [d["t"] for d in decisions if d["kind"] == "issued" and d.get("preempt") != "false"]
    requested = [d["t"] for d in decisions if d["kind"] == "node_requested"]
    scatter_jobs = {d["job_id"] for d in decisions if d["kind"] == "issued" and d.get("preempt") != "false"}
    on_spot = {d["job_id"] for d in decisions if d["kind"] == "placed" and d["job_id"] in scatter_jobs
               and d["preemptible"]}
    return {"issue_to_request_s": (min(requested) - min(scatter_issued)) if requested else float("nan"),
            "scatter_on_spot": len(on_spot), "scatter_tasks": len(scatter_jobs),
            "makespan_s": report["makespan_s"], "saved_pct": 100 * report["savings"], "wall_s": wall_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--parts", type=int, default=12, help="the scatter's width (the example's job: 12)")
    ap.add_argument("--baseline", type=Path, default=None, help="a checkout whose plastic runs in between")
    ap.add_argument("extra", nargs="*", help="more options for plastic run (after --)")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from bench.common import machine

    print(machine())
    sides = [("this checkout", HERE)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in sides}
    with tempfile.TemporaryDirectory(prefix="elastic-reaction-") as tmp:
        job = Path(tmp) / "job.yml"
        job.write_text(f"text: {{class: File, path: {EXAMPLE / 'input.txt'}}}\nparts: {args.parts}\n")
        for i in range(args.rounds):
            for name, where in (sides if i % 2 == 0 else sides[::-1]):
                work = Path(tmp) / f"{name.replace(' ', '-')}-{i}"
                work.mkdir()
                r = one_run(where, work, job, args.extra)
                results[name].append(r)
                print(f"round {i + 1} {name:>13}: first node asked {r['issue_to_request_s']:.1f} s after the scatter "
                      f"was issued; {r['scatter_on_spot']}/{r['scatter_tasks']} scatter tasks on spot; makespan "
                      f"{r['makespan_s']:.1f} s; saved {r['saved_pct']:.1f}%; wall {r['wall_s']:.1f} s", flush=True)
    print()
    print("| side | runs | issue -> node asked (median s) | scatter tasks on spot (median) | makespan (median s) "
          "| saved (median %) | wall (median s) |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for name, rs in results.items():
        def med(key: str) -> float:
            return statistics.median(r[key] for r in rs)
        print(f"| {name} | {len(rs)} | {med('issue_to_request_s'):.1f} | {med('scatter_on_spot'):.0f}"
              f"/{rs[0]['scatter_tasks']} | {med('makespan_s'):.1f} | {med('saved_pct'):.1f} | {med('wall_s'):.1f} |")


if __name__ == "__main__":
    main()
