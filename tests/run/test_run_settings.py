"""The run's settings (plastic.run.request.RunRequest) kept in run.json by one pair of functions: every
kept setting comes back as it was, a setting an older run.json lacks takes its default."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from plastic.run.ec2 import Ec2Settings
from plastic.run.request import RunRequest, request_from_json, settings_json
from tests.clirun import read_decisions
from tests.run.helpers import SG_TWO_PARTS, plastic_run

NOT_KEPT = {"plan_path", "redis_url", "run_dir"}


def _everything_set(tmp_path: Path) -> RunRequest:
    """A request with every setting away from its default (its catalog a file that exists: `--catalog` takes
    only such a file)."""
    (tmp_path / "cat.json").write_text("{}")
    return RunRequest(workflow=tmp_path / "wf.cwl", job=tmp_path / "job.yml", outdir=tmp_path / "out",
                      plan_path=tmp_path / "plan.json", master="http://10.0.0.1:5050",
                      redis_url="redis://:secret@h:6379/0", report_path=tmp_path / "report.json",
                      run_dir=tmp_path / "run", run_id="r-1", catalog_path=str(tmp_path / "cat.json"),
                      max_agents=3,
                      interrupt_rate=0.5, notice_seconds=7.0, seed=11, toil_args=("--retryCount", "2"),
                      static=True, max_nodes=5, idle_s=12.0, budget_usd_per_hour=1.5, budget_usd=9.0, boot_s=3.0,
                      makespan_allowance=0.1,
                      refuse_spot="m5.large", ec2=Ec2Settings(image_id="ami-1", region="eu-west-1", subnet="s-1"),
                      mesos_credential=tmp_path / "cred", executor="command", rebalance="drain",
                      job_store="aws:eu-west-1:plastic-r-1-0a1b2c3d", out_url="s3://lab-results/r-1")


def test_every_kept_setting_comes_back(tmp_path):
    request = _everything_set(tmp_path)
    defaults = RunRequest(workflow=Path("w"), job=None, outdir=Path("o"))
    differ = {f.name for f in dataclasses.fields(RunRequest) if getattr(request, f.name) != getattr(defaults, f.name)}
    assert differ == {f.name for f in dataclasses.fields(RunRequest)}, "set every setting away from its default"
    doc = json.loads(json.dumps(settings_json(request, redis_url="redis://h:6379/0", started_at=1.0)))
    assert doc["redis_url"] == "redis://h:6379/0" and "secret" not in json.dumps(doc)
    back = request_from_json(doc, run_dir=tmp_path / "run", redis_url="redis://:again@h:6379/0")
    for f in dataclasses.fields(RunRequest):
        if f.name not in NOT_KEPT:
            assert getattr(back, f.name) == getattr(request, f.name), f.name
    assert back.plan_path is None and back.redis_url == "redis://:again@h:6379/0" and back.run_dir == tmp_path / "run"


def test_an_older_run_json_takes_the_defaults(tmp_path):
    """run.json of before the elastic default (no `static`: the plan's cluster, fixed) and before
    --executor was kept (Mesos' command executor was never the default)."""
    doc = {"run_id": "r-0", "workflow": str(tmp_path / "wf.cwl"), "job": None, "outdir": str(tmp_path),
           "max_agents": None, "notice_seconds": None, "toil_args": []}
    back = request_from_json(doc, run_dir=tmp_path, redis_url=None)
    assert back.static is True and back.executor == "plastic" and back.max_agents == 8
    assert back.notice_seconds == RunRequest.notice_seconds and back.ec2 is None and back.toil_args == ()


def test_the_settings_give_the_batch_system_its_options(tmp_path):
    request = RunRequest(workflow=tmp_path / "wf.cwl", job=None, outdir=tmp_path, static=True, rebalance="drain")
    assert request.batch_args(tmp_path, "http://m:5050") == ["--plasticRebalance", "drain"]
    assert RunRequest(workflow=tmp_path, job=None, outdir=tmp_path, static=True).batch_args(tmp_path, "m") == []
    elastic = RunRequest(workflow=tmp_path, job=None, outdir=tmp_path, max_nodes=4, idle_s=30.0)
    args = elastic.batch_args(tmp_path, "http://m:5050")
    assert args[args.index("--plasticMaxNodes") + 1] == "4" and args[args.index("--plasticIdleSeconds") + 1] == "30"


@pytest.mark.toil_e2e
def test_a_run_option_reaches_the_book_and_run_json(tmp_path):
    """`plastic run --rebalance drain` (an option added with the settings object and the CLI only): the
    JobBook of the run is configured with it and run.json keeps it for a resume."""
    res = plastic_run(tmp_path, "scatter-gather", "--rebalance", "drain", "--executor", "command", "--static",
                      "--quiet", job=SG_TWO_PARTS)
    assert res.returncode == 0, res.stderr[-3000:]
    saved = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (saved["rebalance"], saved["executor"], saved["static"]) == ("drain", "command", True)
    books = [e for e in read_decisions(tmp_path / "run") if e.get("kind") == "book"]
    assert [b["config"]["rebalance"] for b in books] == ["drain"]


def test_the_command_line_of_the_settings_gives_them_back(tmp_path):
    """`plastic serve` starts a submitted run with run_args(settings): `plastic run` parses them back to
    the same settings (every setting away from its default, as its own option)."""
    import click

    from plastic.cli.run import run as run_command
    from plastic.run.request import run_args

    request = dataclasses.replace(_everything_set(tmp_path), ec2=None, plan_path=None, redis_url=None)
    args = run_args(request)
    assert args[:2] == [str(request.workflow), str(request.job)] and args[-3:] == ["--", "--retryCount", "2"]
    from plastic.cli.options import outdir_settings

    with click.Context(run_command) as ctx:
        params = run_command.make_context("run", list(args), parent=ctx).params
    params.update(outdir_settings(params["outdir"]))  # --outdir s3://...: the outputs' URL (the local outdir unused)
    assert params["out_url"] == request.out_url
    for f in dataclasses.fields(RunRequest):
        if f.name in ("workflow", "job", "toil_args", "ec2", "plan_path", "redis_url", "outdir"):
            continue
        given = params[f.name]
        assert (str(given) if isinstance(given, Path) else given) == (
            str(getattr(request, f.name)) if isinstance(getattr(request, f.name), Path) else getattr(request, f.name)), f.name
    local = run_args(dataclasses.replace(request, out_url=None))  # a directory: --outdir is it
    assert local[local.index("--outdir") + 1] == str(request.outdir) and local.count("--outdir") == 1
    ec2 = run_args(dataclasses.replace(request, ec2=Ec2Settings(image_id="ami-1", region="eu-west-1")))
    assert ec2[ec2.index("--provider") + 1] == "ec2" and ec2[ec2.index("--image-id") + 1] == "ami-1"
