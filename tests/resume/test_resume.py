"""Crash-resume: `plastic run` killed with SIGKILL at four points, then `plastic run --resume RUN_DIR`.

Each case: a slow scatter (3 x `sleep`, then a gather) started with `plastic run`; SIGKILL while the
run is PLANNING (its cluster starting), when the local cluster is up (before Toil issued anything;
the run may still be PLANNING), while tasks run, or after some steps finished;
then --resume completes with the right output, no Toil job (jobStoreID) finished twice, and the
local cluster is gone at the end.  Killed while tasks run, the resume adopts them (they finish
and are not run again) or, with --adopt-seconds 0, kills and reruns them.  About 40-90 s each on
two cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from plastic.procs import pid_alive
from tests.clirun import REPO, assert_replays, read_decisions
from tests.waiting import eventually

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

DATA = REPO / "tests" / "watch" / "data" / "slow-scatter"
GATED = Path(__file__).resolve().parent / "data" / "gated-scatter"
WAIT_S = 180  # a bound on a hung run: beside three busy test workers (under coverage) a run took over 60 s to
# bring its cluster up; a run that works gets there in 3-20 s


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PLASTIC_REDIS_URL", None)
    return env


def _planning(run_dir: Path) -> bool:
    """The run's state in its own live Redis is PLANNING (its plan and run file written, its cluster
    not up): read through the server's address in redis/redis.json, never starting one."""
    import redis

    try:
        run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
        url = json.loads((run_dir / "redis" / "redis.json").read_text())["url"]
    except (OSError, ValueError, KeyError):
        return False
    from plastic.store import Store

    client = redis.Redis.from_url(url, socket_timeout=1.0, decode_responses=True)
    try:
        run = Store(client).get_run(run_id)
    except redis.RedisError:
        return False
    finally:
        client.close()
    return run is not None and str(run.state).endswith("PLANNING")


def _point(name: str, run_dir: Path):
    if name == "planning":
        return lambda: _planning(run_dir)
    if name == "cluster_up":
        return lambda: (run_dir / "cluster.json").is_file()
    if name == "tasks_running":
        return lambda: any(d["kind"] == "running" for d in read_decisions(run_dir))
    return lambda: any(d["kind"] == "ended" and d.get("outcome") == "finished" for d in read_decisions(run_dir))


def _orphans_decided(run_dir: Path) -> bool:
    """The resumed leader has decided about the killed one's tasks (only a resumed leader writes these):
    adopted, killed or found ended."""
    return any(d["kind"] in ("orphan_adopted", "orphan_kill", "orphan_ended") for d in read_decisions(run_dir))


