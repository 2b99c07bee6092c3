"""The plasticity manager service: `plastic submit | serve | status | logs` against a real Redis.

The service's Redis is the embedded one of $PLASTIC_HOME (a temporary directory per test).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plastic.core.book.lifecycle import RunState
from plastic.procs import stop_process
from plastic.service.service import Service, submission_fields
from plastic.store import Store, start_embedded
from tests.clirun import REPO, assert_one_line_error

SG = REPO / "cwl-examples" / "scatter-gather"


def cli(home: Path, *args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    env["PLASTIC_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "plastic", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=home.parent, timeout=timeout, check=False)


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def test_submit_refuses_bad_input_and_queues_nothing(home, tmp_path):
    res = cli(home, "submit", tmp_path / "missing.cwl")
    assert_one_line_error(res, "missing.cwl", "no such file")
    bad = tmp_path / "bad.cwl"
    bad.write_text("cwlVersion: v1.2\nclass: Workflow\n")
    assert_one_line_error(cli(home, "submit", bad), "bad.cwl")
    listed = cli(home, "status", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    empty = cli(home, "status")
    assert empty.returncode == 0 and "no runs of plastic serve" in empty.stdout and "status RUN_DIR" in empty.stdout


def test_status_and_logs_of_unknown_run(home):
    assert_one_line_error(cli(home, "status", "r-nope"), "r-nope")
    assert_one_line_error(cli(home, "logs", "r-nope"), "r-nope")
    assert_one_line_error(cli(home, "logs", "bad/id"), "bad/id", "no such run directory")  # a path: a run's directory
    assert_one_line_error(cli(home, "logs", "bad id"), "RUN", "invalid run id")


def test_submit_queues_a_run(home):
    res = cli(home, "submit", SG / "scatter-gather.cwl", SG / "job.yml")
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.strip()
    one = json.loads(cli(home, "status", run_id, "--format", "json").stdout)
    assert one["state"] == "SUBMITTED" and one["workflow"] == str(SG / "scatter-gather.cwl")
    table = cli(home, "status")
    assert run_id in table.stdout and "SUBMITTED" in table.stdout


@pytest.mark.slow
def test_submit_takes_inputs_as_flags_and_toil_options(home):
    res = cli(home, "submit", SG / "scatter-gather.cwl", "--text", SG / "input.txt", "--parts", "1", "--parts", "2",
              "--logLevel", "INFO")
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.strip()
    fields = json.loads(cli(home, "status", run_id, "--format", "json").stdout)
    assert fields["job"] == str(home / "jobs" / f"{run_id}.json")
    assert json.loads(Path(fields["job"]).read_text()) == {
        "text": {"class": "File", "location": (SG / "input.txt").as_uri()}, "parts": [1, 2]}
    assert fields["toil_args"] == ["--logLevel", "INFO"]
    bad = cli(home, "submit", SG / "scatter-gather.cwl", "--text", SG / "nowhere.txt", "--parts", "1")
    assert_one_line_error(bad, "inputs on the command line", "nowhere.txt")
    assert [p.name for p in (home / "jobs").iterdir()] == [f"{run_id}.json"]  # the refused one left nothing
    assert len(json.loads(cli(home, "status", "--format", "json").stdout)) == 1


def test_a_home_plastic_makes_is_this_users_only(tmp_path):
    home = tmp_path / "plastic"  # not there yet
    res = cli(home, "status", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert stat.S_IMODE(home.stat().st_mode) == stat.S_IMODE((home / "redis").stat().st_mode) == 0o700


@pytest.fixture
def store(tmp_path):
    server = start_embedded(tmp_path / "redis")
    client = server.client()
    yield Store(client, prefix="svc:")
    client.close()
    server.stop()


def test_recover_queues_popped_submissions_again_and_fails_orphans(store, tmp_path):
    lost = store.create_run(fields=submission_fields(SG / "scatter-gather.cwl", SG / "job.yml", tmp_path, ()))
    queued = store.create_run(fields=submission_fields(SG / "scatter-gather.cwl", SG / "job.yml", tmp_path, ()))
    store.push_submission({"run": queued})
    orphan = store.create_run(fields={"pid": "999999999"})
    store.transition_run(orphan, RunState.PLANNING)
    service = Service(store, "redis://unused", runs_dir=tmp_path / "runs")
    assert service.recover() == [lost]
    assert store.pending_submissions() == 2
    assert store.get_run(orphan).state is RunState.FAILED
    assert "service stopped" in store.get_run(orphan).fields["error"]


def test_a_run_whose_process_dies_is_marked_failed(store, tmp_path):
    wf = tmp_path / "wf.cwl"
    wf.write_text((SG / "merge-sorted.cwl").read_text())
    run_id = store.create_run(fields=submission_fields(wf, None, tmp_path / "out", ()))
    wf.unlink()  # gone before the service starts it: `plastic run` exits 2
    server_url = store.client.connection_pool.connection_kwargs
    service = Service(store, _url(store), runs_dir=tmp_path / "runs", poll_s=0.2)
    service.start(run_id)
    deadline = time.monotonic() + 60
    while service.children and time.monotonic() < deadline:
        service.reap()
        time.sleep(0.2)
    assert not service.children, server_url
    run = store.get_run(run_id)
    assert run.state is RunState.FAILED and "exited with 2" in run.fields["error"]
    assert "no such file" in (tmp_path / "runs" / run_id / "plastic-run.log").read_text()


def _url(store: Store) -> str:
    kw = store.client.connection_pool.connection_kwargs
    return f"unix://{kw['path']}" if kw.get("path") else f"redis://{kw['host']}:{kw['port']}/0"


def user_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.toil_e2e
def test_serve_runs_a_submission_end_to_end(home, tmp_path):
    out = tmp_path / "out"
    res = cli(home, "submit", SG / "scatter-gather.cwl", SG / "job.yml", "--outdir", out)
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.strip()
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    env["PLASTIC_HOME"] = str(home)
    serve_log = tmp_path / "serve.log"  # a file, not a pipe nobody reads (a full pipe would stop the service)
    with serve_log.open("w") as sink:
        serve = subprocess.Popen([sys.executable, "-m", "plastic", "serve", "--max-runs", "1"], env=env,
                                 stdout=sink, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 240
        state = "SUBMITTED"
        while time.monotonic() < deadline:
            doc = cli(home, "status", run_id, "--format", "json")
            if doc.returncode == 0:
                state = json.loads(doc.stdout)["state"]
                if state in ("SUCCEEDED", "FAILED", "CANCELLED"):
                    break
            time.sleep(2)
        log = (home / "runs" / run_id / "plastic-run.log")
        assert state == "SUCCEEDED", (log.read_text()[-4000:] if log.exists() else state,
                                      serve_log.read_text()[-3000:])
        expected = json.loads((SG / "expected-output.json").read_text())["sorted"]
        assert (out / "sorted.txt").stat().st_size == expected["size"]
        umask = user_umask()  # the run's files are private, its outputs as this user's umask makes them
        assert stat.S_IMODE((home / "runs").stat().st_mode) == stat.S_IMODE(log.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE((out / "sorted.txt").stat().st_mode) == 0o666 & ~umask
        assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~umask
        finished = json.loads(doc.stdout)["tasks"]["FINISHED"]
        fields = json.loads(doc.stdout)
        row = next(line for line in cli(home, "status").stdout.splitlines() if run_id in line)
        assert f"{finished}/{finished}" in row, row  # tasks done of the tasks seen
        assert f"{fields['makespan_s']:.1f}" in row and f"{fields['cost_usd']:.3g}" in row, row
        one = cli(home, "status", run_id).stdout
        assert f"makespan_s: {fields['makespan_s']:.1f}\n" in one, one
        last = one.split("last 5 events")[1].splitlines()[1:]
        assert len(last) == 5 and "to=SUCCEEDED" in last[-1] and " at=" not in one, one
        events = cli(home, "logs", run_id)
        assert events.returncode == 0
        kinds = {line.split()[1] for line in events.stdout.splitlines() if len(line.split()) > 1}
        assert {"placed", "ended"} <= kinds, kinds
        followed = cli(home, "logs", run_id, "--follow", "--json", timeout=30)  # the run is over: returns
        assert followed.returncode == 0 and all(json.loads(x)["type"] for x in followed.stdout.splitlines())
    finally:
        stop_process(serve, 60)
    assert serve.returncode == 0, serve_log.read_text()[-3000:]
