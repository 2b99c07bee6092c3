"""CWL v1.2 conformance through Toil: plastic's batch system against single_machine.

Runs the CWL v1.2 conformance suite (default: its copy in the repository, ``tests/data/cwl-v1.2``) with
cwltest, once through ``toil-cwl-runner --batchSystem plastic --plasticMaster URL`` on a local
cluster and once through ``toil-cwl-runner --batchSystem single_machine``, with the same runner
flags, one pass after the other, and prints per batch system the passed / failed / unsupported
counts, the total and the wall time of the pass, then the tests that pass on single_machine but
fail on plastic.  Exit status 1 when plastic passes fewer tests than single_machine.

    python bench/conformance.py                          # the whole suite, both batch systems
    python bench/conformance.py --tags required -j2      # the 84 required tests
    python bench/conformance.py --only plastic -n 1-5    # the first five tests, plastic only

Runner flags (both batch systems, see RUNNER_FLAGS): ``--no-container`` (this machine has a Docker
client but no engine: without the flag every test with a DockerRequirement *hint* fails trying to
pull; with it hints are ignored and a DockerRequirement under ``requirements`` exits 33, which
cwltest counts as "unsupported" for non-required tests), ``--retryCount 0`` (a failing step fails
the test at once: no back-off, and retries cannot hide a flaky batch system), ``--clean always``
and ``--disableProgress``.  cwltest adds ``--outdir`` and ``--quiet``.

Cluster (CLUSTER_SPEC): one reliable agent with 4 cpus and 16 GiB (the largest request in the
suite is 2 cores and 1000 MiB; 4 cpus let two concurrent tests (-j2) each run a 2-core step) and
two preemptible 2-cpu / 4 GiB agents.  CWL steps are not preemptible unless a step says so (only
``arv:UsePreemptible`` or ``--defaultPreemptible``), so in practice every task runs on the
reliable agent; the spot agents make the offers plastic sees look like a hybrid cluster.

``--only plastic-run`` runs the suite through ``plastic run`` itself, the command a user types: each
test is one ``plastic run TOOL JOB --outdir DIR --quiet -- RUNNER_FLAGS`` with its own local cluster,
embedded Redis and run directory (the wrapper cwltest calls is written into the pass's TMPDIR, see
``plastic_run_argv``).  Beside what ``--batchSystem plastic`` covers, this covers the lowering of the
annotations (``plastic lower``), the plan, the elastic cluster and the printing of the outputs.
``--only all`` runs the three passes.

Results come from cwltest's ``--junit-xml`` (one file per batch system in ``--junit-dir``); a
``summary.json`` next to them holds the counts and every test's outcome.  Each pass runs with its
own TMPDIR under the junit directory (job stores, outdirs, Toil work dirs), removed afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

try:  # a PYTHONPATH that names another checkout (a snapshot) wins over this one
    import plastic
except ImportError:  # pragma: no cover - run from a bare checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import plastic

from plastic.local.handle import LocalCluster

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = REPO / "tests" / "data" / "cwl-v1.2"
BATCH_SYSTEMS = ("plastic", "single_machine")
PLASTIC_RUN = "plastic-run"
SYSTEMS = {"both": BATCH_SYSTEMS, "all": (*BATCH_SYSTEMS, PLASTIC_RUN), "plastic": ("plastic",),
           "single_machine": ("single_machine",), PLASTIC_RUN: (PLASTIC_RUN,)}
RUNNER_FLAGS = ("--no-container", "--retryCount", "0", "--clean", "always", "--disableProgress")
CLUSTER_SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 4, "ram_mib": 16384, "preemptible": False},
    {"name": "burst", "count": 2, "cpus": 2, "ram_mib": 4096, "preemptible": True},
]}
PASSED, FAILED, UNSUPPORTED = "passed", "failed", "unsupported"
STDERR_TAIL = 3000


@dataclass
class TestOutcome:
    id: str
    outcome: str  # passed | failed | unsupported
    seconds: float
    message: str = ""
    stderr_tail: str = ""  # the runner's stderr (failures only; cwltest passes --quiet to it)


@dataclass
class PassResult:
    batch_system: str
    wall_s: float
    returncode: int
    junit: str
    tests: list[TestOutcome] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(t.outcome == outcome for t in self.tests)

    @property
    def total(self) -> int:
        return len(self.tests)

    def by_id(self) -> dict[str, TestOutcome]:
        return {t.id: t for t in self.tests}


# ------------------------------------------------------------------ the test list


def _expand(numbers: str) -> list[int]:
    """cwltest's -n syntax: "1,3-6,9" -> [1, 3, 4, 5, 6, 9] (1-based, in the order given)."""
    out: list[int] = []
    for part in numbers.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return out


