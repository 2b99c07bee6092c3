"""SIGINT cancels `plastic run` even when it was started the way a shell starts a background job
(`plastic run ... &` in a script): with SIGINT ignored, which every child would inherit.

The run is cancelled (exit 130, the run's report says cancelled), the local cluster and the Toil
leader are gone, and no process of the run is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plastic.procs import pid_alive
from tests.clirun import REPO, read_decisions

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

DATA = REPO / "tests" / "watch" / "data" / "slow-scatter"


def _ignore_sigint() -> None:  # what `sh -c 'plastic run ... &'` does to the job it starts
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def test_sigint_cancels_a_run_started_with_sigint_ignored(tmp_path):
    job = tmp_path / "job.yml"
    job.write_text("items: [1, 2, 3]\nseconds: 60\n")
    run_dir, out = tmp_path / "run", tmp_path / "out"
    env = dict(os.environ)
    env.pop("PLASTIC_REDIS_URL", None)
    cmd = [sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(job), "--outdir", str(out),
           "--run-dir", str(run_dir), "--quiet"]
    with open(tmp_path / "run.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=log, preexec_fn=_ignore_sigint)  # noqa: PLW1509
    try:
        deadline = time.monotonic() + 90
        while not any(d["kind"] == "running" for d in read_decisions(run_dir)):
            assert proc.poll() is None, f"plastic run ended ({proc.returncode}) before a task ran"
            assert time.monotonic() < deadline, "no task running within 90 s"
            time.sleep(0.2)
        cluster_pid = int(json.loads((run_dir / "cluster.json").read_text())["pid"])
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(60)
        except subprocess.TimeoutExpired:
            pytest.fail("plastic run did not end within 60 s of SIGINT (still ignoring it?)")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    log_text = (tmp_path / "run.log").read_text(errors="replace")
    assert rc == 130, log_text[-3000:]
    assert "Traceback" not in log_text, log_text[-3000:]
    last = [line for line in log_text.splitlines() if line.strip()][-1]
    assert last.endswith(f"cancelled; its files are in {run_dir}") and "last error" not in last, last
    report = json.loads((run_dir / "report.json").read_text())
    assert report["outcome"] == "cancelled"
    deadline = time.monotonic() + 10
    while (pid_alive(cluster_pid) or _processes_mentioning(str(run_dir))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(cluster_pid), "the local cluster outlived the cancelled run"
    assert not _processes_mentioning(str(run_dir)), "a process of the run is left behind"