def _kill_then_resume(tmp_path: Path, point: str, *, seconds: int | None, toil_args: tuple[str, ...] = (),
                      resume_args: tuple[str, ...] = (), before_resume: Callable[[Path], None] | None = None):
    """`plastic run` the slow scatter, SIGKILL it at ``point``, then at once (as `plastic serve` does when
    its run dies; the killed run's Redis and leader may still be going down) or once ``before_resume(run_dir)``
    returns, `plastic run --resume`; checks the output, the cluster's end and the one FINISHED per Toil job;
    returns (decisions, tasks).  ``seconds=None``: the gated scatter instead, whose steps end only once the
    resumed run has decided about the killed leader's tasks (adopted, killed or ended)."""
    job = tmp_path / "job.yml"
    gate = tmp_path / "gate"
    run_dir, out = tmp_path / "run", tmp_path / "out"
    if seconds is None:
        job.write_text(f"items: [1, 2, 3]\ngate: {gate}\n")
        workflow = GATED / "gated-scatter.cwl"
    else:
        job.write_text(f"items: [1, 2, 3]\nseconds: {seconds}\n")
        workflow = DATA / "slow-scatter.cwl"
    cmd = [sys.executable, "-m", "plastic", "run", str(workflow), str(job), "--outdir", str(out),
           "--run-dir", str(run_dir), "--quiet"]
    if toil_args:
        cmd += ["--", *toil_args]
    with open(tmp_path / "first.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=log, stderr=log)
    try:
        eventually(_point(point, run_dir), WAIT_S, point, interval=0.02 if point == "planning" else 0.2, alive=proc,
                   describe=lambda: (tmp_path / "first.log").read_text(errors="replace")[-3000:])
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    if point == "planning":  # killed before its cluster was named: the resume starts one (or re-attaches)
        assert (run_dir / "plan.json").is_file() and (run_dir / "run.json").is_file()
    if before_resume is not None:
        before_resume(run_dir)
    resume = subprocess.Popen([sys.executable, "-m", "plastic", "run", "--resume", str(run_dir), "--quiet",
                               *resume_args], cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        if seconds is None:
            eventually(lambda: _orphans_decided(run_dir), WAIT_S, "the resumed run's decision on the killed "
                       "leader's tasks", alive=resume)
            gate.touch()
        _, stderr = resume.communicate(timeout=WAIT_S)
    finally:
        if resume.poll() is None:
            resume.kill()
            resume.wait(10)
    toil_log = run_dir / "toil.log"  # none when the resume failed before Toil started
    assert resume.returncode == 0, stderr[-4000:] + (toil_log.read_text()[-4000:] if toil_log.exists() else "")
    assert (out / "joined.txt").read_text() == "item 1\nitem 2\nitem 3\n"
    cluster = json.loads((run_dir / "cluster.json").read_text())  # the one the resume re-attached to or started
    assert not pid_alive(int(cluster["pid"])), "the local cluster outlived the resumed run"
    from plastic.store import Store, start_embedded

    server = start_embedded(run_dir / "redis")
    try:
        client = server.client()
        store = Store(client)
        run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
        assert str(store.get_run(run_id).state) in ("SUCCEEDED", "RunState.SUCCEEDED")
        tasks = store.get_tasks(run_id)
        finished = Counter(t.spec.get("job_store_id") for t in tasks if str(t.state).endswith("FINISHED"))
        assert finished and all(n == 1 for n in finished.values()), finished
        if point not in ("planning", "cluster_up"):
            assert store.incarnation(run_id) == 2
        client.close()
    finally:
        server.stop()
    report = json.loads((run_dir / "report.json").read_text())
    assert report["tasks"] == report["tasks_finished"] == 4, report  # 3 scattered + the gather, across both leaders
    if point not in ("planning", "cluster_up"):  # a leader was running when killed: its book, and the resume's
        assert_replays(run_dir, books=2)
    return read_decisions(run_dir), tasks


@pytest.mark.parametrize(("point", "adopt_s"), [("planning", None), ("cluster_up", None), ("tasks_running", None),
                                               ("tasks_running", 0), ("steps_finished", None)])
def test_sigkill_then_resume(tmp_path, point, adopt_s):
    # killed while tasks run: they run until the resume has decided about them (the gated scatter; 15 s of
    # sleep had ended before a resume under coverage beside three workers got there: nothing to adopt or kill)
    decisions, tasks = _kill_then_resume(tmp_path, point, seconds=None if point == "tasks_running" else 5,
                                         resume_args=() if adopt_s is None else ("--adopt-seconds", str(adopt_s)))
    if point == "tasks_running":
        _check_orphans(decisions, tasks, adopt=adopt_s is None)


def test_a_run_that_stopped_before_redis_had_it_is_resumed(tmp_path):
    """`plastic run` writes its plan and run file, then starts its Redis: a run that stops in between
    (here the redis-server cannot start; a SIGKILL there does the same) has no record in Redis and
    nothing started; `plastic run --resume` records it and runs it to the end."""
    job = tmp_path / "job.yml"
    job.write_text("items: [1, 2, 3]\nseconds: 1\n")
    run_dir, out = tmp_path / "run", tmp_path / "out"
    first = subprocess.run([sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(job),
                            "--outdir", str(out), "--run-dir", str(run_dir), "--quiet"], cwd=tmp_path,
                           env={**_env(), "PLASTIC_REDIS_SERVER": "/bin/false"}, capture_output=True, text=True,
                           timeout=120, check=False)
    assert first.returncode == 1, first.stderr
    assert "redis-server exited with status 1 before it answered" in first.stderr
    assert "Traceback" not in first.stderr
    assert (run_dir / "plan.json").is_file() and (run_dir / "run.json").is_file()
    assert not (run_dir / "cluster.json").exists() and not out.exists()
    res = subprocess.run([sys.executable, "-m", "plastic", "run", "--resume", str(run_dir), "--quiet"], cwd=tmp_path,
                         env=_env(), capture_output=True, text=True, timeout=150, check=False)
    assert res.returncode == 0, res.stderr[-4000:]
    assert (out / "joined.txt").read_text() == "item 1\nitem 2\nitem 3\n"
    from plastic.store import Store, start_embedded

    server = start_embedded(run_dir / "redis")
    try:
        client = server.client()
        run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
        run = Store(client).get_run(run_id)
        assert str(run.state).endswith("SUCCEEDED") and run.fields["outdir"] == str(out.resolve())
        client.close()
    finally:
        server.stop()
    # a run that started something had its record: resumed against another Redis, it is not recorded there
    assert not (run_dir / "jobstore").exists()  # Toil removed it; the run's logs and report tell it started
    (run_dir / "cluster.json").unlink()
    other = start_embedded(tmp_path / "other-redis")
    try:
        again = subprocess.run([sys.executable, "-m", "plastic", "run", "--resume", str(run_dir), "--redis",
                                other.url, "--quiet"], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                               timeout=60, check=False)
        assert again.returncode == 2 and f"run {run_id} is not in Redis at" in again.stderr, again.stderr
        assert len(again.stderr.strip().splitlines()) == 1 and "Traceback" not in again.stderr
        client = other.client()
        assert Store(client).get_run(run_id) is None
        client.close()
    finally:
        other.stop()


def test_resume_after_the_failover_timeout_subscribes_anew(tmp_path):
    """The resume comes after the framework's failover timeout (2 s here): the master removed the
    framework and killed its tasks; the new leader subscribes as a new framework and runs them again."""
    decisions, tasks = _kill_then_resume(tmp_path, "tasks_running", seconds=15,
                                         toil_args=("--plasticFailoverTimeout", "2"),
                                         before_resume=_framework_removed)
    resumed = [d for d in decisions if d["kind"] == "resumed"]
    assert resumed and resumed[-1]["framework_removed"] is True
    ids = {d["framework_id"] for d in decisions if d["kind"] == "registered"}
    assert len(ids) == 2, ids  # the first leader's framework, then a new one
    ended = [d for d in decisions if d["kind"] == "orphan_ended"]
    assert ended and all(d.get("reason") == "framework_removed" for d in ended), ended
    by_job = {t.id: t.spec.get("job_store_id") for t in tasks}
    runs = Counter(by_job.values())
    assert all(runs[by_job[d["task"].split(".")[0]]] == 2 for d in ended)  # killed by the master: run again


def _framework_removed(run_dir: Path) -> None:
    """Wait until the killed run's local master has removed its framework (its failover timeout passed)."""
    master = json.loads((run_dir / "cluster.json").read_text())["master_url"]
    eventually(lambda: httpx.get(master + "/plastic/status", timeout=5).json()["frameworks"] == [], WAIT_S,
               "the master to remove the killed leader's framework after its failover timeout",
               ignoring=httpx.HTTPError)


def _check_orphans(decisions: list[dict], tasks: list, *, adopt: bool) -> None:
    """Adopted: the old leader's running tasks finished and their jobs were not run again; not
    adopted (--adopt-seconds 0): they were killed and their jobs ran again, once."""
    by_job = {t.id: t.spec.get("job_store_id") for t in tasks}
    runs = Counter(by_job.values())
    adopted = [d["task"] for d in decisions if d["kind"] == "orphan_adopted"]
    killed = [d["task"] for d in decisions if d["kind"] == "orphan_kill"]
    if adopt:
        assert adopted and not killed, (adopted, killed)
        ended = {d["task"]: d for d in decisions if d["kind"] == "orphan_ended"}
        for task in adopted:
            assert ended[task]["state"] == "TASK_FINISHED" and ended[task]["adopted"] is True
            assert runs[by_job[task.split(".")[0]]] == 1, f"the job of adopted task {task} ran again"
    else:
        assert killed and not adopted, (adopted, killed)
        for task in killed:
            assert runs[by_job[task.split(".")[0]]] == 2, f"the job of killed task {task} did not run again"
