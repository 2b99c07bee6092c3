"""End to end: toil-cwl-runner --batchSystem plastic on a LocalCluster.

Run alone with `pytest tests/framework -m toil_e2e`; each test is bounded (about 60 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("toil")

from plastic.local.handle import LocalCluster  # noqa: E402
from tests.run.helpers import SG_TWO_PARTS  # noqa: E402

pytestmark = pytest.mark.toil_e2e

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "cwl-examples" / "scatter-gather"
VENV_BIN = Path(sys.executable).parent
TIMEOUT_S = 240  # a bound on a hung run, not a duration: 25 jobs take 15-40 s, more beside the other workers

SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 4, "ram_mib": 8192, "preemptible": False},
    {"name": "burst", "count": 2, "cpus": 2, "ram_mib": 4096, "preemptible": True},
]}


@pytest.fixture
def cluster():
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0) as c:
        yield c


def _runner(cluster: LocalCluster, tmp_path: Path, *extra: str, job: Path = EXAMPLE / "job.yml") -> subprocess.Popen:
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(REPO)
    env["PLASTIC_RECORD_LOG"] = str(tmp_path / "plastic.jsonl")
    cmd = [str(VENV_BIN / "toil-cwl-runner"), "--batchSystem", "plastic", "--plasticMaster", cluster.master_url,
           "--no-container", "--jobStore", f"file:{tmp_path / 'js'}", "--outdir", str(tmp_path / "out"),
           "--workDir", str(tmp_path), *extra,
           str(EXAMPLE / "scatter-gather.cwl"), str(job)]
    return subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, tmp_path: Path) -> dict:
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"toil-cwl-runner did not finish within {TIMEOUT_S} s:\n{err[-4000:]}")
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{err[-6000:]}"
    expected = json.loads((EXAMPLE / "expected-output.json").read_text())["sorted"]
    result = json.loads(out)["sorted"]
    assert result["checksum"] == expected["checksum"]
    assert result["size"] == expected["size"]
    assert result["basename"] == expected["basename"]
    got = tmp_path / "out" / expected["basename"]
    assert got.stat().st_size == expected["size"]
    return result


def _records(tmp_path: Path) -> list[dict]:
    path = tmp_path / "plastic.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_scatter_gather_runs_on_plastic(cluster, tmp_path):
    t0 = time.monotonic()
    _finish(_runner(cluster, tmp_path, job=SG_TWO_PARTS), tmp_path)
    elapsed = time.monotonic() - t0
    records = _records(tmp_path)
    ended = [r for r in records if r["kind"] == "ended"]
    assert ended and all(r["outcome"] == "finished" for r in ended)
    reliable = {a.id for a in cluster.agents if not a.preemptible}
    placed = [r for r in records if r["kind"] == "placed"]
    assert placed and all(r["agent_id"] in reliable for r in placed)  # nothing asked for preemptible
    print(f"scatter-gather through plastic: {elapsed:.1f} s, {len(ended)} Mesos tasks")


def test_survives_preemptible_agent_killed(cluster, tmp_path):
    burst = [a.id for a in cluster.agents if a.preemptible]
    proc = _runner(cluster, tmp_path, "--defaultPreemptible", "true")
    killed: list[str] = []

    def killer() -> None:  # kill the first preemptible agent that runs a task
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and proc.poll() is None:
            running = [r["agent_id"] for r in _records(tmp_path) if r["kind"] == "running"]
            victim = next((a for a in running if a in burst), None)
            if victim:
                cluster.kill_agent(victim)
                killed.append(victim)
                return
            time.sleep(0.2)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    _finish(proc, tmp_path)
    t.join(timeout=5)
    assert killed, "no task ever ran on a preemptible agent"
    records = _records(tmp_path)
    requeued = [r for r in records if r["kind"] == "requeue" and r["agent_id"] == killed[0]]
    assert requeued, "no task was requeued after the agent was killed"
    assert all(r["counted_as"] == "preempted" for r in requeued)
