"""What an EC2 instance of the run does at boot (deploy/aws/user-data.sh.tmpl as plastic renders it),
run here by bash with stand-ins for the two outside commands it calls (curl for IMDS, docker):
the Redis URL, password included, goes into a root-only env file and never on a command line, and
a rediss:// URL's CA (`--redis-ca`, a file on the machine that runs `plastic cloud up`) is written
on the instance where the watcher's URL points."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import pytest

from plastic.aws.ec2_cloud import INSTANCE_CA, render_user_data
from plastic.core.model import Market
from tests.aws.helpers import three_cluster_plan
from tests.clirun import assert_one_line_error, plastic

PASSWORD = "s3cret-Pw"
PEM = b"-----BEGIN CERTIFICATE-----\nMIIBplasticTESTca\n-----END CERTIFICATE-----\n"


def boot(tmp_path: Path, market: Market, redis: str,
         agent_image: str = "plastic/agent:1") -> tuple[Path, list[list[str]]]:
    """Render the user data and run it; returns (the instance's /etc/plastic, docker's argv lists)."""
    stand_ins = tmp_path / "bin"
    stand_ins.mkdir()
    (stand_ins / "curl").write_text('#!/bin/sh\ncase "$*" in *api/token*) echo tok;; *instance-id*) echo i-0abc;;'
                                    ' *local-ipv4*) echo 10.0.0.7;; esac\n')
    calls = tmp_path / "docker-calls.jsonl"
    (stand_ins / "docker").write_text(
        "#!/usr/bin/env python3\nimport json, sys\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:] + (['<' + sys.stdin.read().strip()] "
        f"if '--password-stdin' in sys.argv else [])) + '\\n')\n")
    (stand_ins / "aws").write_text("#!/bin/sh\necho \"aws $*\" >> " + str(tmp_path / "aws-calls") + "\necho ecr-pw\n")
    for tool in stand_ins.iterdir():
        tool.chmod(0o755)
    script = tmp_path / "user-data.sh"
    script.write_text(render_user_data(run_id="r1", cluster="burst", instance_type="m5.large", market=market,
                                       master="10.0.0.1:5050", redis=redis, agent_image=agent_image))
    etc = tmp_path / "etc-plastic"
    env = {**os.environ, "PATH": f"{stand_ins}:{os.environ['PATH']}", "PLASTIC_ETC": str(etc)}
    res = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    argvs = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return etc, argvs


def test_a_spot_instance_gets_the_url_in_a_private_file_and_the_ca_where_the_url_says(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(PEM)
    url = f"rediss://plastic:{PASSWORD}@10.0.0.2:6380/0?ssl_ca_certs={ca}"
    etc, argvs = boot(tmp_path, Market.SPOT, url)
    assert (etc / "redis-ca.pem").read_bytes() == PEM
    env_file = etc / "redis.env"
    assert env_file.stat().st_mode & 0o077 == 0
    assert env_file.read_text() == (f"PLASTIC_REDIS_URL=rediss://plastic:{PASSWORD}@10.0.0.2:6380/0"
                                    f"?ssl_ca_certs={INSTANCE_CA}\n")
    agent, watch = argvs
    assert "mesos-agent" in agent and "--attributes=preemptible:true;cluster:burst;instance_type:m5.large;" \
        "market:spot;instance_id:i-0abc" in agent
    assert watch[-2:] == ["plastic", "agent-watch"] and watch[watch.index("--env-file") + 1] == str(env_file)
    assert f"{etc}:/etc/plastic:ro" in watch
    assert not any(PASSWORD in arg for argv in argvs for arg in argv)  # on no command line


def test_an_on_demand_instance_runs_no_watcher_and_keeps_no_url(tmp_path):
    etc, argvs = boot(tmp_path, Market.ON_DEMAND, f"redis://:{PASSWORD}@10.0.0.2:6379/0")
    assert len(argvs) == 1 and "mesos-agent" in argvs[0] and "--attributes=preemptible:false;" in " ".join(argvs[0])
    assert not etc.exists()


def test_a_plain_url_writes_no_ca(tmp_path):
    etc, _ = boot(tmp_path, Market.SPOT, f"redis://:{PASSWORD}@10.0.0.2:6379/0")
    assert not (etc / "redis-ca.pem").exists()
    assert (etc / "redis.env").read_text() == f"PLASTIC_REDIS_URL=redis://:{PASSWORD}@10.0.0.2:6379/0\n"


@pytest.fixture
def plan(tmp_path):
    return three_cluster_plan(tmp_path / "plan.json")


def test_cloud_up_takes_redis_ca_into_the_user_data_and_prints_no_user_data(endpoint, image_id, tmp_path, plan):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(PEM)
    res = plastic("cloud", "up", plan, "--run-id", "r7", "--image-id", image_id, "--dry-run",
                  "--redis", f"rediss://:{PASSWORD}@10.0.0.2:6380/0", "--redis-ca", ca)
    assert res.returncode == 0, res.stderr
    templates = [json.loads(line.split(" ", 1)[1]) for line in res.stdout.splitlines()
                 if line.startswith("ec2:CreateLaunchTemplate ")]
    assert len(templates) == 3
    assert all(t["LaunchTemplateData"]["UserData"].endswith("not shown>") for t in templates)
    assert PASSWORD not in res.stdout + res.stderr
    assert base64.b64encode(PEM).decode() not in res.stdout  # the user data is not printed at all


@pytest.mark.parametrize(("args", "words"), [
    (("--redis-ca", "{tmp}/ca.pem"), ("--redis-ca", "rediss://")),  # the default redis:// URL
    (("--redis", "rediss://10.0.0.2:6380/0", "--redis-ca", "{tmp}/missing.pem"), ("--redis-ca", "missing.pem")),
])
@pytest.mark.slow
def test_cloud_up_with_a_bad_redis_ca_is_one_line(endpoint, image_id, tmp_path, plan, args, words):
    (tmp_path / "ca.pem").write_bytes(PEM)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert_one_line_error(plastic("cloud", "up", plan, "--run-id", "r8", "--image-id", image_id, *argv), *words)


def test_an_agent_image_in_ecr_is_pulled_after_a_login_with_the_instance_role(tmp_path):
    image = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/plastic/agent:latest"
    _, argvs = boot(tmp_path, Market.ON_DEMAND, "redis://10.0.0.2:6379/0", agent_image=image)
    login, agent = argvs
    # the password from `aws ecr get-login-password` went through the pipe, not the command line
    assert login == ["login", "--username", "AWS", "--password-stdin", image.split("/")[0], "<ecr-pw"]
    assert (tmp_path / "aws-calls").read_text() == "aws ecr get-login-password --region eu-west-1\n"
    assert image in agent
