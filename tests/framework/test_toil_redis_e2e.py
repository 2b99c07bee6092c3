"""End to end with state in Redis: toil-cwl-runner --batchSystem plastic --plasticRedis ... on a LocalCluster.

- a per-tool policy (--plasticPolicy) overrides Toil's `preemptible`: the sort step, which Toil
  thinks preemptible (--defaultPreemptible true), is pinned to reliable agents by `preempt: false`;
- the run's Redis records after a scatter-gather: every task FINISHED with its attempt, the agents,
  and the placed / ended events with their clusters.

Run alone with `pytest tests/framework -m toil_e2e`; each test is bounded (about 60 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("toil")

from plastic.core.book.policy import POLICY_VERSION
from plastic.local.handle import LocalCluster
from plastic.store import AttemptOutcome, Store, start_embedded

pytestmark = pytest.mark.toil_e2e

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "cwl-examples" / "scatter-gather"
VENV_BIN = Path(sys.executable).parent
TIMEOUT_S = 240  # a bound on a hung run, not a duration (as tests/run/helpers.py: TIMEOUT_S)
PARTS = 4

SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 4, "ram_mib": 8192, "preemptible": False, "instance_type": "m5.xlarge"},
    {"name": "burst", "count": 2, "cpus": 2, "ram_mib": 4096, "preemptible": True, "instance_type": "c5.large"},
]}
TOOLS = {"split": ("split-part.cwl", "plastic_split"), "sort": ("sort-chunk.cwl", "plastic_sort"),
         "merge": ("merge-sorted.cwl", "plastic_merge")}


@pytest.fixture
def cluster():
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0) as c:
        yield c


@pytest.fixture
def redis(tmp_path):
    server = start_embedded(tmp_path / "redis")
    client = server.client()
    yield server.url, Store(client)
    client.close()
    server.stop()


def lowered_workflow(tmp_path: Path) -> tuple[Path, Path]:
    """The example with every step's tool inlined under a dot-free id (what the lowering step writes),
    and a job with PARTS parts."""
    wf = yaml.safe_load((EXAMPLE / "scatter-gather.cwl").read_text())
    for step, (file, tool_id) in TOOLS.items():
        tool = yaml.safe_load((EXAMPLE / file).read_text())
        tool.pop("cwlVersion", None)
        tool["id"] = tool_id
        wf["steps"][step]["run"] = tool
    path = tmp_path / "lowered.cwl"
    path.write_text(json.dumps(wf))
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"text": {"class": "File", "path": str(EXAMPLE / "input.txt")},
                               "parts": list(range(1, PARTS + 1))}))
    return path, job


def run_toil(cluster: LocalCluster, tmp_path: Path, workflow: Path, job: Path, *extra: str) -> str:
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(REPO)
    for name in ("PLASTIC_REDIS_URL", "PLASTIC_RUN_ID", "PLASTIC_POLICY", "PLASTIC_RECORD_LOG"):
        env.pop(name, None)
    cmd = [str(VENV_BIN / "toil-cwl-runner"), "--batchSystem", "plastic", "--plasticMaster", cluster.master_url,
           "--no-container", "--jobStore", f"file:{tmp_path / 'js'}", "--outdir", str(tmp_path / "out"),
           "--workDir", str(tmp_path), "--disableChaining", "true", *extra, str(workflow), str(job)]
    try:
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"toil-cwl-runner did not finish within {TIMEOUT_S} s:\n{(exc.stderr or '')[-4000:]}")
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stderr[-6000:]}"
    sorted_file = Path(json.loads(proc.stdout)["sorted"]["path"])
    lines = (EXAMPLE / "input.txt").read_bytes().splitlines(keepends=True)
    assert sorted_file.read_bytes() == b"".join(sorted(lines))
    return proc.stderr


def events(store: Store, run_id: str) -> list:
    return store.read_events(run_id, count=100_000)


def test_policy_pins_a_preemptible_step_to_reliable_agents(cluster, redis, tmp_path):
    url, store = redis
    workflow, job = lowered_workflow(tmp_path)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"version": POLICY_VERSION, "tools": {
        "plastic_sort": {"preempt": False, "step": "sort"},
        "plastic_merge": {"preempt": 0, "instance_type": "m5.xlarge", "step": "merge"},
    }}))
    log = run_toil(cluster, tmp_path, workflow, job, "--defaultPreemptible", "true", "--plasticRedis", url,
                   "--plasticPolicy", str(policy))
    (run,) = store.list_runs()
    assert f"recording into new run {run.id}" in log
    tasks = {t.id: t for t in store.get_tasks(run.id)}
    by_tool: dict[str, list[str]] = {}
    for t in tasks.values():  # split has no entry: its tool key is the whole unitName
        by_tool.setdefault(t.spec["tool"].rsplit(".", 1)[-1], []).append(t.id)
    assert sorted(by_tool) == ["plastic_merge", "plastic_sort", "plastic_split"]
    assert len(by_tool["plastic_sort"]) == PARTS and len(by_tool["plastic_split"]) == PARTS
    assert {(tasks[i].spec["preempt"], tasks[i].spec["step"]) for i in by_tool["plastic_sort"]} == {(False, "sort")}
    assert {tasks[i].spec["preempt"] for i in by_tool["plastic_split"]} == {True}  # Toil's preemptible kept
    assert all(tasks[i].spec["tool"].startswith("lowered.cwl.") for i in by_tool["plastic_split"])
    (merge,) = by_tool["plastic_merge"]
    assert tasks[merge].spec["instance_type"] == "m5.xlarge"

    reliable = {a.id for a in cluster.agents if not a.preemptible}
    placed = [e.fields for e in events(store, run.id) if e.type == "placed"]
    sort_placed = [p for p in placed if p["job_id"] in by_tool["plastic_sort"]]
    assert len(sort_placed) >= PARTS
    assert all(p["agent_id"] in reliable and p["preemptible"] == "false" for p in sort_placed), sort_placed
    assert all(p["instance_type"] == "m5.xlarge" for p in placed if p["job_id"] == merge)
    assert all(t.state == "FINISHED" for t in tasks.values())
    assert all(tasks[i].fields["cluster"] == "core" for i in by_tool["plastic_sort"])


def test_redis_records_after_scatter_gather(cluster, redis, tmp_path):
    url, store = redis
    workflow, job = lowered_workflow(tmp_path)
    run_toil(cluster, tmp_path, workflow, job, "--plasticRedis", url, "--plasticRun", "r-e2e")
    run = store.get_run("r-e2e")
    assert run is not None and run.fields["source"] == "toil"
    assert store.load_framework_id("r-e2e")
    tasks = store.get_tasks("r-e2e")
    assert len(tasks) == 2 * PARTS + 1
    assert all(t.state == "FINISHED" and t.agent for t in tasks), [(t.id, t.state) for t in tasks]
    for t in tasks:
        attempts = store.attempts("r-e2e", t.id)
        assert attempts and attempts[-1].outcome == AttemptOutcome.FINISHED and attempts[-1].exit_code == 0
        assert attempts[-1].agent == t.agent and attempts[-1].ended_at >= attempts[-1].started_at
        assert t.attempts == len(attempts)
    agents = {a.id: a for a in store.agents()}
    for a in cluster.agents:
        assert a.id in agents and agents[a.id].cluster == a.cluster and agents[a.id].preemptible == a.preemptible
        assert agents[a.id].fields["instance_type"] == a.instance_type and agents[a.id].resources["vcpus"] > 0
    kinds = [e.type for e in events(store, "r-e2e")]
    for kind in ("registered", "agent", "issued", "placed", "running", "ended", "transition"):
        assert kind in kinds, kind
    ended = [e.fields for e in events(store, "r-e2e") if e.type == "ended"]
    assert len(ended) == len(tasks)
    assert all(e["outcome"] == "finished" and e["exit_code"] == "0" and e["cluster"] in ("core", "burst")
               and float(e["wall_time_s"]) > 0 for e in ended)
    assert all(store.runtime_history(t.spec["tool"]) for t in tasks)  # no policy: keyed by unitName
