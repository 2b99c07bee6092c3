"""`plastic serve` killed with SIGKILL mid-run, then started again on the same Redis.

Fast tests drive `Service.recover` / `reap` with real stand-in processes (`sleep`) for the runs'
`plastic run`: adopted by pid, let go when their run ends, resumed (a real `plastic run --resume`
child) or failed when they vanish, and the bound on resumes.  The two end-to-end tests run a slow
scatter (3 x `sleep`, then a gather; tests/watch/data/slow-scatter) under `plastic serve`, SIGKILL
the service (and, in the second, its `plastic run` child) while tasks run, start the service again
and check the run ends SUCCEEDED with the right output: adopted by pid (one Toil leader), or
resumed (two leaders, no Toil job finished twice).  Each has its own embedded Redis, owned by the
test (it outlives the killed service); the run uses the default key prefix there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from plastic.core.book.lifecycle import RunState, TaskState
from plastic.procs import pid_alive, stop_process
from plastic.service.service import MAX_RESUMES, Service, submission_fields
from plastic.store import Store, start_embedded
from tests.clirun import REPO
from tests.waiting import eventually

DATA = REPO / "tests" / "watch" / "data" / "slow-scatter"
WAIT_S = 90  # for the run to get going, or a process to go
END_S = 240  # for a run to end
NO_TOIL = importlib.util.find_spec("toil") is None


# ------------------------------------------------------------------ helpers


@pytest.fixture
def store(client):
    """The session's Redis under a prefix of this test's own (for tests that start no `plastic run`)."""
    prefix = f"svc-resume-{uuid.uuid4().hex[:8]}:"
    yield Store(client, prefix=prefix)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


@pytest.fixture
def own_redis(tmp_path):
    """A Redis of this test's own, owned by the test process: it outlives a SIGKILLed service."""
    server = start_embedded(tmp_path / "redis")
    yield server
    server.stop()


