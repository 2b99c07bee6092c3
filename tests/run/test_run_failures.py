"""`plastic run` of a workflow that fails: one line that names the step, its exit status and its last
line of standard error, exit status 1, the report written; and a workflow that needs a feature the
runner does not support exits 33, as cwltool and Toil do (what cwltest counts as "unsupported")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("toil")

pytestmark = pytest.mark.toil_e2e

SCATTER = """\
cwlVersion: v1.2
class: Workflow
requirements:
  ScatterFeatureRequirement: {}
inputs:
  genomes: string[]
outputs: []
steps:
  align:
    run:
      class: CommandLineTool
      inputs:
        g: {type: string, inputBinding: {}}
      outputs: []
      baseCommand: [sh, -c, 'if [ "$0" = hg99 ]; then echo "reading $0" >&2; echo "no such genome: $0" >&2; exit 3; fi']
    scatter: g
    in: {g: genomes}
    out: []
"""

NEEDS_DOCKER = """\
cwlVersion: v1.2
class: CommandLineTool
requirements:
  DockerRequirement: {dockerPull: "debian:bookworm-slim"}
baseCommand: "true"
inputs: []
outputs: []
"""


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PLASTIC_REDIS_URL", None)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmp_path / "tmp")  # the machine's temporary directory, as the run sees it
    return subprocess.run([sys.executable, "-m", "plastic", "run", "--run-dir", str(tmp_path / "run"), "--quiet",
                           *args], capture_output=True, text=True, cwd=tmp_path, timeout=240, env=env,
                          check=False)


def last_line(res: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    return [line for line in res.stderr.splitlines() if line.strip()][-1]


def test_a_failed_step_is_named_with_its_status_and_standard_error(tmp_path):
    (tmp_path / "wf.cwl").write_text(SCATTER)
    (tmp_path / "job.yml").write_text("genomes: [hg38, hg99, hg19]\n")
    res = run(tmp_path, "wf.cwl", "job.yml", "--", "--retryCount", "0")
    assert res.returncode == 1, res.stderr[-3000:]
    line = last_line(res)
    assert line.startswith("plastic: workflow failed (run r"), line
    assert "step 'align' exited with status 3: no such genome: hg99; Toil's log: " in line, line
    assert line.endswith(str(tmp_path / "run" / "toil.log"))
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["outcome"] == "failed" and report["tasks_failed"] >= 1
    # Toil's leftovers stay with the job store the failed run keeps (its message bus: `toil status`),
    # not in the machine's temporary directory
    assert list((tmp_path / "tmp").iterdir()) == []
    assert any(f.stat().st_size > 0 for f in (tmp_path / "run" / "toil-tmp").iterdir())


def test_a_feature_the_runner_does_not_support_exits_33(tmp_path):
    (tmp_path / "tool.cwl").write_text(NEEDS_DOCKER)
    res = run(tmp_path, "tool.cwl", "--", "--no-container")  # no job order: the options follow at once
    assert res.returncode == 33, res.stderr[-3000:]
    line = last_line(res)
    assert "it needs a feature the runner does not support: --no-container, but this CommandLineTool has " \
           "DockerRequirement" in line, line
