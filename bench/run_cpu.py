"""The CPU one small `plastic run` costs, with setuptools importable (the baseline) and without.

`make test` is CPU-bound on two cores, and most of its CPU goes to `plastic run`s, each a Toil leader and
one Toil worker process per job.  Toil imports setuptools in every one of them only to check cwltool's
version (`toil.cwl.check_cwltool_version`), and does without it when it is missing; the Makefile's venv
therefore drops setuptools once plastic is installed.  This bench measures what that saves.

The run is the scatter-gather example on two parts (tests/run/data/scatter-gather-two-parts.yml: 5 tasks,
9 Toil worker processes) on its embedded Redis and local cluster.  Its CPU is the user + system time of
every process it started, each reaped by its parent (`getrusage(RUSAGE_CHILDREN)` after the run).
The baseline puts setuptools back on the path of every process (`PYTHONPATH`: a copy pip installs into a
temporary directory, the version Python 3.11's venv brings); the two alternate, round after round.

    python bench/run_cpu.py              # 3 rounds
    python bench/run_cpu.py --rounds 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import machine, plastic_env  # noqa: E402

WORKFLOW = REPO / "cwl-examples" / "scatter-gather" / "scatter-gather.cwl"
JOB = REPO / "tests" / "run" / "data" / "scatter-gather-two-parts.yml"
BASELINE_SETUPTOOLS = "setuptools==65.5.0"  # what `python3.11 -m venv` installs


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(tmp: Path, name: str, extra_path: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of one `plastic run`; exits with its log's end when it fails."""
    env = plastic_env()
    env.pop("PYTHONPATH", None)
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    run = tmp / name
    cmd = [sys.executable, "-m", "plastic", "run", str(WORKFLOW), str(JOB), "--run-dir", str(run / "run"),
           "--outdir", str(run / "out"), "--quiet"]
    before, t0 = children_cpu_s(), time.monotonic()
    with open(tmp / f"{name}.log", "wb") as log:
        res = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=log, check=False)
    wall, cpu = time.monotonic() - t0, children_cpu_s() - before
    if res.returncode != 0:
        raise SystemExit(f"plastic run failed ({res.returncode}):\n" + (tmp / f"{name}.log").read_text()[-3000:])
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if importlib.util.find_spec("setuptools") is not None:
        raise SystemExit(f"setuptools is importable in {sys.prefix}: run this in the venv `make` builds")
    with tempfile.TemporaryDirectory(prefix="plastic-run-cpu-") as tmp_name:
        tmp = Path(tmp_name)
        extra = tmp / "with-setuptools"
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(extra), BASELINE_SETUPTOOLS],
                       check=True)
        figures: dict[str, list[tuple[float, float]]] = {"with setuptools (baseline)": [], "without (make's venv)": []}
        for r in range(args.rounds):
            for (label, runs), path in zip(figures.items(), (extra, None), strict=True):
                runs.append(one_run(tmp, f"r{r}-{'with' if path else 'without'}", path))
                print(f"round {r + 1}: {label}: wall {runs[-1][0]:.1f} s, CPU {runs[-1][1]:.1f} s", flush=True)
    print(f"\n{dt.date.today()}, {machine()}; scatter-gather on two parts, {args.rounds} round(s), medians")
    print("| venv | wall s | CPU s (all processes) |")
    print("|---|--:|--:|")
    base = statistics.median(cpu for _, cpu in figures["with setuptools (baseline)"])
    for label, runs in figures.items():
        cpu = statistics.median(c for _, c in runs)
        print(f"| {label} | {statistics.median(w for w, _ in runs):.1f} | {cpu:.1f} ({cpu / base:.2f}x) |")


if __name__ == "__main__":
    main()
