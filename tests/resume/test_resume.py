"""Crash-resume: `plastic run` killed with SIGKILL at three points, then `plastic run --resume RUN_DIR`.

Each case: a slow scatter (3 x `sleep`, then a gather) started with `plastic run`; SIGKILL when the
local cluster is up (before Toil issued anything), while tasks run, or after some steps finished;
then --resume completes with the right output, no Toil job (jobStoreID) finished twice, and the
local cluster is gone at the end.  About 40-90 s each on two cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from plastic.procs import pid_alive
from tests.clirun import REPO

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

DATA = REPO / "tests" / "watch" / "data" / "slow-scatter"
WAIT_S = 60


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PLASTIC_REDIS_URL", None)
    return env


def _decisions(run_dir: Path) -> list[dict]:
    try:
        text = (run_dir / "decisions.jsonl").read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _wait(pred, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not pred():
        assert proc.poll() is None, f"plastic run ended ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S} s"
        time.sleep(0.2)


def _point(name: str, run_dir: Path):
    if name == "cluster_up":
        return lambda: (run_dir / "cluster.json").is_file()
    if name == "tasks_running":
        return lambda: any(d["kind"] == "running" for d in _decisions(run_dir))
    return lambda: any(d["kind"] == "ended" and d.get("outcome") == "finished" for d in _decisions(run_dir))


@pytest.mark.parametrize("point", ["cluster_up", "tasks_running", "steps_finished"])
def test_sigkill_then_resume(tmp_path, point):
    job = tmp_path / "job.yml"
    job.write_text("items: [1, 2, 3]\nseconds: 5\n")
    run_dir, out = tmp_path / "run", tmp_path / "out"
    cmd = [sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(job), "--outdir", str(out),
           "--run-dir", str(run_dir), "--quiet"]
    with open(tmp_path / "first.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=log, stderr=log)
    try:
        _wait(_point(point, run_dir), proc, point)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    cluster = json.loads((run_dir / "cluster.json").read_text())
    time.sleep(1.0)  # the embedded Redis gets SIGTERM from the kernel; let it write its AOF and go
    res = subprocess.run([sys.executable, "-m", "plastic", "run", "--resume", str(run_dir), "--quiet"],
                         cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=110, check=False)
    assert res.returncode == 0, res.stderr[-4000:] + (run_dir / "toil.log").read_text()[-4000:]
    assert (out / "joined.txt").read_text() == "item 1\nitem 2\nitem 3\n"
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
        assert store.incarnation(run_id) == (2 if point != "cluster_up" else store.incarnation(run_id))
        client.close()
    finally:
        server.stop()