def suite_ids(suite: Path, tags: str | None = None) -> list[str]:
    """The ids of the suite's tests (with one of `tags`), in cwltest's numbering (1-based)."""
    out = subprocess.run([_tool("cwltest"), "--test", str(suite / "conformance_tests.yaml"), "-l",
                          *(["--tags", tags] if tags else [])],
                         cwd=suite, capture_output=True, text=True, check=True).stdout
    return [m.group(1) for m in re.finditer(r"^\[\d+\] ([^:\s]+):", out, re.MULTILINE)]


def selected_ids(suite: Path, tags: str | None = None, numbers: str | None = None) -> list[str]:
    """The ids of the tests cwltest runs for these options, in the order of its results.

    cwltest (2.7) names the i-th result after the i-th test of the tag-filtered list, not after the
    i-th *selected* test, so with -n its junit names are wrong; results come in selection order,
    which is what this list gives."""
    return _select(suite_ids(suite, tags), numbers)


def _select(listed: Sequence[str], numbers: str | None) -> list[str]:
    if numbers is None:
        return list(listed)
    return [listed[n - 1] for n in _expand(numbers) if 1 <= n <= len(listed)]


_LOGGED = re.compile(r"^Test (\d+) (failed|timed out|interrupted): .*\n(?:.*\n)?(.*)$", re.MULTILINE)


def logged_failures(log_text: str, listed: Sequence[str]) -> dict[str, str]:
    """Test id -> cwltest's one-line reason, for every "Test N failed|timed out" in its log.

    Needed because a should_fail test that exits 0 fails without a message, and junit_xml then
    writes no <failure> element: in the XML it looks passed.  N numbers the tag-filtered list."""
    out: dict[str, str] = {}
    for m in _LOGGED.finditer(log_text):
        n = int(m.group(1))
        if 1 <= n <= len(listed):
            reason = "timed out" if m.group(2) == "timed out" else m.group(3).strip()
            out.setdefault(listed[n - 1], reason)
    return out


# ------------------------------------------------------------------ running


def _tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else (shutil.which(name) or name)


def runner_env(tmpdir: Path | None = None) -> dict[str, str]:
    """The environment of cwltest and the runners: the venv's bin first on PATH (Toil's workers
    find _toil_worker there) and the checkout plastic is imported from first on PYTHONPATH (so a
    snapshot given on PYTHONPATH is what the runners and the cluster run)."""
    env = dict(os.environ)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    root = str(Path(plastic.__file__).resolve().parents[1])
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join([root, *parts])
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return env


def cwltest_command(suite: Path, batch_system: str, junit: Path, *, master_url: str | None = None,
                    tags: str | None = None, jobs: int = 2, timeout: int = 180,
                    numbers: str | None = None, verbose: bool = False,
                    runner: Path | None = None) -> list[str]:
    tool = _tool("toil-cwl-runner") if runner is None else str(runner)
    cmd = [_tool("cwltest"), "--test", str(suite / "conformance_tests.yaml"), "--tool",
           tool, f"-j{jobs}", "--timeout", str(timeout), "--junit-xml", str(junit),
           "--classname", batch_system]
    if tags:
        cmd += ["--tags", tags]
    if numbers:
        cmd += ["-n", numbers]
    if verbose:
        cmd += ["--verbose"]
    if batch_system == PLASTIC_RUN:
        return [*cmd, "--", *RUNNER_FLAGS]
    cmd += ["--", "--batchSystem", batch_system, *RUNNER_FLAGS]
    if batch_system == "plastic":
        if not master_url:
            raise ValueError("the plastic batch system needs a master URL")
        cmd += ["--plasticMaster", master_url]
    return cmd


def plastic_run_argv(argv: Sequence[str], run_root: Path) -> list[str]:
    """cwltest's call of a CWL runner (`[FLAGS] --outdir=DIR --quiet TOOL [JOB]`) as `plastic run`.

    What comes before `--outdir=` are the runner flags (RUNNER_FLAGS, some with values): they go to
    Toil after `--`.  Each call gets its own run directory under `run_root` (the default,
    .plastic/runs under the working directory, would be inside the suite)."""
    at = next((i for i, arg in enumerate(argv) if arg.startswith("--outdir=")), None)
    if at is None:
        raise ValueError(f"no --outdir= in the runner's arguments: {list(argv)}")
    flags, outdir = list(argv[:at]), argv[at].split("=", 1)[1]
    positional = [arg for arg in argv[at + 1:] if arg != "--quiet"]
    run_root.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=run_root)) / "run"
    return [_tool("plastic"), "run", *positional, "--outdir", outdir, "--quiet", "--run-dir", str(run_dir),
            "--", *flags]


