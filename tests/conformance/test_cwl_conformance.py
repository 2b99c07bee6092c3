"""The CWL v1.2 conformance tests tagged `required`, through `plastic run`.

cwltest runs the 84 required tests of tests/data/cwl-v1.2 (the suite's copy in the repository), two at a time,
through `plastic run` (each test its own local cluster, Redis and run directory: the annotations
lowered, the plan, the elastic cluster, Toil with --batchSystem plastic, the printed outputs), in
SHARDS pieces so that `make test`'s workers share them out.  Every test must pass except those in
KNOWN_FAILURES, which fail on --batchSystem single_machine in this environment too, each with its
reason.  A failure not in the list fails its shard, and so does a listed test that now passes
(update the list).

The same tests through `toil-cwl-runner --batchSystem plastic` on one shared local cluster were a
second pass here; `plastic run` runs them through that same batch system and checks more, so that
pass is left to `bench/conformance.py --only plastic` (and `--only all`).

Run alone with `pytest tests/conformance` (about 8 minutes on 2 cores); deselect with
`-m "not conformance"`.  Skipped (one line saying how to restore it) when the checkout lacks the suite.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench import conformance
from tests.data_paths import CWL_SUITE as SUITE
from tests.data_paths import needs

TAGS = "required"
TIMEOUT_S = 180
SHARDS = 4  # about 2 minutes each on two cores

# test id -> why it fails on single_machine as well (same runner flags, this environment)
KNOWN_FAILURES: dict[str, str] = {
    "cwloutput_nolimit": "DockerRequirement under `requirements` (python:3-slim): with --no-container (no Docker "
                         "engine here) the worker raises UnsupportedRequirement and Toil exits 33, which cwltest "
                         "counts as a failure for a required test",
    "filename_with_hash_mark": "the input 'item #1.txt' is refused by cwltool's path check inside the Toil worker "
                               "(WorkflowException: Invalid filename ... contains illegal characters) unless "
                               "--relax-path-checks is given",
}

needs_suite = needs(SUITE / "conformance_tests.yaml")


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


def test_the_shards_cover_every_test_once() -> None:
    assert [n for shard in range(SHARDS) for n in conformance._expand(shard_numbers(shard, 84))] == \
        list(range(1, 85))
    assert [n for shard in range(SHARDS) for n in conformance._expand(shard_numbers(shard, 5))] == [1, 2, 3, 4, 5]


def shard_numbers(shard: int, total: int) -> str:
    """cwltest's -n range of one shard of ``total`` tests (1-based, contiguous, sizes differ by 1 at most)."""
    lo = total * shard // SHARDS + 1
    hi = total * (shard + 1) // SHARDS
    return f"{lo}-{hi}" if hi >= lo else ""


@pytest.mark.conformance
@needs_suite
def test_known_failures_are_required_tests() -> None:
    stale = sorted(set(KNOWN_FAILURES) - set(conformance.selected_ids(SUITE, TAGS)))
    assert not stale, f"KNOWN_FAILURES names tests that are not required tests of the suite: {stale}"


@pytest.mark.conformance
@needs_suite
@pytest.mark.parametrize("shard", range(SHARDS))
def test_required_conformance_through_plastic_run(tmp_path: Path, shard: int) -> None:
    numbers = shard_numbers(shard, len(conformance.selected_ids(SUITE, TAGS)))
    expected = conformance.selected_ids(SUITE, TAGS, numbers)
    t0 = time.monotonic()
    result = conformance.run_pass(SUITE, conformance.PLASTIC_RUN, tmp_path, tags=TAGS, jobs=2, timeout=TIMEOUT_S,
                                  numbers=numbers)
    elapsed = time.monotonic() - t0
    log = tmp_path / f"{conformance.PLASTIC_RUN}.log"
    assert [t.id for t in result.tests] == expected, \
        f"cwltest (exit {result.returncode}) did not report every test of {numbers}:\n{log.read_text()[-4000:]}"

    found = problems(result.tests, KNOWN_FAILURES)
    print(f"required tests {numbers} through plastic run: {result.count(conformance.PASSED)} passed, "
          f"{result.total - result.count(conformance.PASSED)} not in {elapsed:.0f} s")
    assert not found, "\n\n".join(found)
