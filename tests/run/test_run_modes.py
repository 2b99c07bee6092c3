"""Who can read what a run leaves: a real `plastic run` of the scatter-gather example (embedded Redis,
Toil's job store kept with --clean never), started under umask 022.  The plan's cluster is static, so its
spot agent and the watcher's directory are there whatever the timing (an elastic cluster adds the spot
node only when work waits for it, which the core node sometimes takes first).  Nothing in the run directory is
open to the group or others (directories 0700, files 0600, the Redis socket's directory 0700); the
workflow's outputs get the modes umask 022 gives (the outdir plastic makes 0755, the file 0644)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.helpers import SG, SG_TWO_PARTS

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e


def modes(root: Path) -> dict[str, int]:
    """Mode of everything under ``root`` by relative path (symbolic links, always 0777, left out)."""
    found = {".": stat.S_IMODE(root.lstat().st_mode)}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(base) / name
            if not path.is_symlink():
                found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def test_a_runs_files_are_private_and_its_outputs_are_not(tmp_path):
    run_dir, out = tmp_path / "runs" / "r1", tmp_path / "results" / "out"
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    seen_socket_dir: list[int] = []
    proc = subprocess.Popen([sys.executable, "-m", "plastic", "run", str(SG / "scatter-gather.cwl"),
                             str(SG_TWO_PARTS), "--run-dir", str(run_dir), "--outdir", str(out), "--quiet",
                             "--static", "--", "--clean", "never"], cwd=tmp_path, env=env, umask=0o022,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    while proc.poll() is None:  # the embedded server's socket, while it is there
        if not seen_socket_dir and (run_dir / "redis" / "redis.sock").exists():
            seen_socket_dir.append(stat.S_IMODE((run_dir / "redis").stat().st_mode))
        try:
            proc.wait(0.2)
        except subprocess.TimeoutExpired:
            pass
    stdout, stderr = proc.communicate()
    assert proc.returncode == 0, stderr.decode()[-3000:]
    assert seen_socket_dir == [0o700]
    found = modes(run_dir)
    for name in ("redis", "redis/redis.aof", "watch", "workflow", "jobstore", "toil.log", "decisions.jsonl",
                 "run.json", "outputs.json", "report.json"):
        assert name in found, (name, sorted(found)[:40])
    assert (run_dir / "jobstore").is_dir() and len([n for n in found if n.startswith("jobstore/")]) > 5
    # Toil makes its job directories 0711 on purpose (toil.lib.io.mkdtemp: traversable, for Docker on NFS);
    # inside the 0700 job store they stay out of reach, and their files are 0600 like every other
    traverse_only = {name for name, mode in found.items() if name.startswith("jobstore/jobs/") and mode == 0o711
                     and (run_dir / name).is_dir()}
    opened = {name: oct(mode) for name, mode in found.items() if mode & 0o077 and name not in traverse_only}
    assert not opened, opened  # nothing for the group or others, Toil's and redis-server's files included
    assert found["."] == found["redis"] == found["jobstore"] == 0o700
    sorted_txt = Path(json.loads(stdout)["sorted"]["path"])
    assert sorted_txt.parent == out
    assert stat.S_IMODE(sorted_txt.stat().st_mode) == 0o644
    assert stat.S_IMODE(out.stat().st_mode) == stat.S_IMODE(out.parent.stat().st_mode) == 0o755
