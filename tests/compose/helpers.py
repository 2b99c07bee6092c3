"""What the compose tests share besides the `cluster` fixture (tests/compose/conftest.py): where the
master answers, the runs folder every container mounts, the master's state and tasks."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.clirun import REPO

MASTER = "http://127.0.0.1:5050"
RUNS = REPO / "compose-runs"


def master_state() -> dict:
    return httpx.get(f"{MASTER}/master/state", timeout=10).json()


def master_tasks() -> list[dict]:
    return httpx.get(f"{MASTER}/master/tasks", params={"limit": 10000}, timeout=10).json()["tasks"]


def runs_dir() -> Path:
    return RUNS / "runs"
