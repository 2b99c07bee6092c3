"""`plastic run --master URL --mesos-credential FILE` against a master that authenticates frameworks
(a local cluster started with --credentials): the run succeeds and the secret is in none of its
files; a wrong secret, a bad file or a credential without --master is one line, exit 2, before any
run directory is made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from plastic.local.handle import LocalCluster
from tests.clirun import REPO, assert_one_line_error, plastic
from tests.run.helpers import SG, SG_TWO_PARTS

pytest.importorskip("toil")

SECRET = "Sx9-not-in-any-log"
SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 2, "ram_mib": 4096, "preemptible": False, "instance_type": "c5.large"},
    {"name": "burst", "count": 2, "cpus": 2, "ram_mib": 4096, "preemptible": True, "instance_type": "c5.large"},
]}


@pytest.fixture(scope="module")
def secured(tmp_path_factory) -> Iterator[tuple[LocalCluster, Path]]:
    base = tmp_path_factory.mktemp("auth")
    accepted = base / "credentials"
    accepted.write_text(f"plastic {SECRET}\n")
    accepted.chmod(0o600)
    with LocalCluster(SPEC, credentials_file=accepted) as cluster:
        yield cluster, base


def _credential(base: Path, secret: str) -> Path:
    path = base / f"cred-{secret[:6]}.json"
    path.write_text(json.dumps({"principal": "plastic", "secret": secret}))
    path.chmod(0o600)
    return path


@pytest.mark.toil_e2e
def test_a_run_authenticates_and_never_shows_the_secret(secured, tmp_path):
    cluster, base = secured
    run_dir, out = tmp_path / "run", tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    res = subprocess.run([sys.executable, "-m", "plastic", "run", str(SG / "scatter-gather.cwl"),
                          str(SG_TWO_PARTS), "--master", cluster.master_url, "--mesos-credential",
                          str(_credential(base, SECRET)), "--outdir", str(out), "--run-dir", str(run_dir), "--quiet"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (out / "sorted.txt").is_file()
    decisions = [json.loads(line) for line in (run_dir / "decisions.jsonl").read_text().splitlines()]
    assert any(d["kind"] == "registered" for d in decisions)
    assert sum(d["kind"] == "ended" and d.get("outcome") == "finished" for d in decisions) >= 1
    # the secret: in no file of the run, not in what was printed
    assert SECRET not in res.stdout + res.stderr
    for path in run_dir.rglob("*"):
        if path.is_file() and path.stat().st_size < 50_000_000:
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_wrong_secret_is_one_line_and_makes_nothing(secured, tmp_path):
    cluster, base = secured
    res = plastic("run", SG / "scatter-gather.cwl", SG_TWO_PARTS, "--master", cluster.master_url,
                  "--mesos-credential", _credential(base, "wrong-one"), "--run-dir", tmp_path / "run",
                  "--outdir", tmp_path / "out", cwd=tmp_path)
    assert_one_line_error(res, "refused the credential", "'plastic'", "401")
    assert "wrong-one" not in res.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "out").exists()


def test_bad_credential_files_and_options(secured, tmp_path):
    cluster, _ = secured
    args = ("run", SG / "scatter-gather.cwl", SG_TWO_PARTS, "--run-dir", tmp_path / "run")
    res = plastic(*args, "--master", cluster.master_url, "--mesos-credential", tmp_path / "missing.json", cwd=tmp_path)
    assert_one_line_error(res, "missing.json", "no such file")
    bad = tmp_path / "bad.json"
    bad.write_text('{"principal": "plastic"}')
    bad.chmod(0o600)
    res = plastic(*args, "--master", cluster.master_url, "--mesos-credential", bad, cwd=tmp_path)
    assert_one_line_error(res, "bad.json", "'secret'")
    res = plastic(*args, "--mesos-credential", bad, cwd=tmp_path)
    assert_one_line_error(res, "--mesos-credential", "--master")
    assert not (tmp_path / "run").exists()


def test_the_local_cluster_checks_its_credentials_file(tmp_path):
    bad = tmp_path / "creds"
    bad.write_text("only-a-principal\n")
    bad.chmod(0o600)
    res = plastic("local", "up", "--cluster", REPO / "tests" / "local" / "data" / "nonexistent.yaml",
                  "--credentials", bad, cwd=tmp_path)
    assert res.returncode == 2
    plan_yaml = tmp_path / "c.yaml"
    plan_yaml.write_text("clusters:\n  - {name: core, count: 1, cpus: 1, ram_mib: 512, preemptible: false}\n")
    res = plastic("local", "up", "--cluster", plan_yaml, "--credentials", bad, "--detach", "--port", "0",
                  "--workdir", tmp_path / "wd", cwd=tmp_path)
    assert_one_line_error(res, str(bad), "line 1", "PRINCIPAL SECRET")
