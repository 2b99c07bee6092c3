"""What the compose tests share besides the `cluster` fixture (tests/compose/conftest.py): where the
master answers, the runs folder every container mounts, the master's state and tasks, submitting a
run to the manager and waiting for it, its decisions log, the slow square-sum job."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.clirun import REPO

MASTER = "http://127.0.0.1:5050"
RUNS = REPO / "compose-runs"
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def master_state() -> dict:
    return httpx.get(f"{MASTER}/master/state", timeout=10).json()


def master_tasks() -> list[dict]:
    return httpx.get(f"{MASTER}/master/tasks", params={"limit": 10000}, timeout=10).json()["tasks"]


def runs_dir() -> Path:
    return RUNS / "runs"


def submit(cluster, workflow: str, job: str, outdir: str, *toil: str) -> str:
    res = cluster.plastic("submit", workflow, job, "--outdir", outdir, *toil)
    return res.stdout.strip().splitlines()[-1]


def status(cluster, run_id: str) -> dict:
    return json.loads(cluster.plastic("status", run_id, "--format", "json").stdout)


def wait_run(cluster, run_id: str, timeout: float = 900) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        try:
            st = status(cluster, run_id)
        except AssertionError:  # the manager is restarting
            st = {"state": "?"}
        if st["state"] in FINAL:
            return st
        assert time.monotonic() < deadline, f"run {run_id} still {st} after {timeout} s"
        time.sleep(2)


def decisions(run_id: str) -> list[dict]:
    path = RUNS / "runs" / run_id / "decisions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def long_job(tmp: Path, seconds: int, items: int) -> str:
    """The chaos tests' square-sum workflow with sleeping tasks, copied where the manager sees it."""
    src = REPO / "tests" / "chaos" / "data" / "square-sum"
    dst = RUNS / "square-sum"
    dst.mkdir(exist_ok=True)
    for f in src.iterdir():
        if f.suffix in (".cwl", ".yml", ".yaml"):
            (dst / f.name).write_text(f.read_text())
    (dst / "job.yml").write_text("items: [" + ", ".join(str(i) for i in range(1, items + 1)) + f"]\nseconds: {seconds}\n")
    return "/plastic-runs/square-sum"


def running_tasks(state: dict | None = None) -> dict[str, set[str]]:
    """The master's TASK_RUNNING task ids by agent id (``state``: /master/state, read now if not given)."""
    out: dict[str, set[str]] = {}
    for fw in (state or master_state())["frameworks"]:
        for t in fw["tasks"]:
            if t["state"] == "TASK_RUNNING":
                out.setdefault(t["slave_id"], set()).add(t["id"])
    return out


def busy_spot_agent(exclude: set[str] = frozenset()) -> dict | None:
    state = master_state()
    running = running_tasks(state)
    spot = [a for a in state["slaves"] if str(a["attributes"].get("preemptible")) == "true"
            and running.get(a["id"]) and a["attributes"]["cluster"] not in exclude]
    return max(spot, key=lambda a: len(running[a["id"]])) if spot else None


def square_sum_output(item_count: int) -> str:
    return "".join(f"{i} {i * i * 7919 % 10007}\n" for i in range(1, item_count + 1))


def work_done_once(run_id: str, out: str, items: int) -> list[dict]:
    """Every job of the run finished exactly once, and the merged output is the items' in order."""
    log = decisions(run_id)
    finished = [d["job_id"] for d in log if d["kind"] == "ended" and d.get("outcome") == "finished"]
    assert finished and len(finished) == len(set(finished)), finished
    assert (RUNS / out / "merged.txt").read_text() == square_sum_output(items)
    return log
