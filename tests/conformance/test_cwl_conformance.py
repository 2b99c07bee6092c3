"""The CWL v1.2 conformance tests tagged `required`, through toil-cwl-runner --batchSystem plastic
and through `plastic run` itself.

cwltest runs the 84 required tests of ../shared/cwl-v1.2 (next to the repository), two at a time:
through Toil on one local cluster (bench/conformance.py: CLUSTER_SPEC, RUNNER_FLAGS, which include
--no-container), and through `plastic run` (each test its own local cluster, Redis and run
directory; the annotations lowered, the plan, the elastic cluster, the printed outputs).  Every test
must pass except those in KNOWN_FAILURES, which fail on --batchSystem single_machine in this
environment too, each with its reason.  A failure not in the list fails this test, and so does a
listed test that now passes (update the list).

Run alone with `pytest tests/conformance` (about 5 + 8 minutes on 2 cores); deselect with
`-m "not conformance"`.  Skipped when ../shared/cwl-v1.2 is absent.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench import conformance

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO.parent / "shared" / "cwl-v1.2"
TAGS = "required"
TIMEOUT_S = 180

# test id -> why it fails on single_machine as well (same runner flags, this environment)
KNOWN_FAILURES: dict[str, str] = {
    "cwloutput_nolimit": "DockerRequirement under `requirements` (python:3-slim): with --no-container (no Docker "
                         "engine here) the worker raises UnsupportedRequirement and Toil exits 33, which cwltest "
                         "counts as a failure for a required test",
    "filename_with_hash_mark": "the input 'item #1.txt' is refused by cwltool's path check inside the Toil worker "
                               "(WorkflowException: Invalid filename ... contains illegal characters) unless "
                               "--relax-path-checks is given",
}

needs_suite = pytest.mark.skipif(not (SUITE / "conformance_tests.yaml").exists(),
                                 reason=f"the CWL v1.2 conformance suite is not at {SUITE}")


def problems(tests: list[conformance.TestOutcome], known: dict[str, str]) -> list[str]:
    """What makes the check fail: tests that did not pass and are not known failures, and known
    failures that pass now (the list must be updated)."""
    not_passed = {t.id: t for t in tests if t.outcome != conformance.PASSED}
    out = [f"{t.id}: {t.outcome} ({t.seconds:.0f} s) {t.message}\n{t.stderr_tail[-1500:]}"
           for i, t in not_passed.items() if i not in known]
    ran = {t.id for t in tests}
    out += [f"{i}: passes now; remove it from KNOWN_FAILURES ({known[i]})"
            for i in sorted(set(known) & ran - set(not_passed))]
    return out


def test_problems_catches_new_failures_and_stale_known_failures() -> None:
    outcome = conformance.TestOutcome
    tests = [outcome("a", conformance.PASSED, 1.0), outcome("b", conformance.FAILED, 2.0, "exit 1"),
             outcome("c", conformance.UNSUPPORTED, 1.0), outcome("d", conformance.PASSED, 1.0)]
    assert problems(tests, {"b": "why", "c": "why"}) == []
    found = problems(tests, {"b": "why", "d": "was broken"})
    assert len(found) == 2
    assert found[0].startswith("c: unsupported")
    assert found[1].startswith("d: passes now")


@pytest.mark.conformance
@needs_suite
def test_the_plastic_run_pass_turns_cwltests_call_into_plastic_run(tmp_path: Path) -> None:
    argv = conformance.plastic_run_argv(["--no-container", "--retryCount", "0", "--outdir=/o/x", "--quiet",
                                         "tests/t.cwl", "tests/j.json"], tmp_path / "runs")
    run_dir = Path(argv[argv.index("--run-dir") + 1])
    assert Path(argv[0]).name == "plastic"
    assert argv[1:] == ["run", "tests/t.cwl", "tests/j.json", "--outdir", "/o/x", "--quiet", "--run-dir",
                        str(run_dir), "--", "--no-container", "--retryCount", "0"]
    assert run_dir.parent.parent == tmp_path / "runs" and not run_dir.exists()
    assert conformance.plastic_run_argv(["--outdir=/o", "--quiet", "t.cwl"], tmp_path / "runs")[2:4] == \
        ["t.cwl", "--outdir"]
    with pytest.raises(ValueError, match="--outdir="):
        conformance.plastic_run_argv(["t.cwl"], tmp_path)


@pytest.mark.parametrize("system", ["plastic", conformance.PLASTIC_RUN])
def test_required_conformance_through_plastic(tmp_path: Path, system: str) -> None:
    expected = conformance.selected_ids(SUITE, TAGS)
    stale = sorted(set(KNOWN_FAILURES) - set(expected))
    assert not stale, f"KNOWN_FAILURES names tests that are not required tests of the suite: {stale}"

    t0 = time.monotonic()
    result = conformance.run_pass(SUITE, system, tmp_path, tags=TAGS, jobs=2, timeout=TIMEOUT_S)
    elapsed = time.monotonic() - t0
    log = tmp_path / f"{system}.log"
    assert [t.id for t in result.tests] == expected, \
        f"cwltest (exit {result.returncode}) did not report every required test:\n{log.read_text()[-4000:]}"

    found = problems(result.tests, KNOWN_FAILURES)
    print(f"{len(expected)} required tests through {system}: {result.count(conformance.PASSED)} passed, "
          f"{result.total - result.count(conformance.PASSED)} not ({len(KNOWN_FAILURES)} known) in {elapsed:.0f} s")
    assert not found, "\n\n".join(found)