@pytest.fixture
def sleepers():
    procs: list[subprocess.Popen] = []

    def start(*names: str) -> subprocess.Popen:
        """A stand-in for `plastic run`: a process whose command line names its run, as the real ones do.
        It is returned once its interpreter has started (it says so), as a run the service adopts has
        long started; a signal during Python's start-up is another case than the one these tests mean.
        Like `plastic run` (plastic.cli.run), it puts Python's SIGINT handler back first: a shell starts
        a background job with SIGINT ignored, a Python started with it ignored keeps it so, and the
        service's SIGINT at shutdown would then do nothing (the test suite itself may run so)."""
        code = ("import signal, sys, time; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "print('ready', flush=True); time.sleep(300)")
        procs.append(subprocess.Popen([sys.executable, "-c", code, *names], start_new_session=True,
                                      stdout=subprocess.PIPE, text=True))
        assert procs[-1].stdout.readline() == "ready\n"
        return procs[-1]

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
        p.stdout.close()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _running_run(store: Store, pid: int, **fields: object) -> str:
    run_id = store.create_run(fields={"pid": pid, **fields})
    store.transition_run(run_id, RunState.PLANNING)
    store.transition_run(run_id, RunState.RUNNING)
    return run_id


def _live_run(store: Store, sleepers, **fields: object) -> tuple[str, subprocess.Popen]:
    """A RUNNING run and a live stand-in process naming it, recorded as its pid."""
    run_id = _running_run(store, 0, **fields)
    proc = sleepers("--run-id", run_id)
    store.set_run_fields(run_id, {"pid": proc.pid})
    return run_id, proc


def _run_dir(service: Service, run_id: str, *, run_json: bool) -> Path:
    run_dir = service.runs_dir / run_id
    run_dir.mkdir(parents=True)
    if run_json:  # enough for `plastic run --resume` to find the run; no plan.json, so it fails after that
        (run_dir / "run.json").write_text(json.dumps({"run_id": run_id, "workflow": str(DATA / "slow-scatter.cwl"),
                                                      "job": None, "outdir": str(run_dir / "out")}))
    return run_dir


def _reap_until_done(service: Service, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while service.children:
        assert time.monotonic() < deadline, f"children still running after {timeout_s} s: {list(service.children)}"
        service.reap()
        time.sleep(0.2)


# ------------------------------------------------------------------ fast: recover and reap


def test_dead_runs_with_nothing_to_resume_are_failed(store, tmp_path):
    service = Service(store, "redis://unused", runs_dir=tmp_path / "runs")
    no_dir = _running_run(store, _dead_pid())
    planning = store.create_run(fields={"pid": _dead_pid()})  # died before it wrote its run file
    store.transition_run(planning, RunState.PLANNING)
    _run_dir(service, planning, run_json=False)
    worn_out = _running_run(store, _dead_pid(), resumes=MAX_RESUMES)
    _run_dir(service, worn_out, run_json=True)
    assert service.recover() == []
    assert not service.children  # nothing started, nothing watched
    reasons = {}
    for run_id in (no_dir, planning, worn_out):
        run = store.get_run(run_id)
        assert run.state is RunState.FAILED, run
        reasons[run_id] = run.fields["error"]
    assert "service stopped" in reasons[no_dir] and "run.json to resume it from" in reasons[no_dir]
    assert "run.json to resume it from" in reasons[planning]
    assert f"resumed {MAX_RESUMES} times already" in reasons[worn_out]
    assert store.get_run(worn_out).fields["resumes"] == str(MAX_RESUMES)


def test_live_runs_are_adopted_by_pid_and_let_go_or_failed_when_they_go(store, tmp_path, sleepers):
    service = Service(store, "redis://unused", runs_dir=tmp_path / "runs")
    ended, ends = _live_run(store, sleepers)
    _run_dir(service, ended, run_json=True)
    orphan, vanishes = _live_run(store, sleepers)
    _run_dir(service, orphan, run_json=False)
    hand = _running_run(store, sleepers().pid)  # started by hand on the same Redis: no directory under runs_dir
    service.recover()
    assert set(service.children) == {ended, orphan}
    assert all(c.adopted for c in service.children.values())
    service.reap()
    assert set(service.children) == {ended, orphan}  # alive: still watched
    store.transition_run(ended, RunState.SUCCEEDED)
    for p in (ends, vanishes):
        p.kill()
        p.wait()
    service.reap()
    assert not service.children
    assert store.get_run(ended).state is RunState.SUCCEEDED and "resumes" not in store.get_run(ended).fields
    failed = store.get_run(orphan)
    assert failed.state is RunState.FAILED and "started by a previous service" in failed.fields["error"]
    assert "run.json to resume it from" in failed.fields["error"]
    assert store.get_run(hand).state is RunState.RUNNING


def test_a_reused_pid_is_not_taken_for_the_run(store, tmp_path, sleepers):
    """After a reboot the recorded pid may be another process: the run is resumed or failed, not watched."""
    service = Service(store, "redis://unused", runs_dir=tmp_path / "runs")
    stranger = sleepers("--run-id", "some-other-run")
    run_id = _running_run(store, stranger.pid)
    _run_dir(service, run_id, run_json=False)
    service.recover()
    assert run_id not in service.children
    run = store.get_run(run_id)
    assert run.state is RunState.FAILED and "run.json" in run.fields["error"]
    assert stranger.poll() is None  # the stranger is left alone


def test_a_popped_submission_whose_child_lives_is_watched_not_queued_again(store, tmp_path, sleepers):
    service = Service(store, "redis://unused", runs_dir=tmp_path / "runs")
    run_id = store.create_run(fields=submission_fields(DATA / "slow-scatter.cwl", None, tmp_path, ()))
    child = sleepers("--run-id", run_id)
    store.set_run_fields(run_id, {"pid": child.pid})
    _run_dir(service, run_id, run_json=False)
    assert service.recover() == []
    assert store.pending_submissions() == 0 and list(service.children) == [run_id]
    service.shutdown(grace_s=10)  # SIGINT to the adopted process too
    assert child.wait(10) == -signal.SIGINT
    run = store.get_run(run_id)
    assert run.state is RunState.FAILED and "did not end its run when the service stopped" in run.fields["error"]


def test_an_adopted_run_that_vanishes_is_resumed_and_a_failing_resume_is_not_resumed_again(own_redis, tmp_path,
                                                                                            sleepers):
    client = own_redis.client()
    try:
        store = Store(client)  # the default prefix: the one `plastic run --resume` uses
        service = Service(store, own_redis.url, runs_dir=tmp_path / "runs", poll_s=0.2)
        run_id, first = _live_run(store, sleepers, resumes=MAX_RESUMES - 1)
        run_dir = _run_dir(service, run_id, run_json=True)
        service.recover()
        assert service.children[run_id].adopted
        first.kill()
        first.wait()
        service.reap()  # gone while RUNNING: `plastic run --resume` in its place
        resumed = service.children[run_id]
        assert not resumed.adopted
        assert store.get_run(run_id).fields["resumes"] == str(MAX_RESUMES)
        _reap_until_done(service)  # no plan.json: the resume fails by itself, a real failure
        run = store.get_run(run_id)
        assert run.state is RunState.FAILED, run
        assert f"plastic run exited with {resumed.exit_code}" in run.fields["error"] and resumed.exit_code != 0
        assert run.fields["resumes"] == str(MAX_RESUMES)
        assert "plan.json" in (run_dir / "plastic-run.log").read_text()
    finally:
        client.close()


# ------------------------------------------------------------------ end to end


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    env["PLASTIC_HOME"] = str(tmp_path / "home")
    return env


def _serve(tmp_path: Path, url: str, log_path: Path) -> subprocess.Popen:
    with open(log_path, "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "plastic", "-v", "serve", "--redis", url, "--runs-dir",
                                 str(tmp_path / "runs"), "--max-runs", "1"], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, env=_env(tmp_path), cwd=tmp_path)


def _submit(tmp_path: Path, url: str, seconds: int) -> str:
    job = tmp_path / "job.yml"
    job.write_text(f"items: [1, 2, 3]\nseconds: {seconds}\n")
    res = subprocess.run([sys.executable, "-m", "plastic", "submit", "--redis", url, "--outdir", str(tmp_path / "out"),
                          str(DATA / "slow-scatter.cwl"), str(job)], capture_output=True, text=True,
                         env=_env(tmp_path), cwd=tmp_path, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def _wait(pred, what: str, timeout_s: float, *logs: Path) -> None:
    def tails() -> str:
        return "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in logs if p.exists())

    eventually(pred, timeout_s, what, interval=0.3, describe=tails)


def _kill_group(pid: int) -> None:
    if pid and pid_alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)  # `plastic run` leads its own session: it and its Toil leader
        except (ProcessLookupError, PermissionError):
            pass


def _mid_run_restart(tmp_path: Path, own_redis, store: Store, *, seconds: int, kill_child: bool,
                     pids: list[int], serves: list[subprocess.Popen]) -> tuple[str, int, Path]:
    """Submit the slow scatter, serve it, SIGKILL the service (and with kill_child its `plastic run`) once
    a task runs, serve again; returns the run id, the first child's pid and the second service's log."""
    url = own_redis.url
    run_id = _submit(tmp_path, url, seconds)
    run_log = tmp_path / "runs" / run_id / "plastic-run.log"
    first_log, second_log = tmp_path / "serve-1.log", tmp_path / "serve-2.log"
    serves.append(_serve(tmp_path, url, first_log))

    def tasks_running() -> bool:
        run = store.get_run(run_id)
        assert run.state not in (RunState.FAILED, RunState.CANCELLED, RunState.SUCCEEDED), run
        return run.state is RunState.RUNNING and store.task_counts(run_id).get(TaskState.RUNNING, 0) > 0

    _wait(tasks_running, "task RUNNING", WAIT_S, first_log, run_log)
    child_pid = int(store.get_run(run_id).fields["pid"])
    pids.append(child_pid)
    serves[0].kill()
    serves[0].wait(10)
    assert pid_alive(child_pid), "the run's plastic run died with the service"
    if kill_child:
        os.kill(child_pid, signal.SIGKILL)  # its Toil leader gets SIGKILL from the kernel (parent death)
        _wait(lambda: not pid_alive(child_pid), "end of the killed plastic run", 10)
        # the service comes back at once: the killed run's Redis writes and Toil leader may still be going
    serves.append(_serve(tmp_path, url, second_log))
    _wait(lambda: store.get_run(run_id).state in (RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED),
          "end of the run", END_S, second_log, run_log, tmp_path / "runs" / run_id / "toil.log")
    run = store.get_run(run_id)
    assert run.state is RunState.SUCCEEDED, (run, run_log.read_text()[-4000:])
    assert (tmp_path / "out" / "joined.txt").read_text() == "item 1\nitem 2\nitem 3\n"
    last_pid = int(run.fields["pid"])
    pids.append(last_pid)
    _wait(lambda: not pid_alive(last_pid), "end of the run's plastic run", WAIT_S, run_log)
    cluster = json.loads((tmp_path / "runs" / run_id / "cluster.json").read_text())
    assert not pid_alive(int(cluster["pid"])), "the local cluster outlived the run"
    return run_id, child_pid, second_log


@pytest.mark.toil_e2e
@pytest.mark.skipif(NO_TOIL, reason="needs toil")
@pytest.mark.parametrize("kill_child", [False, True], ids=["service_only", "service_and_run"])
def test_serve_sigkilled_mid_run_then_started_again(tmp_path, own_redis, kill_child):
    client = own_redis.client()
    store = Store(client)
    pids: list[int] = []
    serves: list[subprocess.Popen] = []
    try:
        run_id, child_pid, second_log = _mid_run_restart(tmp_path, own_redis, store, seconds=5 if kill_child else 8,
                                                         kill_child=kill_child, pids=pids, serves=serves)
        run = store.get_run(run_id)
        text = second_log.read_text()
        if not kill_child:  # adopted by pid: the first plastic run finished it, one Toil leader
            assert f"its plastic run (pid {child_pid}) outlived the previous service" in text, text
            assert run.fields["pid"] == str(child_pid) and "resumes" not in run.fields
            assert store.incarnation(run_id) == 1
        else:  # resumed by `plastic run --resume`: a second leader, no job finished twice
            assert f"run {run_id} resumed" in text, text
            assert run.fields["resumes"] == "1" and run.fields["pid"] != str(child_pid)
            assert store.incarnation(run_id) == 2
        finished = Counter(t.spec.get("job_store_id") for t in store.get_tasks(run_id)
                           if str(t.state).endswith("FINISHED"))
        assert finished and all(n == 1 for n in finished.values()), finished
    finally:
        for proc in serves:
            stop_process(proc, 60)
        for pid in pids:
            _kill_group(pid)
        client.close()
