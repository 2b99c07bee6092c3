"""`plastic local ...` as a user runs it: real processes, files, exit codes and one-line errors."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import httpx
import pytest

from plastic.local.config import load_cluster_file, spec_from_plan_doc
from plastic.local.supervisor import marked_pids
from plastic.procs import pid_alive
from tests.clirun import REPO, assert_one_line_error
from tests.clirun import plastic as _plastic
from tests.redis_servers import free_port
from tests.waiting import eventually

EXAMPLE = REPO / "deploy" / "cluster-example.yaml"
plastic = functools.partial(_plastic, timeout=60)  # cluster commands answer fast

PLAN = {
    "schema": "plastic.plan/v1", "tasks": [], "cost_per_hour": 0.2,
    "nodes": [
        {"id": "core-1", "cluster": "core", "instance_type": "c5.xlarge", "market": "on-demand",
         "usd_per_hour": 0.17, "capacity": {"vcpus": 4, "ram_mib": 8192}, "tasks": []},
        {"id": "burst-1", "cluster": "burst", "instance_type": "m5.large", "market": "spot",
         "usd_per_hour": 0.03, "capacity": {"vcpus": 2, "ram_mib": 8192}, "tasks": []},
    ],
}


def test_example_cluster_file_is_valid():
    spec = load_cluster_file(str(EXAMPLE))
    assert [a.cluster for a in spec.agents] == ["core", "burst-small", "burst-small"]
    assert spec.agents[1].all_attributes() == [("preemptible", "true"), ("cluster", "burst-small"),
                                               ("instance_type", "c5.large")]


def test_plan_makes_one_agent_per_node():
    spec = spec_from_plan_doc(PLAN)
    core, burst = spec.agents
    assert (core.cpus, core.ram_mib, core.preemptible, core.node_id) == (4, 8192, False, "core-1")
    assert burst.preemptible and dict(burst.all_attributes()) == {"preemptible": "true", "cluster": "burst",
                                                                  "instance_type": "m5.large"}


@pytest.mark.parametrize("text, field, message", [
    ("clusters: []\n", "clusters", "non-empty"),
    ("clusters:\n  - {name: a, count: 1, cpus: 0, ram_mib: 10, preemptible: false}\n", "clusters[0].cpus", "> 0"),
    ("clusters:\n  - {name: a, count: 1.5, cpus: 1, ram_mib: 10, preemptible: false}\n", "clusters[0].count",
     "integer"),
    ("clusters:\n  - {name: a, count: 1, cpus: 1, ram_mib: 10, preemptible: maybe}\n",
     "clusters[0].preemptible", "true or false"),
    ("clusters:\n  - {name: a, count: 1, cpus: 1, ram_mib: 10}\n", "clusters[0].preemptible", "required"),
    ("clusters:\n  - {name: a, count: 1, cpus: 1, ram_mib: 10, preemptible: true, gpus: 1}\n",
     "clusters[0].gpus", "unknown key"),
    ("clusters:\n  - {name: 'a b', count: 1, cpus: 1, ram_mib: 10, preemptible: true}\n", "clusters[0].name", "name"),
    ("clusters: [\n", "line", "not valid YAML"),
    ("nodes: []\n", "nodes", "unknown key"),
    ("clusters:\n  - {name: a, count: 1, cpus: 1, ram_mib: 10, mem_mib: 10, preemptible: true}\n",
     "clusters[0].mem_mib", "ram_mib only"),
    ("clusters:\n  - {name: a, count: 1, cpus: 1, preemptible: true}\n", "clusters[0].ram_mib", "required"),
])
def test_bad_cluster_file_is_one_line_exit_2(tmp_path, text, field, message):
    path = tmp_path / "CLUSTER.yaml"
    path.write_text(text)
    res = plastic("local", "up", "--cluster", path, "--port", "0")
    assert_one_line_error(res, str(path), field, message)


def test_mem_mib_the_older_name_of_ram_mib_is_still_read(tmp_path):
    from plastic.local.config import load_cluster_file

    path = tmp_path / "CLUSTER.yaml"
    path.write_text("clusters:\n  - {name: a, count: 2, cpus: 1, mem_mib: 640, preemptible: true}\n")
    assert [a.ram_mib for a in load_cluster_file(str(path)).agents] == [640.0, 640.0]


def test_bad_plan_and_missing_files(tmp_path):
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps({"schema": "something/else"}))
    assert_one_line_error(plastic("local", "up", "--plan", bad, "--port", "0"), str(bad), "schema")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert_one_line_error(plastic("local", "up", "--plan", broken, "--port", "0"), str(broken), "JSON")
    assert_one_line_error(plastic("local", "up", "--cluster", tmp_path / "nope.yaml"), "nope.yaml", "no such file")


def test_up_detach_status_interrupt_kill_down(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    port = free_port()
    workdir = tmp_path / "wd"
    res = plastic("local", "up", "--plan", plan, "--port", port, "--detach", "--workdir", workdir,
                  "--agent-ping-timeout-seconds", "0.5")
    assert res.returncode == 0, res.stderr
    url = res.stdout.strip()
    assert url == f"http://127.0.0.1:{port}"
    state = json.loads((workdir / "state.json").read_text())
    pid = state["pid"]
    try:
        assert pid_alive(pid) and httpx.get(url + "/version").json()["version"] == "1.11.1"
        burst = next(a for a in state["agents"] if a["preemptible"])
        assert burst["imds_url"] and burst["node_id"] == "burst-1"
        again = plastic("local", "up", "--plan", plan, "--port", port, "--detach", "--workdir", workdir)
        assert again.returncode == 1 and "already runs" in again.stderr

        table = plastic("local", "status", "--port", port)
        assert table.returncode == 0 and "burst" in table.stdout and "core" in table.stdout
        doc = json.loads(plastic("local", "status", "--port", port, "--format", "json").stdout)
        assert {a["cluster"] for a in doc["agents"]} == {"core", "burst"}
        assert doc["agents"][0]["resources"]["total"]["cpus"] == 4.0

        out = plastic("local", "interrupt", "--cluster", "burst", "--notice-seconds", "60", "--port", port)
        assert out.returncode == 0 and burst["id"] in out.stdout and "terminates at" in out.stdout
        doc = json.loads(plastic("local", "status", "--port", port, "--format", "json").stdout)
        assert doc["interruptions"][0]["agent_id"] == burst["id"]
        bad = plastic("local", "interrupt", state["agents"][0]["id"], "--port", port)
        assert bad.returncode == 1 and "not preemptible" in bad.stderr

        killed = plastic("local", "kill-agent", burst["id"].rsplit("-", 1)[1], "--port", port)  # "S1" will do
        assert killed.returncode == 0 and burst["id"] in killed.stdout
        eventually(lambda: json.loads(plastic("local", "status", "--port", port, "--format", "json").stdout)
                   ["agents"][1]["status"] == "removed", timeout=10, what="removal")
    finally:
        down = plastic("local", "down", "--port", port, "--workdir", workdir)
    assert down.returncode == 0, down.stderr
    assert "stopped" in down.stdout
    assert not pid_alive(pid)
    assert marked_pids(state["cluster_id"]) == []
    assert not (workdir / "state.json").exists()
    res = plastic("local", "status", "--port", port)
    assert res.returncode == 1 and "no local cluster answers" in res.stderr


def test_client_commands_without_a_cluster():
    port = free_port()
    res = plastic("local", "down", "--port", port, "--workdir", "/nonexistent-plastic-wd")
    assert res.returncode == 1 and "no local cluster found" in res.stderr
    res = plastic("local", "interrupt", "--port", port)
    assert res.returncode == 2 and "AGENT_ID or --cluster" in res.stderr


def test_foreground_up_stops_on_sigterm(tmp_path):
    import signal

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "plastic.cli", "local", "up", "--cluster", str(EXAMPLE),
                             "--port", str(port), "--workdir", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        first = proc.stdout.readline()
        assert f"127.0.0.1:{port}" in first
        state = json.loads((tmp_path / "state.json").read_text())
        assert state["pid"] == proc.pid
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not (tmp_path / "state.json").exists()
