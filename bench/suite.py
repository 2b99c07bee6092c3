"""The test suite as CI meets it: `make test` on a clean clone, timed, and line coverage of plastic/.

    python bench/suite.py [--ref REF] [--runs N] [--burner-on RUN ...] [--workdir DIR] [--clones DIR]
    python bench/suite.py --coverage [--ref REF] [--pytest-args "..."]

Each run clones this repository at REF (default HEAD) into a new directory, as CI does, and runs
`make test` there with nothing started beforehand (the clone makes its own .venv, Redis servers and
clusters); it prints one row a run: wall time of `make test` as a whole and of pytest alone, tests
passed/failed/skipped, how busy the machine's cores were, and the failed tests' ids.  `--burner-on 3`
keeps one core busy with a spinning process during the third run (the issue's "one core kept busy").
The per-test durations of every run are kept in the work directory (junit XML) and summed per test
directory.

`--coverage` runs the suite once under coverage.py (subprocesses too: `patch = subprocess`, so the
`plastic run`, local cluster, agent-watch and Toil leader processes the tests start are measured) and
prints line coverage of plastic/ per package, with make test's pytest-xdist options unless
`--pytest-args` says otherwise (the baseline of 2026-11-28 was measured with "-n 3 --dist loadfile").

The clones (suite-clone-N) go to a folder that holds nothing else (--clones, default
plastic-suite-clones in the system's temporary directory), so a clone has what a user's fresh clone
has and nothing beside it: a test that reached outside the repository for data would fail or skip
there.  They stay until the next run of the same number; logs, junit XML and figures go to the work
directory (--workdir, default ../suite-bench); figures go to BENCHMARKS.md by hand, with the machine
and the date.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# where the clones go unless --clones says otherwise: a folder of their own, with no sibling data for a
# clone to find (a real directory: through a link cwltest sees the tool's path differ from its resolved
# working directory and passes a file:// URI)
CLONES = Path(tempfile.gettempdir()) / "plastic-suite-clones"
CLONE_PREFIX = "suite-clone-"
COVERAGE_PIN = "coverage==7.17.5"
COVERAGE_RC = """[run]
source_pkgs = plastic
parallel = true
patch = subprocess, _exit
sigterm = true
data_file = {data}
"""


@dataclass
class RunFigures:
    run: int
    ref: str
    wall_s: float
    pytest_s: float
    rc: int
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    busy: float = 0.0  # share of both cores' time not idle, over the run
    burner: bool = False
    failures: list[str] = field(default_factory=list)
    by_dir: Counter = field(default_factory=Counter)


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all cores, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def clone(ref: str, into: Path) -> str:
    if into.exists():
        shutil.rmtree(into)
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(into)], check=True)
    subprocess.run(["git", "-C", str(into), "checkout", "-q", ref], check=True)
    return subprocess.run(["git", "-C", str(into), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def clones_folder(where: Path) -> Path:
    """`where`, made if need be, after checking that it holds nothing but clones of this bench."""
    where = where.resolve()
    where.mkdir(parents=True, exist_ok=True)
    others = sorted(p.name for p in where.iterdir() if not p.name.startswith(CLONE_PREFIX))
    if others:
        sys.exit(f"{where} holds more than this bench's clones ({', '.join(others)}): a clone there could read "
                 f"them; give --clones an empty folder")
    return where


def burn() -> None:  # a child process: one core kept busy until it is terminated
    os.sched_setaffinity(0, {0})
    while True:
        pass


def read_junit(path: Path, figures: RunFigures) -> None:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    for suite in suites:
        figures.pytest_s += float(suite.get("time", 0))
        for case in suite.findall("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            parts = case.get("classname", "").split(".")
            figures.by_dir["/".join(parts[:2]) if len(parts) > 2 else "tests/*.py"] += float(case.get("time", 0))
            if case.find("failure") is not None or case.find("error") is not None:
                figures.failed += 1
                figures.failures.append(name)
            elif case.find("skipped") is not None:
                figures.skipped += 1
            else:
                figures.passed += 1


def one_run(n: int, ref: str, workdir: Path, burner: bool, clones: Path) -> RunFigures:
    where = clones / f"{CLONE_PREFIX}{n}"
    sha = clone(ref, where)
    junit = workdir / f"run-{n}.xml"
    log = workdir / f"run-{n}.log"
    env = {**os.environ, "PYTEST_ADDOPTS": f"--junitxml={junit}"}
    spinner = multiprocessing.Process(target=burn, daemon=True) if burner else None
    if spinner:
        spinner.start()
    busy0, total0 = cpu_times()
    t0 = time.monotonic()
    try:
        with open(log, "w") as out:
            rc = subprocess.run(["make", "test"], cwd=where, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    finally:
        if spinner:
            spinner.terminate()
            spinner.join()
    wall = time.monotonic() - t0
    busy1, total1 = cpu_times()
    figures = RunFigures(n, sha, wall, 0.0, rc, busy=(busy1 - busy0) / max(total1 - total0, 1), burner=burner)
    if junit.exists():
        read_junit(junit, figures)
    return figures


def coverage_run(ref: str, workdir: Path, pytest_args: str | None, clones: Path) -> dict[str, tuple[int, int]]:
    where = clones / f"{CLONE_PREFIX}coverage"
    clone(ref, where)
    data = workdir / "coverage"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    rc_file = data / "coveragerc"
    rc_file.write_text(COVERAGE_RC.format(data=data / ".coverage"))
    subprocess.run(["make", ".venv/.installed-test", "test-services"], cwd=where, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    py = where / ".venv" / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", COVERAGE_PIN], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    args = (pytest_args or "-n 3 --dist loadgroup --no-loadscope-reorder").split()
    env = {**os.environ, "COVERAGE_RCFILE": str(rc_file), "PATH": f"{where / '.venv' / 'bin'}{os.pathsep}"
           f"{os.environ.get('PATH', '')}", "PYTHONHASHSEED": "0"}
    with open(data / "pytest.log", "w") as out:
        subprocess.run([str(py), "-m", "coverage", "run", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                       cwd=where, env=env, stdout=out, stderr=subprocess.STDOUT)
    for step in (["combine", "-q"], ["json", "-q", "-o", str(data / "coverage.json")]):
        subprocess.run([str(py), "-m", "coverage", *step], cwd=where, env=env, check=True)
    return per_package(json.loads((data / "coverage.json").read_text()))


def per_package(doc: dict) -> dict[str, tuple[int, int]]:
    """package -> (covered lines, statements), with "plastic" for the whole."""
    totals: dict[str, list[int]] = {}
    for path, f in doc["files"].items():
        rel = path.split("plastic/", 1)[1] if "plastic/" in path else path
        parts = rel.split("/")
        package = "plastic/" + (parts[0] if len(parts) > 1 else "(top level)")
        for key in (package, "plastic"):
            t = totals.setdefault(key, [0, 0])
            t[0] += f["summary"]["covered_lines"]
            t[1] += f["summary"]["num_statements"]
    return {k: (v[0], v[1]) for k, v in sorted(totals.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default="HEAD", help="the commit to clone (default HEAD)")
    ap.add_argument("--runs", type=int, default=1, help="clean-clone `make test` runs in a row (default 1)")
    ap.add_argument("--burner-on", type=int, action="append", default=[], metavar="RUN",
                    help="keep one core busy during this run (1-based; repeatable)")
    ap.add_argument("--coverage", action="store_true", help="one run under coverage.py instead, per package")
    ap.add_argument("--pytest-args", help="with --coverage: pytest's arguments (default: -n 3 --dist loadgroup --no-loadscope-reorder)")
    ap.add_argument("--workdir", type=Path, default=REPO.parent / "suite-bench")
    ap.add_argument("--clones", type=Path, default=CLONES,
                    help="where the clones go: a folder holding nothing else (default: %(default)s)")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    clones = clones_folder(args.clones)
    ref = subprocess.run(["git", "-C", str(REPO), "rev-parse", args.ref], capture_output=True, text=True,
                         check=True).stdout.strip()
    if args.coverage:
        table = coverage_run(ref, args.workdir, args.pytest_args, clones)
        for package, (covered, statements) in per_package_rows(table):
            print(f"| {package} | {statements} | {covered} | {100 * covered / statements:.1f}% |")
        return 0
    print("| run | commit | burner | make test | pytest | passed | failed | skipped | cores busy |")
    print("|--:|---|---|--:|--:|--:|--:|--:|--:|")
    bad = 0
    for n in range(1, args.runs + 1):
        f = one_run(n, ref, args.workdir, n in args.burner_on, clones)
        bad += f.rc != 0
        print(f"| {n} | {f.ref} | {'one core' if f.burner else '-'} | {f.wall_s / 60:.1f} min | "
              f"{f.pytest_s / 60:.1f} min | {f.passed} | {f.failed} | {f.skipped} | {100 * f.busy:.0f}% |",
              flush=True)
        for name in f.failures:
            print(f"|   | failed: {name} |", flush=True)
        (args.workdir / f"run-{n}-by-dir.json").write_text(json.dumps(dict(f.by_dir.most_common()), indent=1))
    return 1 if bad else 0


def per_package_rows(table: dict[str, tuple[int, int]]) -> list[tuple[str, tuple[int, int]]]:
    return [("plastic", table["plastic"]), *((k, v) for k, v in table.items() if k != "plastic")]


if __name__ == "__main__":
    sys.exit(main())
