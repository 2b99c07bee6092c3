"""`plastic run` refuses bad input with one line and exit 2, before starting anything."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from plastic.store.urls import redact
from tests.clirun import REPO, assert_one_line_error, plastic

SG = REPO / "cwl-examples" / "scatter-gather"


def test_missing_workflow(tmp_path):
    res = plastic("run", tmp_path / "nope.cwl", SG / "job.yml", "--run-dir", tmp_path / "r", cwd=tmp_path)
    assert_one_line_error(res, "nope.cwl", "no such file")
    assert not (tmp_path / "r").exists()


def test_missing_job(tmp_path):
    res = plastic("run", SG / "scatter-gather.cwl", tmp_path / "job.yml", "--run-dir", tmp_path / "r", cwd=tmp_path)
    assert_one_line_error(res, "job.yml", "no such file")
    assert not (tmp_path / "r").exists()


def test_invalid_cwl(tmp_path):
    bad = tmp_path / "bad.cwl"
    bad.write_text("cwlVersion: v1.2\nclass: Workflow\ninputs: {}\noutputs: {}\nsteps: 3\n")
    res = plastic("run", bad, "--run-dir", tmp_path / "r", cwd=tmp_path)
    assert_one_line_error(res, "bad.cwl")
    assert not (tmp_path / "r").exists()


def test_bad_annotation(tmp_path):
    wf = tmp_path / "wf.cwl"
    wf.write_text((SG / "scatter-gather.cwl").read_text().replace("vcpus: 2", "vcpus: -2"))
    for name in ("split-part.cwl", "sort-chunk.cwl", "merge-sorted.cwl", "input.txt", "job.yml"):
        (tmp_path / name).write_text((SG / name).read_text())
    res = plastic("run", wf, tmp_path / "job.yml", "--run-dir", tmp_path / "r", cwd=tmp_path)
    assert_one_line_error(res, "vcpus")
    assert not (tmp_path / "r").exists()


def test_bad_plan_file(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text("{not json")
    res = plastic("run", SG / "scatter-gather.cwl", SG / "job.yml", "--plan", plan, "--run-dir", tmp_path / "r",
                  cwd=tmp_path)
    assert_one_line_error(res, "plan.json")
    assert not (tmp_path / "r").exists()


def test_bad_run_id(tmp_path):
    res = plastic("run", SG / "scatter-gather.cwl", SG / "job.yml", "--run-id", "a/b", cwd=tmp_path)
    assert_one_line_error(res, "--run-id")


@pytest.mark.slow
def test_a_run_directory_toil_cannot_run_from_is_refused(tmp_path):
    """Toil puts the job store's path unquoted in its jobs' shell commands: a space or a parenthesis
    there fails every job (toil-cwl-runner alone too), so plastic says so before writing anything."""
    for name, needle in (("my runs", "a space"), ("runs(1)", "'(', ')'"), ("a$b", "'$'")):
        res = plastic("run", SG / "scatter-gather.cwl", SG / "job.yml", "--run-dir", tmp_path / name / "r",
                      cwd=tmp_path)
        assert_one_line_error(res, str(tmp_path / name / "r"), needle, "--run-dir")
        assert not (tmp_path / name).exists()
    res = plastic("run", "--resume", tmp_path, cwd=tmp_path)  # a safe path that holds no run: refused as before
    assert res.returncode == 2
    spaced = tmp_path / "moved here"  # a run directory moved under such a path: refused for the path
    spaced.mkdir()
    assert_one_line_error(plastic("run", "--resume", spaced, cwd=tmp_path), str(spaced), "a space")
    assert list(spaced.iterdir()) == []
    res = plastic("serve", "--runs-dir", tmp_path / "all (runs)", cwd=tmp_path)
    assert_one_line_error(res, "all (runs)", "--runs-dir")
    assert not (tmp_path / "all (runs)").exists()


@pytest.mark.slow
def test_unreachable_redis(tmp_path):
    """Nothing listening, or no such host: one line naming the URL (without its password), exit 2, within
    seconds, and no run directory (Redis is reached before anything of the run is written)."""
    for url in ("redis://:S3cret@127.0.0.1:1/0", "redis://no-such-host.invalid:6379/0"):
        started = time.monotonic()
        res = plastic("run", SG / "scatter-gather.cwl", SG / "job.yml", "--redis", url, "--run-dir", tmp_path / "r",
                      cwd=tmp_path)
        assert_one_line_error(res, "--redis", f"cannot reach Redis at {redact(url)}")
        assert "S3cret" not in res.stderr
        assert time.monotonic() - started < 60  # no hang, even on a busy machine
        assert not (tmp_path / "r").exists()
        res = plastic("status", "--redis", url, cwd=tmp_path)
        assert_one_line_error(res, "--redis", f"cannot reach Redis at {redact(url)}")


@pytest.mark.slow
def test_an_option_of_nobody_is_one_line_before_anything_starts(tmp_path: Path):
    """After WORKFLOW, a flag is an input of the workflow or an option of toil-cwl-runner; one that is
    neither (a typo) is refused at once, not when Toil starts after the cluster is up."""
    home = tmp_path / "home"
    env = {"PLASTIC_HOME": str(home)}
    res = plastic("run", SG / "scatter-gather.cwl", "--bogus", "--run-dir", tmp_path / "r", cwd=tmp_path, env=env)
    assert_one_line_error(res, "--bogus", "not an option of plastic, an input of scatter-gather.cwl or an option "
                                          "of toil-cwl-runner")
    res = plastic("run", SG / "scatter-gather.cwl", SG / "job.yml", "--", "--logLevel", "LOUD", cwd=tmp_path, env=env)
    assert_one_line_error(res, "toil-cwl-runner options", "--logLevel", "LOUD")
    res = plastic("run", SG / "scatter-gather.cwl", SG / "job.yml", "more.yml", cwd=tmp_path, env=env)
    assert_one_line_error(res, "more.yml", "not an option")
    assert not (tmp_path / "r").exists() and not (tmp_path / ".plastic").exists() and not home.exists()


@pytest.mark.slow
def test_bad_inputs_given_as_flags_are_one_line_and_leave_nothing(tmp_path: Path):
    home = tmp_path / "home"
    env = {"PLASTIC_HOME": str(home)}
    for flags, needles in (
            (("--text", tmp_path / "none.txt", "--parts", "1"), ("inputs on the command line", "text", "none.txt")),
            (("--text", SG / "input.txt", "--parts", "one"), ("inputs on the command line", "--parts", "'one'")),
            (("--parts", "1"), ("inputs on the command line", "text", "Missing required input")),
    ):
        res = plastic("run", SG / "scatter-gather.cwl", *flags, "--run-dir", tmp_path / "r", cwd=tmp_path, env=env)
        assert_one_line_error(res, *needles)
        assert not (tmp_path / "r").exists()
        assert not (home / "jobs").exists() or not list((home / "jobs").iterdir())


def test_resume_options_are_checked_in_one_line(tmp_path):
    assert_one_line_error(plastic("run", "--adopt-seconds", "5", SG / "scatter-gather.cwl", cwd=tmp_path),
                          "--adopt-seconds", "--resume")
    assert_one_line_error(plastic("run", "--resume", tmp_path, "--adopt-seconds", "-1", cwd=tmp_path),
                          "--adopt-seconds")
    assert_one_line_error(plastic("run", "--resume", tmp_path / "gone", cwd=tmp_path), "gone")
    # a directory that is not a run's
    assert_one_line_error(plastic("run", "--resume", tmp_path, cwd=tmp_path), "run.json", str(tmp_path))


def test_usage_errors_are_one_line(tmp_path):
    assert_one_line_error(plastic("run", "--no-such-option", cwd=tmp_path), "plastic run", "--no-such-option")


def test_provider_ec2_needs_its_options_and_refuses_local_ones(tmp_path):
    base = ("run", SG / "scatter-gather.cwl", SG / "job.yml", "--run-dir", tmp_path / "r")
    for extra, words in ((("--provider", "ec2", "--image-id", "ami-1"), ("--provider ec2", "--master")),
                         (("--provider", "ec2", "--master", "127.0.0.1:5050"), ("--provider ec2", "--image-id")),
                         (("--provider", "ec2", "--master", "m:5050", "--image-id", "ami-1", "--static"),
                          ("--provider ec2", "--static")),
                         (("--provider", "ec2", "--master", "m:5050", "--image-id", "ami-1", "--interrupt-rate", "1"),
                          ("--interrupt-rate", "local cluster only")),
                         (("--image-id", "ami-1", "--region", "us-east-1"), ("--region", "--image-id",
                                                                             "--provider ec2"))):
        assert_one_line_error(plastic(*base, *extra, cwd=tmp_path), *words)
        assert not (tmp_path / "r").exists()


def test_elastic_options_and_their_conflicts_are_one_line(tmp_path):
    base = ("run", SG / "scatter-gather.cwl", SG / "job.yml", "--run-dir", tmp_path / "r")
    for extra, words in ((("--max-nodes", "3", "--static"), ("--max-nodes", "elastic options", "--static")),
                         (("--idle-seconds", "5", "--budget-per-hour", "1", "--master", "http://127.0.0.1:9"),
                          ("--idle-seconds", "--budget-per-hour", "--master", "static")),
                         (("--rebalance", "sometimes"), ("--rebalance", "sometimes"))):
        assert_one_line_error(plastic(*base, *extra, cwd=tmp_path), *words)
        assert not (tmp_path / "r").exists()