def write_plastic_runner(directory: Path) -> Path:
    """The executable cwltest is given as its --tool for the plastic-run pass."""
    path = directory / "plastic-run-as-cwl-runner"
    path.write_text(f"#!{sys.executable}\n"
                    "import os, sys\n"
                    "from pathlib import Path\n"
                    "from bench.conformance import plastic_run_argv\n"
                    "argv = plastic_run_argv(sys.argv[1:], Path(os.environ['TMPDIR']) / 'plastic-runs')\n"
                    "os.execv(argv[0], argv)\n")
    path.chmod(0o755)
    return path


def parse_junit(path: Path, ids: Sequence[str] | None = None) -> list[TestOutcome]:
    """cwltest's junit XML -> one outcome per test: failure -> failed, skipped -> unsupported.

    `ids` (from selected_ids) renames the cases by position; without it the `file` attribute
    (cwltest puts the test id there) names them."""
    cases = ET.parse(path).getroot().iter("testcase")
    out: list[TestOutcome] = []
    for i, case in enumerate(cases):
        if case.find("failure") is not None or case.find("error") is not None:
            node = case.find("failure") if case.find("failure") is not None else case.find("error")
            outcome, message = FAILED, (node.get("message") or node.text or "").strip()
        elif case.find("skipped") is not None:
            outcome, message = UNSUPPORTED, ""
        else:
            outcome, message = PASSED, ""
        name = ids[i] if ids is not None and i < len(ids) else (case.get("file") or case.get("name") or f"#{i + 1}")
        err = case.find("system-err")
        tail = (err.text or "")[-STDERR_TAIL:] if outcome == FAILED and err is not None else ""
        out.append(TestOutcome(name, outcome, float(case.get("time") or 0.0), message, tail))
    return out


def run_pass(suite: Path, batch_system: str, junit_dir: Path, *, master_url: str | None = None,
             tags: str | None = None, jobs: int = 2, timeout: int = 180, numbers: str | None = None,
             verbose: bool = False, log: Path | None = None) -> PassResult:
    """One cwltest run through one batch system; the TMPDIR of the run is removed afterwards.

    For plastic without `master_url`, a local cluster (CLUSTER_SPEC) is started for the run and
    its start-up counts in the wall time (about a second)."""
    junit_dir.mkdir(parents=True, exist_ok=True)
    junit = junit_dir / f"{batch_system}.xml"
    tmp = junit_dir / f"tmp-{batch_system}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    log = log or junit_dir / f"{batch_system}.log"
    env = runner_env(tmp)
    t0 = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            if batch_system == "plastic" and master_url is None:
                # the agents start Toil's workers with the cluster's environment: the same as the runner's
                with _environ(env):
                    cluster = stack.enter_context(local_cluster())
                master_url = cluster.master_url
            runner = write_plastic_runner(tmp) if batch_system == PLASTIC_RUN else None
            cmd = cwltest_command(suite, batch_system, junit, master_url=master_url, tags=tags, jobs=jobs,
                                  timeout=timeout, numbers=numbers, verbose=verbose, runner=runner)
            with open(log, "w") as fh:
                fh.write("$ " + " ".join(cmd) + "\n")
                fh.flush()
                rc = subprocess.run(cmd, cwd=suite, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False).returncode
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall = time.monotonic() - t0
    listed = suite_ids(suite, tags)
    tests = parse_junit(junit, _select(listed, numbers)) if junit.exists() else []
    logged = logged_failures(log.read_text(errors="replace"), listed)
    for t in tests:  # the log also has failures the XML does not show, and one-line reasons
        if t.id in logged:
            exit_status = re.search(r"returned non-zero exit status (\d+)", t.message)
            if exit_status:
                t.message = f"exit {exit_status.group(1)}: {logged[t.id]}"
            t.outcome, t.message = FAILED, t.message or logged[t.id]
    return PassResult(batch_system, wall, rc, str(junit), tests)


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def local_cluster(spec: Any = None) -> Iterator[LocalCluster]:
    """The conformance cluster (CLUSTER_SPEC), with the runner environment (the tasks inherit it)."""
    with LocalCluster(spec or CLUSTER_SPEC, agent_ping_timeout_s=5.0) as cluster:
        yield cluster


# ------------------------------------------------------------------ report


