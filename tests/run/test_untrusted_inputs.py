"""Files a user passes in are read, never executed, and nothing in them reaches outside what CWL
allows: YAML tags that would build Python objects (job order, catalog, CLUSTER.yaml), a JavaScript
expression reaching for the machine while plastic evaluates it at plan time, and output objects that
name files outside --outdir (directly or through a symlink) when plastic sets the outputs' modes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from plastic.run import modes
from tests.clirun import REPO, assert_one_line_error, plastic

EXAMPLE = REPO / "cwl-examples" / "scatter-gather"


def python_tag(marker: Path) -> str:
    """YAML that a loader building arbitrary objects would turn into a shell command creating ``marker``."""
    return f"!!python/object/apply:os.system [\"touch {marker}\"]"


@pytest.mark.slow
def test_a_job_order_with_a_python_tag_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    job = tmp_path / "job.yml"
    job.write_text(f"text:\n  class: File\n  path: {EXAMPLE / 'input.txt'}\nparts: {python_tag(marker)}\n")
    for command in (("plan", EXAMPLE / "scatter-gather.cwl", job),
                    ("run", EXAMPLE / "scatter-gather.cwl", job, "--run-dir", tmp_path / "run",
                     "--outdir", tmp_path / "out")):
        res = plastic(*command)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert str(job) in res.stderr, res.stderr
        assert not marker.exists()
    assert not (tmp_path / "run").exists() and not (tmp_path / "out").exists()


def test_a_catalog_with_a_python_tag_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(f"instance_types: {python_tag(marker)}\n")
    res = plastic("plan", EXAMPLE / "scatter-gather.cwl", EXAMPLE / "job.yml", "--catalog", catalog)
    assert_one_line_error(res, "catalog.yaml")
    assert not marker.exists()


def test_a_cluster_file_with_a_python_tag_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(f"clusters: {python_tag(marker)}\n")
    res = plastic("local", "up", "--cluster", cluster, "--workdir", tmp_path / "wd", timeout=60)
    assert_one_line_error(res, "cluster.yaml")
    assert not marker.exists()


def test_javascript_evaluated_at_plan_time_cannot_reach_the_machine(tmp_path):
    marker = tmp_path / "ran"
    tool = tmp_path / "echo.cwl"
    tool.write_text("cwlVersion: v1.2\nclass: CommandLineTool\nbaseCommand: echo\n"
                    "inputs:\n  n: {type: int, inputBinding: {position: 1}}\noutputs: []\n")
    wf = tmp_path / "wf.cwl"
    wf.write_text(f"""cwlVersion: v1.2
class: Workflow
requirements:
  InlineJavascriptRequirement: {{}}
  StepInputExpressionRequirement: {{}}
inputs:
  n: int
outputs: []
steps:
  step:
    run: echo.cwl
    in:
      n:
        source: n
        valueFrom: $(require('child_process').execSync('touch {marker}') && 1)
    out: []
""")
    job = tmp_path / "job.yml"
    job.write_text("n: 3\n")
    res = plastic("plan", wf, job)
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
    assert "valueFrom" in res.stderr and "require" in res.stderr, res.stderr
    assert not marker.exists()  # cwltool's sandbox has no require: the expression fails, nothing runs


@pytest.fixture
def shared_umask():
    """`plastic run`'s state: the user's umask (022) remembered, 077 in force."""
    before = modes._user_umask
    modes._user_umask = 0o022
    yield
    modes._user_umask = before


def test_outputs_outside_outdir_are_left_alone_even_through_a_symlink(tmp_path, shared_umask):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not the run's")
    os.chmod(outside, 0o600)
    outdir = tmp_path / "out"
    outdir.mkdir()
    inside = outdir / "result.txt"
    inside.write_text("the run's")
    os.chmod(inside, 0o600)
    link = outdir / "link.txt"
    link.symlink_to(outside)
    sub = outdir / "dir"
    sub.mkdir(mode=0o700)
    (sub / "escape").symlink_to(outside)
    outputs = {"a": {"class": "File", "path": str(inside)}, "b": {"class": "File", "location": f"file://{link}"},
               "c": {"class": "File", "path": str(outside)}, "d": {"class": "Directory", "path": str(sub)}}
    modes.share_outputs(outputs, outdir)
    assert stat.S_IMODE(inside.stat().st_mode) == 0o644
    assert stat.S_IMODE(sub.stat().st_mode) == 0o755
    assert stat.S_IMODE(outside.stat().st_mode) == 0o600  # named directly, through a link, inside a directory
