"""A run directory whose disk fills up while tasks run: the run stops cleanly with one clear line
(exit 75), stays RUNNING in Redis, and `plastic run --resume` finishes it once there is space again.

The run directory is on a small tmpfs the test mounts (root only; skipped elsewhere).  Two ways to
fill it: down to 10 MiB free (below plastic's 32 MiB floor: plastic stops the run before any write
fails), and to the last byte (writes fail in Toil and in the embedded Redis first).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from plastic.procs import pid_alive
from tests.clirun import REPO, read_decisions

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

DATA = REPO / "tests" / "watch" / "data" / "slow-scatter"
MIB = 1024 * 1024


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and tmpfs mounts (a small file system to fill)")
    try:
        yield mount
    finally:
        for _ in range(20):  # processes of the run may still hold files there for a moment
            if subprocess.run(["umount", str(mount)], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        else:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(mount: Path, leave_bytes: int) -> Path:
    """Write a filler file until ``leave_bytes`` are free; with 0, until a write fails (ENOSPC).

    Unbuffered, so that the write that fails is the one inside the try: a buffered file kept the
    tail of a short write and raised ENOSPC at close, outside it, when the run's own writes had
    taken some of the space counted as free (seen once under coverage).
    """
    filler = mount / "filler"
    free = shutil.disk_usage(mount).free
    block = b"\0" * MIB
    with open(filler, "wb", buffering=0) as fh:
        remaining = max(free - leave_bytes, 0) if leave_bytes else None
        try:
            while remaining is None or remaining > 0:
                written = fh.write(block if remaining is None else block[:min(MIB, remaining)])
                if remaining is not None:
                    remaining -= written
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise  # full is what the second case wants; anything else is not
    return filler


@pytest.mark.parametrize("leave_mib", [10, 0], ids=["below_the_floor", "to_the_last_byte"])
def test_disk_full_stops_the_run_and_resume_finishes_it(small_disk, tmp_path, leave_mib):
    job = tmp_path / "job.yml"
    job.write_text("items: [1, 2, 3]\nseconds: 8\n")
    run_dir, out = small_disk / "run", tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("PLASTIC_REDIS_URL", "PLASTIC_MIN_FREE_MIB")}
    cmd = [sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(job), "--outdir", str(out),
           "--run-dir", str(run_dir), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while not any(d["kind"] == "running" for d in read_decisions(run_dir)):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no running task within 90 s"
        time.sleep(0.2)
    filler = _fill(small_disk, leave_mib * MIB)
    try:
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 75, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert "no space left for the run" in last and f"plastic run --resume {run_dir}" in last, last
    assert "Traceback" not in stderr, stderr[-3000:]
    saved = json.loads((run_dir / "run.json").read_text())
    cluster_pid = int(json.loads((run_dir / "cluster.json").read_text())["pid"])

    filler.unlink()  # space again
    res = subprocess.run([sys.executable, "-m", "plastic", "run", "--resume", str(run_dir), "--quiet"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=240, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (out / "joined.txt").read_text() == "item 1\nitem 2\nitem 3\n"
    from plastic.store import Store, start_embedded

    server = start_embedded(run_dir / "redis")
    try:
        client = server.client()
        store = Store(client)
        assert str(store.get_run(saved["run_id"]).state).endswith("SUCCEEDED")
        finished = Counter(t.spec.get("job_store_id") for t in store.get_tasks(saved["run_id"])
                           if str(t.state).endswith("FINISHED"))
        assert len(finished) == 4 and all(n == 1 for n in finished.values()), finished
        client.close()
    finally:
        server.stop()
    deadline = time.monotonic() + 10
    while pid_alive(cluster_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(cluster_pid), "the local cluster outlived the resumed run"


def test_no_space_to_start_is_one_line_and_makes_nothing(small_disk, tmp_path):
    job = tmp_path / "job.yml"
    job.write_text("items: [1]\nseconds: 1\n")
    filler = _fill(small_disk, 10 * MIB)
    res = subprocess.run([sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(job),
                          "--run-dir", str(small_disk / "run"), "--quiet"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, check=False,
                         env={k: v for k, v in os.environ.items() if k != "PLASTIC_MIN_FREE_MIB"})
    filler.unlink()
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 75 and len(lines) == 1, res.stderr
    assert "no space for a run" in lines[0] and str(small_disk / "run") in lines[0], lines[0]
    assert not (small_disk / "run").exists()