def regressions(plastic_pass: PassResult, reference: PassResult) -> list[TestOutcome]:
    """Tests that pass on the reference but not on plastic (plastic's outcomes)."""
    ref = reference.by_id()
    return [t for t in plastic_pass.tests if t.outcome != PASSED and ref.get(t.id) and ref[t.id].outcome == PASSED]


def table(results: Sequence[PassResult]) -> str:
    head = f"{'batch system':<16}{'passed':>8}{'failed':>8}{'unsupported':>13}{'total':>7}{'wall':>11}"
    rows = [head, "-" * len(head)]
    for r in results:
        m, s = divmod(round(r.wall_s), 60)
        rows.append(f"{r.batch_system:<16}{r.count(PASSED):>8}{r.count(FAILED):>8}{r.count(UNSUPPORTED):>13}"
                    f"{r.total:>7}{f'{m}m{s:02d}s':>11}")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", type=Path, default=DEFAULT_SUITE, help="the cwl-v1.2 checkout (default: %(default)s)")
    ap.add_argument("--tags", help="only tests with one of these tags (comma-separated), e.g. required")
    ap.add_argument("-n", dest="numbers", help="only these tests (cwltest numbers within --tags, e.g. 1-5,9)")
    ap.add_argument("-j", dest="jobs", type=int, default=2, help="tests at once (default: %(default)s)")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per test (default: %(default)s)")
    ap.add_argument("--only", choices=tuple(SYSTEMS), default="both",
                    help="both: toil-cwl-runner with plastic and with single_machine; plastic-run: `plastic run` "
                         "itself; all: the three (default: %(default)s)")
    ap.add_argument("--junit-dir", type=Path, default=Path("conformance-results"),
                    help="junit XML, logs and summary.json go here (default: %(default)s)")
    ap.add_argument("--verbose", action="store_true", help="pass --verbose to cwltest")
    args = ap.parse_args(argv)
    suite = args.suite.resolve()
    if not (suite / "conformance_tests.yaml").exists():
        print(f"no conformance_tests.yaml in {suite}", file=sys.stderr)
        return 2
    junit_dir = args.junit_dir.resolve()
    systems = SYSTEMS[args.only]
    common = {"tags": args.tags, "jobs": args.jobs, "timeout": args.timeout, "numbers": args.numbers,
              "verbose": args.verbose}
    print(f"plastic from {Path(plastic.__file__).resolve().parent}; suite {suite}; "
          f"runner flags: {' '.join(RUNNER_FLAGS)}", flush=True)
    started = dt.datetime.now().astimezone()
    results: list[PassResult] = []
    for bs in systems:
        print(f"{bs}: running ...", flush=True)
        r = run_pass(suite, bs, junit_dir, **common)
        print(f"{bs}: {r.count(PASSED)} passed, {r.count(FAILED)} failed, {r.count(UNSUPPORTED)} unsupported "
              f"of {r.total} in {r.wall_s:.0f} s (cwltest exit {r.returncode})", flush=True)
        results.append(r)
    print()
    print(table(results))
    by = {r.batch_system: r for r in results}
    worse: list[TestOutcome] = []
    for name in ("plastic", PLASTIC_RUN):
        if name not in by or "single_machine" not in by:
            continue
        worse_here = regressions(by[name], by["single_machine"])
        better = regressions(by["single_machine"], by[name])
        print(f"\npass on single_machine, not on {name}: {len(worse_here)}")
        for t in worse_here:
            print(f"  {t.id}: {t.outcome} {t.message[:200]}")
        if better:
            print(f"pass on {name}, not on single_machine: {', '.join(t.id for t in better)}")
        seen = {w.id for w in worse}
        worse += [t for t in worse_here if t.id not in seen]
    summary = {"started": started.isoformat(timespec="seconds"), "suite": str(suite), "tags": args.tags,
               "numbers": args.numbers, "jobs": args.jobs, "timeout_s": args.timeout,
               "runner_flags": list(RUNNER_FLAGS), "cluster": CLUSTER_SPEC, "machine": platform.processor() or
               platform.machine(), "cpus": os.cpu_count(), "plastic": str(Path(plastic.__file__).resolve().parent),
               "passes": [asdict(r) | {"passed": r.count(PASSED), "failed": r.count(FAILED),
                                       "unsupported": r.count(UNSUPPORTED), "total": r.total} for r in results],
               "plastic_only_failures": [t.id for t in worse]}
    (junit_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    if "single_machine" in by and any(by[n].count(PASSED) < by["single_machine"].count(PASSED)
                                      for n in ("plastic", PLASTIC_RUN) if n in by):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
