"""The examples are runnable CWL: cwltool produces the recorded expected outputs."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.cwl.helpers import CWLTOOL, EXAMPLES, ROOT

NAMES = ["scatter-gather", "nested-scatter", "dynamic-resources"]


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("location", "path")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess[str]]:
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")

    def run(name: str) -> subprocess.CompletedProcess[str]:
        out = tmp_path_factory.mktemp(name)
        return subprocess.run(
            [str(CWLTOOL), "--quiet", "--no-container", "--outdir", str(out), "--tmpdir-prefix", f"{out}/tmp-",
             str(EXAMPLES / name / f"{name}.cwl"), str(EXAMPLES / name / "job.yml")],
            capture_output=True, text=True, timeout=300, env=env)

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(zip(NAMES, pool.map(run, NAMES), strict=True))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.slow
def test_example_runs_and_matches_expected_output(name, runs):
    result = runs[name]
    assert result.returncode == 0, result.stderr[-2000:]
    expected = json.loads(Path(EXAMPLES / name / "expected-output.json").read_text())
    assert _strip(json.loads(result.stdout)) == expected


@pytest.mark.parametrize("name", NAMES)
def test_example_has_job_order_and_data(name):
    job = EXAMPLES / name / "job.yml"
    assert job.is_file()
    text = job.read_text()
    for line in text.splitlines():
        if "path:" in line:
            path = line.split("path:", 1)[1].strip().rstrip("}").strip()
            assert (job.parent / path).is_file(), path
